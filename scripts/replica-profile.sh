#!/usr/bin/env bash
# replica-profile.sh: where a replicated SET's CPU goes. Starts a loopback
# deployment ('gait replica cluster --voters 3 --loopback --metrics', all
# three agents in one process), warms it with 3 s of 'gait load --mix set:100'
# at the leader, then runs the load again for 12 s while it takes a 10-s CPU
# profile of the agents' process (its /debug/pprof/profile) and counts, from
# /proc, the CPU of that process and its redis-servers and their read and
# write system calls. Prints:
#   the load's line (SET/s, latency), the server side's CPU-µs per SET, the
#   system calls per SET (agents, redis-servers), the writes per raft log
#   append and per apply batch of each agent, the leader's mean time per
#   write stage (propose, raft_commit, apply_queue, server, reply); with perf(1) allowed to count
#   tracepoints, the agents' process's system calls by kind and its context
#   switches, per SET and per the leader's apply batch (one raft group);
#   and the profile's CPU-µs per
#   SET by the goroutine each sample ran in (its root: a client's reader, its
#   reply writer, the applier, raft's loops, ...); cpu.pprof is kept in OUT.
#
#   scripts/replica-profile.sh [-c CLIENTS] [-o OUT] [-- extra 'gait replica cluster' flags]
#   env: GAIT (default: built from this tree)
set -euo pipefail

clients=8 out=
while [[ $# -gt 0 ]]; do
	case "$1" in
	-c) clients=$2; shift 2 ;;
	-o) out=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "replica-profile: unknown argument $1" >&2; exit 2 ;;
	esac
