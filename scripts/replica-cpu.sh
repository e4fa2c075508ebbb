#!/usr/bin/env bash
# The CPU budget of one request, whole machine: redis-benchmark (unmodified)
# against one redis-server with appendfsync always, one without persistence,
# and gait replica (3 voters) with --durability disk and replicated, started
# as scripts/replica-goals.sh starts them. Around each run it reads utime +
# stime of every process involved from /proc/PID/stat (redis-benchmark's from
# its rusage) and the machine's busy time from /proc/stat, and prints CPU-µs
# per request for each kind of process, and the ceiling the machine's cores
# put on the request rate at that cost.
#
#   scripts/replica-cpu.sh [-n REQUESTS] [-c CLIENTS] [-t TEST] [-r ROUNDS] [-b GAIT] [-o PEERS] [-- extra 'gait replica cluster' flags]
#
# -b GAIT also runs deployments of that gait binary (the tree before a
# change) as peers disk0 and replicated0, alternating with the others.
# -o PEERS measures only those peers (say "replicated0 replicated"), in
# that order each round.
#
# Kinds: bench (redis-benchmark), leader and followers (the agents; for a
# plain redis-server, leader is the server), redis (the leader agent's
# redis-server), redis-f (the followers'), cluster (the 'gait replica
# cluster' parent), idle (every other peer's processes, which sit idle
# beside the one measured), ours (the sum of all these but idle), machine
# (all CPUs' busy time from /proc/stat: what 'ours' leaves out is kernel
# threads such as ksoftirqd and any other work on the machine) and softirq
# (the part of machine spent in soft interrupts, wherever it was charged).
set -euo pipefail

requests=20000 clients=8 test=set rounds=2 before= only=
while [[ $# -gt 0 ]]; do
	case "$1" in
	-n) requests=$2; shift 2 ;;
	-c) clients=$2; shift 2 ;;
	-t) test=$2; shift 2 ;;
	-r) rounds=$2; shift 2 ;;
	-b) before=$(realpath "$2"); [[ -x "$before" ]] || { echo "replica-cpu: -b $2: not an executable" >&2; exit 2; }; shift 2 ;;
	-o) only=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "replica-cpu: unknown argument $1" >&2; exit 2 ;;
	esac
done
source "$(dirname "$0")/lib/scratch.sh"
source "$(dirname "$0")/lib/deploy.sh"
need replica-cpu redis-server redis-benchmark redis-cli curl go
scratch

start_peers "$before" "$@"
measured=("${peers[@]}")
if [[ -n "$only" ]]; then
	read -ra measured <<<"$only"
	for p in "${measured[@]}"; do [[ -v "peerpid[$p]" ]] || { echo "replica-cpu: -o: no peer $p" >&2; exit 2; }; done
fi
cores=$(nproc)
hz=$(getconf CLK_TCK)

# tree PID: PID and its descendants.
tree() {
	echo "$1"
	local c
	for c in $(ps -o pid= --ppid "$1"); do tree "$c"; done
}
# arg FLAG PID: the value after FLAG on PID's command line.
arg() { tr '\0' '\n' <"/proc/$2/cmdline" 2>/dev/null | awk -v f="$1" 'p { print; exit } $0 == f { p = 1 }'; }
# kinds PEER: "pid kind" for every process serving PEER, the leader agent
# being the one whose --listen is target[PEER].
kinds() {
	local p=$1 pid leaderredis=
	if [[ $p == aof || $p == plain || $p == plainlink ]]; then
		echo "${peerpid[$p]} leader"
		return
	fi
	for pid in $(tree "${peerpid[$p]}"); do
		[[ $(arg replica "$pid") == agent ]] || continue
		[[ $(arg --listen "$pid") == "${target[$p]:-}" ]] && leaderredis=$(arg --redis "$pid")
	done
	for pid in $(tree "${peerpid[$p]}"); do
		local cmd
		cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || continue # gone meanwhile
		if [[ $pid == "${peerpid[$p]}" ]]; then echo "$pid cluster"
		elif [[ $(arg replica "$pid") == agent ]]; then
			if [[ $(arg --listen "$pid") == "${target[$p]:-}" ]]; then echo "$pid leader"; else echo "$pid followers"; fi
		elif [[ $cmd == *redis-server* ]]; then
			if [[ $cmd == *"$leaderredis"* && -n $leaderredis ]]; then echo "$pid redis"; else echo "$pid redis-f"; fi
		else echo "$pid cluster"
		fi
	done
}
# ticks: "pid ticks kind" of every process on the machine, kind being the
# one $work/procs gives, else kthread:NAME for kernel threads (children of
# kthreadd, pid 2: ksoftirqd running soft interrupts, kworker and jbd2 writing
# the log's pages and journal) or other; and "machine" and "softirq" from
# /proc/stat. One cat reads them all, so a snapshot costs little of its own;
# before reads /proc/stat last, after first, so the machine's window is no
# wider than the processes'.
ticks() {
	{
		if [[ $1 == after ]]; then cat /proc/stat; fi
		# A process may end between the glob and its read: cat goes on.
		cat /proc/[0-9]*/stat 2>/dev/null || true
		if [[ $1 == before ]]; then cat /proc/stat; fi
	} | awk '
		NR == FNR { kind[$1] = $2; next }
		$1 == "cpu" { print "machine", $2 + $3 + $4 + $7 + $8, "machine"; print "softirq", $8, "softirq"; next }
		$1 !~ /^[0-9]+$/ { next }
		# After the command'"'"'s closing parenthesis: the parent is the 2nd field, utime the 12th, stime the 13th.
		{ pid = $1; name = $0; sub(/\).*/, "", name); sub(/^[^(]*\(/, "", name); sub(/[\/:].*/, "", name); sub(/[0-9]+$/, "", name)
			sub(/.*\) /, ""); k = pid in kind ? kind[pid] : ($2 == 2 || pid == 2) ? "kthread:" name : "other"
			print pid, $12 + $13, k }' "$work/procs" -
}

