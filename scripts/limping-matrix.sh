#!/usr/bin/env bash
# limping-matrix.sh: issue 12's limping matrix. One replica of a 3-voter
# deployment limps (fault nic, disk or cpu; role leader or follower; factor
# 10, 100, 1000) while 8 clients write 1-KB values through a healthy
# follower for 10 s: the limpbench scenarios gait-redis-set-ROLE-FAULT and
# etcd-put-ROLE-FAULT (bug-etcd-14501-follower-disk for etcd's follower
# disk), run by one `gait bench`. Prints, per system, fault, role and
# factor, client p99 and throughput as ratios to the same experiment's
# healthy baseline, and marks the gait-redis cells that miss issue 12's
# target (p99 at most 1.5x, throughput at least 0.8x).
#
#   sudo scripts/limping-matrix.sh [OUT]     # default runs/limping-matrix
#   env: GAIT (default bin/gait), SYSTEMS (default "gait-redis etcd"),
#        LOCK (a file: each experiment runs under `flock LOCK`, so that on
#        a shared machine no other measurement runs beside it and none
#        waits longer than one experiment, about a minute)
#
# OUT keeps finished experiments: run it again to resume, or to reprint.
# Each experiment is its own `gait bench`, the load average before and
# after it on stderr.
set -euo pipefail

out=${1:-runs/limping-matrix}
GAIT=${GAIT:-bin/gait}
systems=${SYSTEMS:-gait-redis etcd}
dir=scenarios/limpbench
command -v jq >/dev/null || { echo "limping-matrix: jq not found" >&2; exit 1; }

# scenario SYSTEM ROLE FAULT names the experiment of one row.
scenario() {
	case "$1/$2/$3" in
	etcd/follower/disk) echo bug-etcd-14501-follower-disk ;;
	etcd/*) echo "etcd-put-$2-$3" ;;
	gait-redis/*) echo "gait-redis-set-$2-$3" ;;
	esac
}
files=()
for s in $systems; do
	for role in leader follower; do
		for fault in nic disk cpu; do files+=("$dir/$(scenario "$s" "$role" "$fault").yaml"); done
	done
done
for f in "${files[@]}"; do
	(
		if [[ -n ${LOCK:-} ]]; then flock 9; fi
		echo "$(basename "$f" .yaml): load average before $(cut -d' ' -f1-3 /proc/loadavg)"
		"$GAIT" bench "$f" --out "$out"
		echo "$(basename "$f" .yaml): load average after $(cut -d' ' -f1-3 /proc/loadavg)"
	) 9>>"${LOCK:-/dev/null}" >&2
done

printf '%-11s %-5s %-9s %7s %9s %11s  %s\n' system fault role factor "p99 ratio" "tput ratio" "(base p99, base tput)"
for s in $systems; do
	for fault in nic disk cpu; do
		for role in leader follower; do
			jq -r --arg s "$s" --arg f "$fault" --arg r "$role" '
				.steps[0] as $b | .steps[1:][] |
				(.p99 / $b.p99) as $p | .throughput_ratio as $t |
				[$s, $f, $r, "\(.factor)x", ($p * 100 | round / 100), ($t * 100 | round / 100),
				 "(\($b.p99 * 1000 | round) ms, \($b.throughput | round)/s)",
				 (if $s == "gait-redis" and ($p > 1.5 or $t < 0.8) then "short" else "" end)] | @tsv' \
				"$out/$(scenario "$s" "$role" "$fault")/summary.json" |
				awk -F'\t' '{ printf "%-11s %-5s %-9s %7s %8sx %10sx  %s %s\n", $1, $2, $3, $4, $5, $6, $7, $8 }'
		done
	done
done