done
[[ $# -gt 0 ]] || set -- --loopback --durability replicated
source "$(dirname "$0")/lib/scratch.sh"
source "$(dirname "$0")/lib/deploy.sh"
need replica-profile curl go python3
scratch
out=${out:-$work/out}
mkdir -p "$out"

gait g "$work/gait" "$@"
aim g
sleep 1
"$work/gait" load --addr "${target[g]}" --mix set:100 --clients "$clients" --duration 3s --out "$work/warm" >/dev/null 2>&1
urls=($metrics_g)
leader=${urls[0]}
for i in "${!urls[@]}"; do
	[[ $(echo $clients_g | cut -d' ' -f$((i + 1))) == "${target[g]}" ]] && leader=${urls[$i]}
done
servers=$(pgrep -P "$pid_g" -x redis-server | tr '\n' ' ')
# cpu PID... -> user + system clock ticks; io PID... -> read and write system calls.
cpu() { local t=0 p f; for p in "$@"; do f=($(sed 's/.*) //' "/proc/$p/stat")); t=$((t + f[11] + f[12])); done; echo $t; }
io() { awk '/^syscr/ { r += $2 } /^syscw/ { w += $2 } END { print r + 0, w + 0 }' $(printf '/proc/%s/io ' "$@"); }
scrape() { local u i=0; for u in "${urls[@]}"; do curl -s "$u" >"$work/$1.$i"; i=$((i + 1)); done; }

scrape m0
c0=$(cpu "$pid_g" $servers) a0=($(io "$pid_g")) s0=($(io $servers))
curl -s "${leader%/metrics}/debug/pprof/profile?seconds=10" >"$out/cpu.pprof" &
prof=$!
counted=
kinds=write,read,recvmsg,epoll_pwait,futex,pwrite64,nanosleep,fdatasync
events=raw_syscalls:sys_enter,context-switches$(printf ',syscalls:sys_enter_%s' ${kinds//,/ })
if command -v perf >/dev/null && perf stat -e "$events" -o /dev/null true 2>/dev/null; then
	perf stat -x, -e "$events" -p "$pid_g" -o "$work/perf" sleep 10 &
	counted=$!
fi
line=$("$work/gait" load --addr "${target[g]}" --mix set:100 --clients "$clients" --duration 12s --out "$work/run" 2>&1 | tail -1)
c1=$(cpu "$pid_g" $servers) a1=($(io "$pid_g")) s1=($(io $servers))
scrape m1
wait "$prof"
n=$(echo "$line" | sed -n 's/.*: \([0-9]*\) requests in .*/\1/p')
[[ -n $n && $n -gt 0 ]] || { echo "replica-profile: the load did not run: $line" >&2; exit 1; }
echo "$line"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
awk -v t=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" -v n="$n" 'BEGIN { printf "server side: %.1f CPU-µs per SET\n", t * 1e6 / hz / n }'
awk -v ar=$((a1[0] - a0[0])) -v aw=$((a1[1] - a0[1])) -v sr=$((s1[0] - s0[0])) -v sw=$((s1[1] - s0[1])) -v n="$n" \
	'BEGIN { printf "system calls per SET: agents %.2f reads, %.2f writes; redis-servers %.2f reads, %.2f writes\n", ar / n, aw / n, sr / n, sw / n }'
for i in "${!urls[@]}"; do
	for h in log_append_entries apply_entries; do
		awk -v h="gait_replica_${h}_" -v agent="$i" -v what="$h" '
			FNR == 1 { f++ }
			$1 == h "sum" { s[f] = $2 } $1 == h "count" { c[f] = $2 }
			END { if (c[2] > c[1]) printf "agent %d: %s %.2f writes each (%d)\n", agent, what, (s[2] - s[1]) / (c[2] - c[1]), c[2] - c[1] }' \
			"$work/m0.$i" "$work/m1.$i"
	done
done
li=0
for i in "${!urls[@]}"; do [[ ${urls[$i]} == "$leader" ]] && li=$i; done
# The leader's clock, stage by stage (gait_replica_write_stage_seconds): propose
# (the gate and raft's loop taking the write), raft_commit, apply_queue, server,
# reply; commit is propose + raft_commit.
awk '$1 ~ /^gait_replica_write_stage_seconds_(sum|count)\{/ {
		split($1, p, "\""); k = p[2]; v = ($1 ~ /_sum/) ? "s" : "c"
		d[k, v] += (FILENAME == ARGV[2] ? $2 : -$2); if (!(k in seen)) { seen[k] = 1; order[++n] = k } }
	END { for (i = 1; i <= n; i++) { k = order[i]; if (d[k, "c"] > 0) printf "leader: write stage %-12s %7.1f µs mean (%d writes)\n", k, d[k, "s"] * 1e6 / d[k, "c"], d[k, "c"] } }' \
	"$work/m0.$li" "$work/m1.$li"
if [[ -n $counted ]]; then
	wait "$counted"
	batches=$(awk '$1 == "gait_replica_apply_entries_count" { c[FILENAME] = $2 } END { print c[ARGV[2]] - c[ARGV[1]] }' "$work/m0.$li" "$work/m1.$li")
	# perf counts 10 s of the 12-s run, as the profile: n * 10 / 12 SETs, batches * 10 / 12 batches.
	awk -F, -v n="$((n * 10 / 12))" -v b="$((batches * 10 / 12))" '$1 ~ /^[0-9]+$/ {
		name = $3; sub(/^syscalls:sys_enter_/, "", name); sub(/^raw_syscalls:sys_enter$/, "system calls, all", name)
		printf "agents: %-22s %6.2f per SET %6.1f per apply batch of the leader\n", name, $1 / n, (b > 0 ? $1 / b : 0) }' "$work/perf"
fi
# The profile covers 10 s of the 12-s run: its SETs are n * 10 / 12.
go tool pprof -traces "$work/gait" "$out/cpu.pprof" 2>/dev/null | python3 -c '
import re, sys, collections
sets = float(sys.argv[1])
# A sample goes to the first root whose function names its stack (outermost last).
roots = [("writeReplies", "a client: its reply writer (waits, writes the reply)"),
	("serveConn", "a client: its reader (read, decode, propose)"),
	("runApplier", "appliers: the local redis-server, digests, replies"),
	("servePeer", "replies between agents: received"),
	("peer).run", "replies between agents: sent"),
	("replicate", "raft: sending AppendEntries"),
	("handleConn", "raft: followers receiving AppendEntries"),
	("runFSM", "raft: handing entries to the appliers"),
	("Raft).run", "raft: the loops (log appends, commits)"),
	("syncLog", "the background fdatasync (replicated)"),
	("gcBgMarkWorker", "Go: garbage collection"), ("bgsweep", "Go: garbage collection"), ("bgscavenge", "Go: garbage collection"),
	("mcall", "Go: the scheduler"), ("schedule", "Go: the scheduler"), ("sysmon", "Go: the scheduler")]
cpu = collections.Counter()
for block in re.split(r"-+\+-+\n", sys.stdin.read()):
	lines = [l.strip() for l in block.strip().splitlines() if l.strip()]
	m = re.match(r"([\d.]+)(ms|s)\s+(.*)", lines[0]) if lines else None
	if not m:
		continue
	stack = " ".join([m.group(3)] + lines[1:])
	name = next((n for k, n in roots if k in stack), "other")
	cpu[name] += float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)
total = sum(cpu.values())
for name, s in cpu.most_common():
	print("%-58s %5.1f CPU-µs per SET" % (name, s * 1e6 / sets))
print("%-58s %5.1f CPU-µs per SET" % ("the agents (their process), profiled", total * 1e6 / sets))
' "$((n * 10 / 12))"
