#!/usr/bin/env bash
# false-handovers.sh: issue 12's "noise is not limping". A healthy 3-voter
# gait-redis deployment on testbed hosts serves 8 clients (50% GET, 50% SET,
# through the followers) for DURATION, twice: once as the machine is, once
# with stress-ng beside it (CPU workers on every core and a writer on the
# disk that holds the testbed's data). No fault is injected, so every
# leadership change is a false one. Prints, per run, the leadership
# transfers the agents decided (a leader that judged itself limping) and
# the leader changes of any cause (raft's own elections included), each as
# a count and per hour.
#
#   sudo scripts/false-handovers.sh [DURATION]      # default 600s
#   env: GAIT (gait binary, default: built into a scratch directory),
#        STRESS (stress-ng arguments for the loaded run),
#        RUNS (default "quiet loaded": either run alone, so that each
#        fits a shared machine's turn at measuring)
set -euo pipefail

duration=${1:-600s}
source "$(dirname "$0")/lib/scratch.sh"
need false-handovers stress-ng jq awk
if [[ -n "${GAIT:-}" ]]; then
	work=$(mktemp -d) pids=()
	trap cleanup EXIT
else
	scratch
	GAIT=$work/gait
fi
stress=${STRESS:---cpu $(nproc) --hdd 1 --hdd-bytes 256M --temp-path $work}

cat >"$work/healthy.yaml" <<EOF
name: gait-redis-healthy
description: Gets and sets through the followers of a healthy deployment, no fault.
system: gait-redis
nodes: 3
workload: {op: "get:50,set:50", keys: 1000, value_size: 1KiB, clients: 8, duration: $duration}
repeat: 1
EOF

# count OUT prints the run's transfers and leader changes: each agent's
# running totals at the end (the last value in the time series), summed
# over agents for transfers; leader changes are counted once per change,
# from the hosts the leader gauge names second after second.
count() {
	local csv=$1/f1-r1/timeseries.csv
	awk -F, '
	NR == 1 { for (i = 1; i <= NF; i++) { if ($i ~ /^gait_replica_leadership_transfers_total/) t[i] = 1; if ($i ~ /^gait_replica_leader\{/) l[i] = $i }; next }
	{ for (i in t) if ($i != "") last[i] = $i
	  who = ""; for (i in l) if ($i == 1) who = l[i]
	  if (who != "" && prev != "" && who != prev) changes++
	  if (who != "") prev = who; secs++ }
	END { for (i in last) transfers += last[i]; printf "%d %d %d\n", transfers, changes, secs }' "$csv"
}

run() {
	local name=$1
	"$GAIT" run "$work/healthy.yaml" --out "$work/$name" >"$work/$name.log" 2>&1 ||
		{ echo "false-handovers: gait run failed ($name):" >&2; tail -20 "$work/$name.log" >&2; exit 1; }
	read -r transfers changes secs < <(count "$work/$name")
	awk -v n="$name" -v t="$transfers" -v c="$changes" -v s="$secs" -v load="$(cut -d' ' -f1-3 /proc/loadavg)" 'BEGIN {
		printf "%-8s %6ds  transfers %d (%.1f/h)  leader changes %d (%.1f/h)  load average at the end %s\n", n, s, t, t * 3600 / s, c, c * 3600 / s, load }'
	grep -h "limps:" "$work/$name"/hosts/f1-r1/*/log/gait-replica.stderr | sed 's/^/    /' | head -20 || true
}

for r in ${RUNS:-quiet loaded}; do
	case $r in
	quiet) run quiet ;;
	loaded)
		stress-ng $stress --timeout 0 >"$work/stress.log" 2>&1 &
		pids+=($!)
		run loaded
		;;
	*) echo "false-handovers: RUNS: $r is neither quiet nor loaded" >&2; exit 2 ;;
	esac
done
