#!/usr/bin/env bash
# limping-matrix.sh: issue 12's limping matrix. One replica of a 3-voter
# deployment limps (fault nic, disk or cpu; role leader or follower; factor
# 10, 100, 1000) while 8 clients write 1-KB values through a healthy
# follower for 10 s: the limpbench scenarios gait-redis-set-ROLE-FAULT and
# etcd-put-ROLE-FAULT (bug-etcd-14501-follower-disk for etcd's follower
# disk), run by one `gait bench`. Prints, per system, fault, role and
# factor, client p99 and throughput as ratios to the same experiment's
# healthy baseline, and marks the gait-redis cells that miss issue 12's
# target (p99 at most 1.5x, throughput at least 0.8x). Then, per gait-redis
# and gait-zookeeper step (every repetition), the leadership transfers the
# agents decided (their logs), the leader changes of any cause (the leader
# gauge second by second, from the run's first leader), when a replica
# other than the first leader first led, and when each replica was first
# marked limping, in seconds from the step's start, and by which rule
# (rule below).
#
#   sudo scripts/limping-matrix.sh [OUT]     # default runs/limping-matrix
#   env: GAIT (default bin/gait), SYSTEMS (default "gait-redis etcd"; also
#        gait-zookeeper and zookeeper, whose nic rows are the Z3 and Z4 rows),
#        REPEAT (repetitions of every run in place of each scenario's),
#        PRINT_ONLY (set: run nothing, print what OUT holds),
#        WARMUP (unmeasured workload before each run, like 8s: JVM servers
#        start cold in every run),
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
for tool in jq bc; do
	command -v $tool >/dev/null || { echo "limping-matrix: $tool not found" >&2; exit 1; }
done

