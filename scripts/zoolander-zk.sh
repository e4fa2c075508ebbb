#!/usr/bin/env bash
# The Zoolander thesis's Figures 10-13 (§5.4, RP ZooKeeper) on gait-zookeeper
# (docs/results/gait-zookeeper-zoolander.md). Per experiment and per number
# of duplicates D in 1, 2, 4, one loopback deployment
#   gait replica cluster --loopback --server zookeeper --voters 1
#                        --duplicates D-1 [--group-size 3] [--read any --fanout D]
# (the single voter orders the writes, as the thesis's message repeater did;
# every replica applies each write to its own ZooKeeper and the first reply
# wins), then an open-loop Poisson workload at the first agent:
#   fig10  setData of 1-KB values on 100 znodes, a standalone ZooKeeper per duplicate
#   fig12  getData only (--read any --fanout D: each read goes to every duplicate)
#   fig13  setData, a 3-server ZooKeeper ensemble per duplicate
# Figure 11 (the bound swept from p75 to p99.5) comes from fig10's runs.
# scripts/zoolander-zk-report then compares each measured SLA with
# gait model predict for the same configuration and writes OUT/report.html.
#
#   scripts/zoolander-zk.sh [--out out/zoolander-zk] [--requests 4000] [--rate 200]
#                           [--only "fig10 fig12 fig13"] [--durability disk|replicated]
#                           [--reanalyze]
#
# It starts up to 12 ZooKeeper JVMs at once (fig13, D = 4): about 2.5 GiB.
# With LOCK set to one or more files (space-separated), each figure's
# configurations run under `flock` of every one of them, so that on a
# shared machine no other measurement runs beside them. Every agent serves
# its metrics; each run keeps the clients' agent's (OUT/EXP/dD.metrics), where
# the report reads how a write's time divides between the part every
# duplicate shares (raft's ordering) and the part each does alone (its
# ZooKeeper), and how often another duplicate answered first.
set -euo pipefail

out=out/zoolander-zk
requests=4000
rate=200
only="fig10 fig12 fig13"
reanalyze=false
durability=disk
while [[ $# -gt 0 ]]; do
	case $1 in
	--out) out=$2; shift 2 ;;
	--requests) requests=$2; shift 2 ;;
	--rate) rate=$2; shift 2 ;;
	--only) only=$2; shift 2 ;;
	--durability) durability=$2; shift 2 ;;
	--reanalyze) reanalyze=true; shift ;;
	*) echo "zoolander-zk: unknown argument $1" >&2; exit 2 ;;
	esac
done
[[ "$requests" =~ ^[1-9][0-9]*$ && "$rate" =~ ^[1-9][0-9]*$ ]] ||
	{ echo "zoolander-zk: --requests and --rate want positive integers" >&2; exit 2; }

gait=${GAIT:-bin/gait}
[[ -n ${GAIT:-} ]] || go build -o bin/gait ./cmd/gait
cluster=""
cleanup() { [[ -z $cluster ]] || { kill -INT "$cluster" 2>/dev/null || true; wait "$cluster" 2>/dev/null || true; }; }
trap cleanup EXIT

# measure EXPERIMENT D: one deployment of D duplicates, one run in OUT/EXPERIMENT/dD.
measure() {
	local exp=$1 d=$2 args=() mix=set:100
	case $exp in
	fig12) args=(--read any --fanout "$d"); mix=get:100 ;;
	fig13) args=(--group-size 3) ;;
	esac
	local dir=$out/$exp
	mkdir -p "$dir"
	[[ -d $dir/d$d ]] && { echo "$exp D=$d: kept" >&2; return; }
	"$gait" replica cluster --loopback --server zookeeper --voters 1 --duplicates $((d - 1)) "${args[@]}" \
		--durability "$durability" --metrics >"$dir/d$d.addrs" 2>"$dir/d$d.cluster.log" &
	cluster=$!
	for _ in $(seq 1800); do
		[[ $(grep -c '^zookeeper ' "$dir/d$d.addrs") -ge $d ]] && break
		kill -0 "$cluster" 2>/dev/null || break
		sleep 0.1
	done
	if [[ $(grep -c '^zookeeper ' "$dir/d$d.addrs") -lt $d ]]; then
		echo "zoolander-zk: $exp D=$d did not start; left out" >&2
		tail "$dir/d$d.cluster.log" >&2
		cleanup
		cluster=""
		return
	fi
	local addr
	addr=$(awk 'NR == 1 { print $2 }' "$dir/d$d.addrs")
	echo "$exp D=$d: $(grep -c '^zookeeper ' "$dir/d$d.addrs") agents, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
	sleep 2 # the agents exchange their first status reports
	"$gait" load --system gait-zookeeper --addr "$addr" --mix "$mix" --keys 100 --value-size 1KiB \
		--rate "$rate/s" --poisson --requests "$requests" --factor duplicates="$d" --out "$dir/d$d" 2>>"$dir/load.log"
	echo "load average $(cut -d' ' -f1-3 /proc/loadavg)" >"$dir/d$d.loadavg"
	# The first agent's metrics: the clients' agent, which proposed every write.
	curl -s --max-time 5 "$(awk '$1 == "metrics" { print $2; exit }' "$dir/d$d.addrs")" >"$dir/d$d.metrics" || true
	kill -INT "$cluster"
	wait "$cluster" || true
	cluster=""
}

if ! $reanalyze; then
	for exp in $only; do
		(
			trap cleanup EXIT # a subshell does not inherit the trap
			for lock in ${LOCK:-}; do
				exec {fd}>>"$lock"
				flock "$fd"
			done
			for d in 1 2 4; do measure "$exp" "$d"; done
		)
	done
fi
go run ./scripts/zoolander-zk-report "$out"
if command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then
	HEIGHT=${HEIGHT:-2600} scripts/screenshot.sh "$out/report.html" "$out/report.png" >/dev/null
	echo "figure: $out/report.png" >&2
fi
