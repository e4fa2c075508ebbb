#!/usr/bin/env bash
# false-handovers.sh: issue 12's "noise is not limping". A healthy 3-voter
# gait-redis deployment on testbed hosts serves 8 clients (50% GET, 50% SET,
# through the followers) for DURATION, twice: once as the machine is, once
# with stress-ng beside it (CPU workers on every core and a writer on the
# disk that holds the testbed's data). No fault is injected, so every
# leadership change is a false one. Prints, per run, the leadership
# transfers the agents decided (a leader that judged itself limping) and
# the leader changes of any cause (raft's own elections included), each as
# a count and per hour, then the limping marks by rule (all agents' marks,
# and those of an agent on itself, the ones that hand leadership over),
# then every mark.
#
#   sudo scripts/false-handovers.sh [DURATION [OUT]]   # default 600s
#   env: GAIT (gait binary, default: built into a scratch directory),
#        PEER (a second gait binary, e.g. main's, run beside GAIT in the
#        same minutes: a deployment of its own, the same workload),
#        STRESS (stress-ng arguments for the loaded run),
#        RUNS (default "quiet loaded": either run alone, so that each
#        fits a shared machine's turn at measuring)
# OUT keeps the runs' directories (agents' logs, time series); without it
# they go with the scratch directory.
set -euo pipefail

duration=${1:-600s}
keep=${2:-}
source "$(dirname "$0")/lib/scratch.sh"
need false-handovers jq awk
if [[ " ${RUNS:-quiet loaded} " == *" loaded "* ]] && ! command -v stress-ng >/dev/null; then
	apt-get install -y stress-ng >/dev/null || { echo "false-handovers: cannot install stress-ng" >&2; exit 1; }
fi
if [[ -n "${GAIT:-}" ]]; then
	work=$(mktemp -d) pids=()
	trap cleanup EXIT
else
	scratch
	GAIT=$work/gait
fi
out=$work
if [[ -n $keep ]]; then
	mkdir -p "$keep"
	out=$keep
fi
stress=${STRESS:---cpu $(nproc) --hdd 1 --hdd-bytes 256M --temp-path $work}

cat >"$work/healthy.yaml" <<EOF2
name: gait-redis-healthy
description: Gets and sets through the followers of a healthy deployment, no fault.
system: gait-redis
nodes: 3
workload: {op: "get:50,set:50", keys: 1000, value_size: 1KiB, clients: 8, duration: $duration}
repeat: 1
EOF2

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

# rule LINE names the rule of a "limps:" line, as limping-matrix.sh does.
rule() {
	case $1 in
	*"stopped applying true"*) echo stopped ;;
	*"short hold true"*) echo short ;;
	*"agreed true"*) echo agreed ;;
	*"quota true"*) echo quota ;;
	*) echo hold ;;
	esac
}

# report NAME DIR prints one run's counts, marks by rule, and every mark.
report() {
	local name=$1 dir=$2 transfers changes secs logs
	read -r transfers changes secs < <(count "$dir")
	awk -v n="$name" -v t="$transfers" -v c="$changes" -v s="$secs" -v load="$(cut -d' ' -f1-3 /proc/loadavg)" 'BEGIN {
		printf "%-14s %6ds  transfers %d (%.1f/h)  leader changes %d (%.1f/h)  load average at the end %s\n", n, s, t, t * 3600 / s, c, c * 3600 / s, load }'
	logs=("$dir"/hosts/f1-r1/*/log/gait-replica.stderr)
	{ grep -H " limps: " "${logs[@]}" || true; } | while IFS= read -r line; do
		read -r file _ _ _ _ id _ <<<"$line"
		host=${file%%:*} host=${host%/log/*} host=${host##*/}
		echo "$([[ $host == "$id" ]] && echo self || echo peer) $(rule "$line")"
	done | sort | uniq -c | awk -v s="$secs" '{ n[$2] += $1; r[$2] = r[$2] sprintf(" %s %d (%.1f/h)", $3, $1, $1 * 3600 / s) }
		END { printf "    marks on itself:%s\n    marks on a peer:%s\n", (n["self"] ? r["self"] : " none"), (n["peer"] ? r["peer"] : " none") }'
	{ grep -h " limps: " "${logs[@]}" || true; } | sort -k3,4 | sed 's/^/    /'
}

# run NAME starts GAIT's deployment (and PEER's beside it) and reports.
run() {
	local name=$1 bins=("$GAIT") labels=(gait) i
	if [[ -n ${PEER:-} ]]; then bins+=("$PEER") labels+=(peer); fi
	local runpids=()
	for i in "${!bins[@]}"; do
		"${bins[$i]}" run "$work/healthy.yaml" --out "$out/$name-${labels[$i]}" >"$out/$name-${labels[$i]}.log" 2>&1 &
		runpids+=($!)
	done
	for i in "${!runpids[@]}"; do
		wait "${runpids[$i]}" || { echo "false-handovers: gait run failed ($name, ${bins[$i]}):" >&2; tail -20 "$out/$name-${labels[$i]}.log" >&2; exit 1; }
	done
	for i in "${!bins[@]}"; do report "$name ${labels[$i]}" "$out/$name-${labels[$i]}"; done
}

for r in ${RUNS:-quiet loaded}; do
	case $r in
	quiet) run quiet ;;
	loaded)
		stress-ng $stress --timeout 0 >"$work/stress.log" 2>&1 &
		pids+=($!)
		run loaded
		kill "${pids[-1]}" 2>/dev/null || true
		;;
	*) echo "false-handovers: RUNS: $r is neither quiet nor loaded" >&2; exit 2 ;;
	esac
done