# scenario SYSTEM ROLE FAULT names the experiment of one row.
scenario() {
	case "$1/$2/$3" in
	etcd/follower/disk) echo bug-etcd-14501-follower-disk ;;
	etcd/*) echo "etcd-put-$2-$3" ;;
	gait-redis/*) echo "gait-redis-set-$2-$3" ;;
	zookeeper/leader/nic) echo zk-z3-set-leader-nic ;;
	zookeeper/follower/nic) echo zk-z4-set-follower-nic ;;
	zookeeper/*) echo "zk-set-$2-$3" ;;
	gait-zookeeper/leader/nic) echo gait-zookeeper-z3-set-leader-nic ;;
	gait-zookeeper/follower/nic) echo gait-zookeeper-z4-set-follower-nic ;;
	gait-zookeeper/*) echo "gait-zookeeper-set-$2-$3" ;;
	esac
}
files=()
for s in $systems; do
	for role in leader follower; do
		for fault in nic disk cpu; do files+=("$dir/$(scenario "$s" "$role" "$fault").yaml"); done
	done
done
for f in "${files[@]}"; do
	[[ -z ${PRINT_ONLY:-} ]] || break
	(
		if [[ -n ${LOCK:-} ]]; then flock 9; fi
		echo "$(basename "$f" .yaml): load average before $(cut -d' ' -f1-3 /proc/loadavg)"
		"$GAIT" bench "$f" --out "$out" ${REPEAT:+--repeat "$REPEAT"} ${WARMUP:+--warmup "$WARMUP"}
		echo "$(basename "$f" .yaml): load average after $(cut -d' ' -f1-3 /proc/loadavg)"
	) 9>>"${LOCK:-/dev/null}" >&2
done

printf '%-14s %-5s %-9s %7s %9s %11s  %s\n' system fault role factor "p99 ratio" "tput ratio" "(base p99, base tput)"
for s in $systems; do
	for fault in nic disk cpu; do
		for role in leader follower; do
			sum=$out/$(scenario "$s" "$role" "$fault")/summary.json
			[[ -e $sum ]] || continue
			jq -r --arg s "$s" --arg f "$fault" --arg r "$role" '
				.steps[0] as $b | .steps[1:][] |
				(.p99 / $b.p99) as $p | .throughput_ratio as $t |
				[$s, $f, $r, "\(.factor)x", ($p * 100 | round / 100), ($t * 100 | round / 100),
				 "(\($b.p99 * 1000 | round) ms, \($b.throughput | round)/s)",
				 (if ($s | startswith("gait-")) and ($p > 1.5 or $t < 0.8) then "short" else "" end)] | @tsv' \
				"$sum" |
				awk -F'\t' '{ printf "%-14s %-5s %-9s %7s %8sx %10sx  %s %s\n", $1, $2, $3, $4, $5, $6, $7, $8 }'
		done
	done
done

# rule LINE names the rule of a "limps:" line: the short hold, agreement,
# the CPU quota, else the full hold (or a stopped redis-server).
rule() {
	case $1 in
	*"short hold true"*) echo short ;;
	*"agreed true"*) echo agreed ;;
	*"quota true"*) echo quota ;;
	*) echo hold ;;
	esac
}

# led HOSTS FAULTED START prints when a replica other than FAULTED (the
# step's first leader) first took the lead, in seconds from the step's
# start (its agent's "this replica leads" line), or "-" when none did.
led() {
	local h line day clock first=
	for h in "$1"/*; do
		[[ $(basename "$h") == "$2" ]] && continue
		while read -r line; do
			read -r _ _ day clock _ <<<"$line"
			t=$(echo "$(date -d "$day $clock" +%s.%N) - $3" | bc)
			if [[ $t != -* ]] && { [[ -z $first ]] || (($(echo "$t < $first" | bc))); }; then first=$t; fi
		done < <(grep -h "this replica leads" "$h"/log/gait-replica.stderr || true)
	done
	if [[ -n $first ]]; then printf '%.2fs' "$first"; else echo -; fi
}

# handovers RUN prints a gait-redis step's transfers, leader changes and
# first marks. The time series' header quotes the fault's name, which holds
# a comma: it is replaced before splitting on commas.
handovers() {
	local run=$1 hosts start lead transfers changes
	hosts=$(dirname "$run")/hosts/$(basename "$run")
	start=$(date -d "$(jq -r .started "$run/run.json")" +%s.%N)
	lead=$(jq -r '.hosts[] | select(.role == "leader") | .name' "$run/run.json")
	transfers=$(cat "$hosts"/*/log/gait-replica.stderr | grep -c "handing leadership" || true)
	changes=$(sed '1s/"[^"]*"/fault/' "$run/timeseries.csv" | awk -F, -v prev="$lead" '
		NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ /^gait_replica_leader\{/) { l[i] = $i; sub(/.*host=/, "", l[i]); sub(/}.*/, "", l[i]) }; next }
		{ who = ""; for (i in l) if ($i == 1) who = l[i]
		  if (who != "" && who != prev) { changes++; prev = who } }
		END { print changes + 0 }')
	printf '%-19s  %-13s  ' "$transfers / $changes" "$(led "$hosts" "$lead" "$start")"
	{ grep -h " limps: " "$hosts"/*/log/gait-replica.stderr || true; } | while read -r line; do
		read -r _ _ day clock _ id _ <<<"$line"
		printf '%s %.2f %s\n' "$id" "$(echo "$(date -d "$day $clock" +%s.%N) - $start" | bc)" "$(rule "$line")"
	done | sort -k1,1 -k2,2n | awk '!seen[$1]++ { printf "%s %ss (%s)  ", $1, $2, $3 } END { print "" }'
}

for gait in gait-redis gait-zookeeper; do
	[[ " $systems " == *" $gait "* ]] || continue
	printf '\n%s\n%-5s %-9s %9s  %-19s  %-13s  %s\n' "$gait" fault role "factor/rep" "transfers / changes" "another leads" "first marked (from the step's start)"
	for fault in nic disk cpu; do
		for role in leader follower; do
			[[ -d "$out/$(scenario "$gait" "$role" "$fault")" ]] || continue
			for run in "$out/$(scenario "$gait" "$role" "$fault")"/f*-r*; do
				factor=${run##*/f} rep=${factor##*-r} factor=${factor%-r*}
				[[ $factor == 1 ]] && continue
				printf '%-5s %-9s %9s  ' "$fault" "$role" "${factor}x r$rep"
				handovers "$run"
			done
		done
	done
done
