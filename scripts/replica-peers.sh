#!/usr/bin/env bash
# gait replica's SET against the peers that do the same job on the same
# machine, as a new user would measure it (gait load, closed loop):
#
#   wait1       Redis's own replication: one primary and two replicas
#               (replicaof, no persistence), every write followed by WAIT 1
#               (gait load --wait-replicas 1), against
#   replicated  gait replica cluster --voters 3 --durability replicated;
#   aof         one redis-server with appendonly yes, appendfsync always,
#               against
#   disk        gait replica cluster --voters 3 --durability disk.
#
# Every client talks to the primary or to the deployment's leader. The peers
# alternate, ROUNDS times (A B, then B A). Prints one line per run and then
# the medians and the two ratios (replicated/wait1, disk/aof), with the load
# average before and after, and per peer the CPU its server side spent per
# SET (user + system time of its processes: the redis-servers, or the
# 'gait replica cluster' process and its redis-servers; not the client's),
# which on a machine of few cores bounds the rate: cores / CPU per SET; and
# the load generator's own CPU per SET and the share of all cores busy
# (anything's, from /proc/stat) while each run lasted: near 100 % the
# rate is bound by the CPU. -b GAIT also runs deployments of that binary
# (built from the tree before a change) as replicated0 and disk0, beside
# the others, and prints their ratios to this tree's.
#
#   scripts/replica-peers.sh [-r ROUNDS] [-c CLIENTS] [-d DURATION] [-b GAIT] [-- extra 'gait replica cluster' flags]
#
# Without extra flags the deployments run on loopback in one process each
# (--loopback); GAIT names a gait binary built before (default: built here).
# Hold /tmp/gait-bench.lock around it for figures worth comparing.
set -euo pipefail

rounds=2 clients=8 duration=8s before=
while [[ $# -gt 0 ]]; do
	case "$1" in
	-b) before=$(realpath "$2"); [[ -x "$before" ]] || { echo "replica-peers: -b $2: not an executable" >&2; exit 2; }; shift 2 ;;
	-r) rounds=$2; shift 2 ;;
	-c) clients=$2; shift 2 ;;
	-d) duration=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "replica-peers: unknown argument $1" >&2; exit 2 ;;
	esac
done
[[ $# -gt 0 ]] || set -- --loopback
source "$(dirname "$0")/lib/scratch.sh"
source "$(dirname "$0")/lib/deploy.sh"
need replica-peers redis-server redis-cli curl go
scratch

base=$(( 20000 + RANDOM % 20000 ))
redis "$base"
redis "$((base + 1))" --replicaof 127.0.0.1 "$base"
redis "$((base + 2))" --replicaof 127.0.0.1 "$base"
redis "$((base + 3))" --appendonly yes --appendfsync always
for _ in $(seq 100); do
	[[ $(redis-cli -p "$base" info replication | tr -d '\r' | sed -n 's/^connected_slaves://p') == 2 ]] && break
	sleep 0.1
done
gait disk "$work/gait" --durability disk "$@"
gait replicated "$work/gait" --durability replicated "$@"
peers=(wait1 replicated aof disk)
if [[ -n "$before" ]]; then
	gait disk0 "$before" --durability disk "$@"
	gait replicated0 "$before" --durability replicated "$@"
	peers=(wait1 replicated0 replicated aof disk0 disk)
fi
target+=([wait1]="127.0.0.1:$base" [aof]="127.0.0.1:$((base + 3))")
declare -A extra=([wait1]="--wait-replicas 1")

declare -A servers=([wait1]="$(eval echo "\$pid_$base \$pid_$((base + 1)) \$pid_$((base + 2))")" [aof]=$(eval echo "\$pid_$((base + 3))"))
for d in disk replicated disk0 replicated0; do
	[[ -v "pid_$d" ]] && servers[$d]=$(eval echo "\$pid_$d")
done
# ticks PID... -> user + system clock ticks of the processes and their children.
ticks() {
	local p t=0 f
	for p in "$@" $(for p in "$@"; do pgrep -P "$p"; done); do
		f=($(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null)) || continue
		t=$((t + f[11] + f[12]))
	done
	echo "$t"
}
hz=$(getconf CLK_TCK)

# busy -> "busy total" clock ticks of the whole machine (/proc/stat: all
# but idle and iowait).
busy() { awk '$1 == "cpu" { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t }' /proc/stat; }

# run PEER -> "PEER SET/s p50 p99 errors CPU-µs/SET generator-CPU-µs/SET
# busy%": the server side's CPU per SET, the load generator's own, and the
# share of all cores busy during the run (anything's).
run() {
	[[ $1 == disk* || $1 == replicated* ]] && aim "$1"
	local out before m0 m1 gen
	before=$(ticks ${servers[$1]})
	m0=($(busy))
	out=$( { TIMEFORMAT='%3U %3S'; time "$work/gait" load --addr "${target[$1]}" --mix set:100 --clients "$clients" --duration "$duration" \
		${extra[$1]:-} --out "$work/run-$1-$RANDOM" >"$work/load.out" 2>&1; } 2>&1)
	m1=($(busy))
	gen=$(echo "$out" | awk '{ print $1 + $2 }')
	tail -1 "$work/load.out" | sed -n 's/.*: \([0-9]*\) requests in .*(\([0-9]*\)\/s), mean [0-9.]*ms p50 \([0-9.]*\)ms p99 \([0-9.]*\)ms.*, \([0-9]*\) errors.*/'"$1"' \2 \3 \4 \5 \1/p' |
		awk -v t="$(( $(ticks ${servers[$1]}) - before ))" -v hz="$hz" -v g="$gen" -v b="$(( m1[0] - m0[0] ))" -v tt="$(( m1[1] - m0[1] ))" \
			'{ n = $6; $6 = sprintf("%.1f", t * 1e6 / hz / n); $7 = sprintf("%.1f", g * 1e6 / n); $8 = sprintf("%.0f%%", 100 * b / tt); print }'
}

# One second of each peer first, not counted: a replica's first WAIT can
# wait on its initial sync, a deployment's first writes on its connections.
for p in "${peers[@]}"; do
	duration=1s run "$p" >/dev/null
done
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$work/runs.txt"
for r in $(seq "$rounds"); do
	order=("${peers[@]}")
	if (( r % 2 == 0 )); then
		order=()
		for (( i = ${#peers[@]} - 1; i >= 0; i-- )); do order+=("${peers[$i]}"); done
	fi
	for p in "${order[@]}"; do run "$p" | tee -a "$work/runs.txt"; done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
# median PEER [FIELD] -> the median of a field (default SET/s) over PEER's runs.
median() { awk -v p="$1" -v f="${2:-2}" '$1 == p { print $f }' "$work/runs.txt" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for p in "${peers[@]}"; do
	awk -v p="$p" -v c="$(median "$p" 6)" -v g="$(median "$p" 7)" -v b="$(median "$p" 8)" -v n="$(nproc)" \
		'BEGIN { printf "%s: %.1f CPU-µs per SET on the server side (%d cores: at most %d SET/s), the load generator %.1f, all cores %d%% busy\n", p, c, n, n * 1e6 / c, g, b }'
done
pairs=("replicated wait1" "disk aof")
[[ -n "$before" ]] && pairs+=("replicated replicated0" "disk disk0")
for pair in "${pairs[@]}"; do
	set -- $pair
	a=$(median "$1") b=$(median "$2")
	awk -v a="$a" -v b="$b" -v x="$1" -v y="$2" 'BEGIN { printf "%s / %s SET c=%s: %d / %d = %.2fx\n", x, y, '"$clients"', a, b, a / b }'
done
