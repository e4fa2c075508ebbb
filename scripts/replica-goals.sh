#!/usr/bin/env bash
# The write-path goals of issue 12 in one run: redis-benchmark (unmodified)
# against one redis-server with appendonly yes / appendfsync always, one
# without persistence, and gait replica (3 voters) with --durability disk and
# --durability replicated. Peers alternate, ROUNDS times. Then the pipelining
# goals of issue 13: redis-cli --pipe of 20k SETs, and of PAIRS (20k)
# interleaved SET+GET pairs (time per pair against one unpipelined SET at c=1). Prints
# one line per measurement and then the medians and ratios the goals name.
#
#   scripts/replica-goals.sh [-n REQUESTS] [-r ROUNDS] [-p PAIRS] [-b GAIT] [-P] [-- extra 'gait replica cluster' flags]
#
# Every other round measures the peers in the reverse order (A B, B A). -P
# measures the two pipelines only (no redis-benchmark), for their rows.
#
# -b GAIT also runs deployments of that gait binary (built from the tree
# before a change) as peers disk0 and replicated0, alternating with the
# others, and prints the goals' rows for them too: before and after from
# one run on a shared machine.
#
# Without extra flags the voters run on testbed hosts (root; the client runs
# in the root namespace and reaches them over their veths), and a plain
# redis-server on a testbed host of its own behind the same link (peer
# plainlink) shows what the link alone costs; pass --loopback to run the
# voters on 127.0.0.1 in one process.
set -euo pipefail

requests=20000 rounds=3 pairs=20000 before= pipesonly=
while [[ $# -gt 0 ]]; do
	case "$1" in
	-P) pipesonly=1; shift ;;
	-b) before=$(realpath "$2"); [[ -x "$before" ]] || { echo "replica-goals: -b $2: not an executable" >&2; exit 2; }; shift 2 ;;
	-n) requests=$2; shift 2 ;;
	-p) pairs=$2; shift 2 ;;
	-r) rounds=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "replica-goals: unknown argument $1" >&2; exit 2 ;;
	esac
done
source "$(dirname "$0")/lib/scratch.sh"
source "$(dirname "$0")/lib/deploy.sh"
need replica-goals redis-server redis-benchmark redis-cli curl go
scratch

start_peers "$before" "$@"

# bench PEER TEST C -> "PEER TEST C rps p50"
bench() {
	local hp=${target[$1]}
	redis-benchmark -h "${hp%:*}" -p "${hp##*:}" -t "$2" -n "$requests" -c "$3" -r 100000 --csv |
		awk -F, -v peer="$1" -v c="$3" 'NR > 1 { gsub(/"/, ""); print peer, $1, c, $2, $5 }'
}

# Pipelines in the protocol redis-cli --pipe sends as it is.
awk 'BEGIN { for (i = 0; i < 20000; i++) printf "*3\r\n$3\r\nSET\r\n$%d\r\nk%d\r\n$1\r\nv\r\n", length("k" i), i }' >"$work/sets.resp"
awk -v n="$pairs" 'BEGIN { for (i = 0; i < n; i++) printf "*3\r\n$3\r\nSET\r\n$%d\r\nk%d\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$%d\r\nk%d\r\n", length("k" i), i, length("k" i), i }' >"$work/pairs.resp"
# pipe PEER NAME FILE REPLIES -> "PEER NAME 1 seconds seconds": the time of
# one redis-cli --pipe, checked to end with every reply and no error.
pipe() {
	local hp=${target[$1]} start end
	start=$(date +%s.%N)
	redis-cli -h "${hp%:*}" -p "${hp##*:}" --pipe <"$3" >"$work/pipe.out" 2>&1
	end=$(date +%s.%N)
	grep -q "errors: 0, replies: $4\$" "$work/pipe.out" || { echo "replica-goals: $1 $2: $(tail -1 "$work/pipe.out")" >&2; exit 1; }
	awk -v p="$1" -v n="$2" -v s="$start" -v e="$end" 'BEGIN { printf "%s %s 1 %.3f %.3f\n", p, n, e - s, e - s }'
}

for round in $(seq "$rounds"); do
	order=("${peers[@]}")
	((round % 2)) || order=($(printf '%s\n' "${peers[@]}" | tac))
	for peer in "${order[@]}"; do
		aim "$peer"
		if [[ -z "$pipesonly" ]]; then
			bench "$peer" set 8
			bench "$peer" set 1
			bench "$peer" get 8
		fi
		pipe "$peer" PIPESET "$work/sets.resp" 20000
		pipe "$peer" PIPEPAIR "$work/pairs.resp" $((2 * pairs))
	done
done | tee "$work/all.txt"

# The first line per deployment is where it started; more are handovers.
awk '{ n[$1]++ } END { for (p in n) if (n[p] > 1) printf "replica-goals: %s changed leaders %d times during the run\n", p, n[p] - 1 }' "$work/leaders.txt" >&2

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
m() { awk -v p="$1" -v t="$2" -v c="$3" -v f="$4" '$1 == p && $2 == t && $3 == c { print $f }' "$work/all.txt" | median; }
echo
echo "| goal | gait | peer | ratio | target |"
echo "| --- | ---: | ---: | ---: | --- |"
# row GOAL GAIT PEER TARGET, left out when a side was not measured (-P).
row() { [[ -n "$2" && -n "$3" ]] || return 0; awk -v g="$1" -v a="$2" -v b="$3" -v t="$4" 'BEGIN { printf "| %s | %s | %s | %.3f | %s |\n", g, a, b, a / b, t }'; }
for d in "${kinds[@]}"; do
	case $d in
	disk*)
		row "$d: SET c=8 req/s vs appendfsync always" "$(m $d SET 8 4)" "$(m aof SET 8 4)" ">= 0.5"
		row "$d: SET c=1 p50 ms vs appendfsync always" "$(m $d SET 1 5)" "$(m aof SET 1 5)" "<= 3"
		row "$d: GET c=8 req/s vs no persistence" "$(m $d GET 8 4)" "$(m plain GET 8 4)" "(none)" ;;
	*)
		row "$d: SET c=8 req/s vs no persistence" "$(m $d SET 8 4)" "$(m plain SET 8 4)" ">= 0.25"
		row "$d: GET c=8 req/s vs no persistence" "$(m $d GET 8 4)" "$(m plain GET 8 4)" ">= 0.5" ;;
	esac
done
for d in "${kinds[@]}"; do
	row "$d: redis-cli --pipe 20k SETs, s vs no persistence" "$(m $d PIPESET 1 4)" "$(m plain PIPESET 1 4)" "<= 3"
	row "$d: redis-cli --pipe 20k SETs, s vs no persistence behind the same link" "$(m $d PIPESET 1 4)" "$(m plainlink PIPESET 1 4)" "(link's share)"
	# One pair of the interleaved pipeline against one unpipelined SET at c=1 (1/rps), in ms.
	row "$d: pipelined SET+GET per pair ms vs unpipelined SET c=1" "$(awk -v s="$(m $d PIPEPAIR 1 4)" -v n="$pairs" 'BEGIN { printf "%.4f", 1000 * s / n }')" \
		"$(m $d SET 1 4 | awk '$1 > 0 { printf "%.4f", 1000 / $1 }')" "<= 1"
done
