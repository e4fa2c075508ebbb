#!/usr/bin/env bash
# replica-stages.sh: issue 12's per-stage write latency, before and after.
# Deployments of two gait builds (-b BEFORE, and this tree's or $GAIT) run
# side by side, each with --durability disk and replicated (3 voters on
# testbed hosts, or FLAGS such as --loopback). For each durability and
# client count (8, then 1) redis-benchmark (unmodified) sends SETs to each
# build's leader in the order before, after, after, before; each stage's mean
# is read from that leader's /metrics (gait_replica_write_stage_seconds, sum
# and count, before and after the run). Prints one line per stage and run:
#   DURABILITY C BUILD RUN STAGE MEAN_US
# and one "SET/s" line per run, then the means of the two runs per build.
#
#   sudo scripts/replica-stages.sh -b BEFORE [-n REQUESTS] [-- FLAGS]
#   env: GAIT (the 'after' binary; default: built from this tree)
set -euo pipefail

requests=20000 before=
while [[ $# -gt 0 ]]; do
	case "$1" in
	-b) before=$(realpath "$2"); [[ -x "$before" ]] || { echo "replica-stages: -b $2: not an executable" >&2; exit 2; }; shift 2 ;;
	-n) requests=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "replica-stages: unknown argument $1" >&2; exit 2 ;;
	esac
done
[[ -n $before ]] || { echo "replica-stages: -b BEFORE is required" >&2; exit 2; }
source "$(dirname "$0")/lib/scratch.sh"
source "$(dirname "$0")/lib/deploy.sh"
need replica-stages redis-benchmark curl awk
scratch

for d in disk replicated; do
	gait "${d}_before" "$before" --durability "$d" "$@"
	gait "${d}_after" "$work/gait" --durability "$d" "$@"
done

# leader_url PEER prints the metrics URL of the deployment's current leader
# (after aim PEER).
leader_url() {
	local -n clients="clients_$1" urls="metrics_$1"
	local c=($clients) u=($urls) i
	for i in "${!c[@]}"; do
		[[ ${c[$i]} == "${target[$1]}" ]] && { echo "${u[$i]}"; return; }
	done
}

# stages URL prints "stage sum count" from a leader's /metrics.
stages() {
	curl -s --max-time 5 "$1" | awk '
		/^gait_replica_write_stage_seconds_(sum|count)\{/ {
			match($0, /stage="[^"]*"/); s = substr($0, RSTART + 7, RLENGTH - 8)
			if ($0 ~ /_sum\{/) sum[s] = $NF; else cnt[s] = $NF
		}
		END { for (s in sum) print s, sum[s], cnt[s] }'
}

for d in disk replicated; do
	for c in 8 1; do
		run=0
		for build in before after after before; do
			run=$((run + 1))
			peer="${d}_$build"
			aim "$peer"
			url=$(leader_url "$peer")
			stages "$url" >"$work/s0"
			hp=${target[$peer]}
			rps=$(redis-benchmark -h "${hp%:*}" -p "${hp##*:}" -t set -n "$requests" -c "$c" -r 100000 --csv |
				awk -F, 'NR > 1 { gsub(/"/, ""); print $2 }')
			stages "$url" >"$work/s1"
			echo "$d $c $build $run SET/s $rps"
			awk -v d="$d" -v c="$c" -v b="$build" -v r="$run" 'NR == FNR { s[$1] = $2; n[$1] = $3; next }
				$3 > n[$1] { printf "%s %s %s %s %s %.0f\n", d, c, b, r, $1, ($2 - s[$1]) / ($3 - n[$1]) * 1e6 }' \
				"$work/s0" "$work/s1" | sort -k5
		done
	done
done | tee "$work/all.txt"

echo
echo "means of the two runs per build (µs; SET/s):"
awk '{ k = $1 " c=" $2 " " $5; v[k, $3] += $6; n[k, $3]++; keys[k] = 1 }
	function mean(k, b) { return n[k, b] ? sprintf("%8.0f", v[k, b] / n[k, b]) : sprintf("%8s", "-") }
	END { for (k in keys) printf "%-40s before %s  after %s\n", k, mean(k, "before"), mean(k, "after") }' \
	"$work/all.txt" | sort