for round in $(seq "$rounds"); do
	for peer in "${measured[@]}"; do
		aim "$peer"
		: >"$work/procs"
		for other in "${peers[@]}"; do
			if [[ $other == "$peer" ]]; then kinds "$peer"; else kinds "$other" | awk '{ print $1, "idle" }'; fi >>"$work/procs"
		done
		hp=${target[$peer]}
		start=$(date +%s.%N)
		ticks before >"$work/before"
		# bash's time gives redis-benchmark's own rusage (user, system seconds).
		TIMEFORMAT='%U %S'
		{ time redis-benchmark -h "${hp%:*}" -p "${hp##*:}" -t "$test" -n "$requests" -c "$clients" -r 100000 --csv >"$work/bench.csv"; } 2>"$work/bench.time"
		ticks after >"$work/after"
		end=$(date +%s.%N)
		rps=$(awk -F, 'NR == 2 { gsub(/"/, ""); print $2 }' "$work/bench.csv")
		# One line: PEER ROUND req/s, then kind=µs per request; busy is the
		# cores the machine kept busy over the window (wall), kthreads the
		# kernel threads' share, other what the rest of the machine spent.
		awk -v peer="$peer" -v round="$round" -v rps="$rps" -v n="$requests" -v hz="$hz" -v wall="$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" -v bt="$(cat "$work/bench.time")" '
			FILENAME ~ /before$/ { b[$1] = $2; next }
			$1 in b { d = ($2 - b[$1]) * 1e6 / hz / n; k = $3
			  if (k ~ /^kthread:/) { kt[k] += d; k = "kthreads" }
			  us[k] += d; if (k != "idle" && k != "kthreads" && k != "other" && k != "machine" && k != "softirq") us["ours"] += d }
			END {
				split(bt, t, " "); us["bench"] = (t[1] + t[2]) * 1e6 / n; us["ours"] += us["bench"]
				printf "%s %s %s busy=%.2f", peer, round, rps, us["machine"] * n / 1e6 / wall
				split("bench leader followers redis redis-f cluster ours idle kthreads other machine softirq", names, " ")
				for (i = 1; i <= 12; i++) printf " %s=%.1f", names[i], us[names[i]]
				for (x in kt) if (kt[x] >= 1) printf " %s=%.1f", x, kt[x]
				print ""
			}' "$work/before" "$work/after"
	done
done | tee "$work/all.txt"

awk '{ n[$1]++ } END { for (p in n) if (n[p] > 1) printf "replica-cpu: %s changed leaders %d times during the run\n", p, n[p] - 1 }' "$work/leaders.txt" >&2

# The table: per peer the median over rounds of each figure (CPU-µs per
# request; busy in cores). The ceilings are the cores' time over what one
# request costs the processes serving it (ours), and that plus the kernel
# threads (whose work is partly the request's: soft interrupts run by
# ksoftirqd, the journal's writes); "of ceiling" is the measured rate over
# the second.
echo
echo "| peer | req/s | bench | leader | followers | redis | redis-f | ours | kthreads | other | idle peers | machine | softirq | busy | ceiling, ours | ceiling, +kthreads | of ceiling |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for peer in "${measured[@]}"; do
	awk -v peer="$peer" -v cores="$cores" '
		function med(k,   i, j, t, a) { for (i = 1; i <= r; i++) a[i] = v[k, i] + 0
			for (i = 1; i <= r; i++) for (j = i + 1; j <= r; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
			return a[int((r + 1) / 2)] }
		$1 == peer { r++; v["rps", r] = $3; v["all", r] = 0; for (i = 4; i <= NF; i++) { split($i, kv, "="); v[kv[1], r] = kv[2] }
			v["all", r] = v["ours", r] + v["kthreads", r] }
		END {
			rps = med("rps"); c1 = cores * 1e6 / med("ours"); c2 = cores * 1e6 / med("all")
			printf "| %s | %.0f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f | %.0f | %.0f | %.2f |\n", peer, rps,
				med("bench"), med("leader"), med("followers"), med("redis"), med("redis-f"), med("ours"), med("kthreads"),
				med("other"), med("idle"), med("machine"), med("softirq"), med("busy"), c1, c2, rps / c2
		}' "$work/all.txt"
done
