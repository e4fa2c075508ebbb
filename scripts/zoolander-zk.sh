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
#                           [--rounds K] [--warmup SECONDS] [--testbed [--pin]] [--ds "1 2 4"] [--reanalyze]
#
# --testbed runs every deployment on testbed hosts instead of loopback (root;
# one network namespace, agent and ZooKeeper per replica, 100 Mbit/s links).
# --pin (with --testbed) gives each replica a core of its own: replica i's
# processes (agent and ZooKeeper) run on CPU i mod the machine's CPUs
# (taskset), so at D = 2 on two cores no duplicate takes another's core; the
# load generator and everything else run anywhere.
#
# --rounds K starts every D's deployment at once and drives them in turn,
# K rounds of requests/K each (OUT/EXP/dD/rK): whatever else the machine
# does meanwhile falls on every D alike, where one deployment after another
# gives each its own stretch of the machine's noise (7 JVMs at once for
# fig10 and fig12; not for fig13).
#
# --warmup S (default 5) drives each deployment S seconds, closed loop with
# 4 clients, before its first measured request (OUT/EXP/dD.warmup, not in the
# report): every deployment starts cold JVMs, whose first seconds the
# measured requests would otherwise pay for. Then it waits until no replica
# is more than 20 ms behind (the warm-up outruns the other duplicates).
#
# --ds picks the numbers of duplicates (default "1 2 4"; the report needs 1).
#
# It starts up to 12 ZooKeeper JVMs at once (fig13, D = 4): about 2.5 GiB.
# With LOCK set to one or more files (space-separated), each figure's
# configurations run under `flock` of every one of them, so that on a
# shared machine no other measurement runs beside them. Every agent serves
# its metrics; each run keeps the clients' agent's before and after its
# measured requests (OUT/EXP/dD.metrics0, dD.metrics), where the report reads
# how a write's time divides between the part every duplicate shares (raft's
# ordering) and the part each does alone (its ZooKeeper), how often another
# duplicate answered first, and each duplicate's own reply times.
set -euo pipefail

out=out/zoolander-zk
requests=4000
rate=200
only="fig10 fig12 fig13"
reanalyze=false
durability=disk
rounds=1
warmup=5
testbed=false
pin=false
dups="1 2 4"
while [[ $# -gt 0 ]]; do
	case $1 in
	--out) out=$2; shift 2 ;;
	--requests) requests=$2; shift 2 ;;
	--rate) rate=$2; shift 2 ;;
	--only) only=$2; shift 2 ;;
	--durability) durability=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--warmup) warmup=$2; shift 2 ;;
	--testbed) testbed=true; shift ;;
	--pin) pin=true; shift ;;
	--ds) dups=$2; shift 2 ;;
	--reanalyze) reanalyze=true; shift ;;
	*) echo "zoolander-zk: unknown argument $1" >&2; exit 2 ;;
	esac
done
[[ "$requests" =~ ^[1-9][0-9]*$ && "$rate" =~ ^[1-9][0-9]*$ && "$rounds" =~ ^[1-9][0-9]*$ && "$warmup" =~ ^[0-9]+$ ]] ||
	{ echo "zoolander-zk: --requests, --rate and --rounds want positive integers, --warmup a whole number of seconds" >&2; exit 2; }
if $pin && ! $testbed; then
	echo "zoolander-zk: --pin needs --testbed (on loopback every agent is one process)" >&2
	exit 2
fi

gait=${GAIT:-bin/gait}
[[ -n ${GAIT:-} ]] || go build -o bin/gait ./cmd/gait
declare -A clusters # D -> the pid of its deployment's gait replica cluster
cleanup() {
	local pid
	for pid in "${clusters[@]}"; do kill -INT "$pid" 2>/dev/null || true; done
	for pid in "${clusters[@]}"; do wait "$pid" 2>/dev/null || true; done
	clusters=()
}
trap cleanup EXIT

# start EXPERIMENT D: a deployment of D duplicates, its addresses in OUT/EXPERIMENT/dD.addrs.
start() {
	local exp=$1 d=$2 args=()
	case $exp in
	fig12) args=(--read any --fanout "$d") ;;
	fig13) args=(--group-size 3) ;;
	esac
	mkdir -p "$out/$exp"
	$testbed || args+=(--loopback)
	"$gait" replica cluster --server zookeeper --voters 1 --duplicates $((d - 1)) "${args[@]}" \
		--durability "$durability" --metrics >"$out/$exp/d$d.addrs" 2>"$out/$exp/d$d.cluster.log" &
	clusters[$d]=$!
}

# started EXPERIMENT D waits until the deployment serves; false if it did not start.
started() {
	local exp=$1 d=$2 addrs=$out/$1/d$2.addrs
	for _ in $(seq 1800); do
		[[ $(grep -c '^zookeeper ' "$addrs") -ge $d ]] && return 0
		kill -0 "${clusters[$d]}" 2>/dev/null || break
		sleep 0.1
	done
	echo "zoolander-zk: $exp D=$d did not start; left out" >&2
	tail "$out/$exp/d$d.cluster.log" >&2
	return 1
}

# pin EXPERIMENT D: each replica's processes (the namespace holding its
# address) onto CPU i mod the CPUs, i its line in OUT/EXPERIMENT/dD.addrs.
pin() {
	$pin || return 0
	local exp=$1 d=$2 i=0 cpus ip ns pid
	cpus=$(nproc)
	for ip in $(awk '$1 == "zookeeper" { sub(/:.*/, "", $2); print $2 }' "$out/$exp/d$d.addrs"); do
		ns=$(for n in $(ip netns list | awk '{ print $1 }'); do
			ip -n "$n" -o -4 addr show 2>/dev/null | grep -q " $ip/" && echo "$n"
		done | head -1)
		[[ -n $ns ]] || { echo "zoolander-zk: no namespace holds $ip" >&2; return 1; }
		for pid in $(ip netns pids "$ns"); do taskset -a -cp $((i % cpus)) "$pid" >/dev/null; done
		echo "$exp D=$d: replica $i ($ip, $ns) on CPU $((i % cpus))" >&2
		i=$((i + 1))
	done
}

# mix EXPERIMENT: the experiment's operations.
mix() { if [[ $1 == fig12 ]]; then echo get:100; else echo set:100; fi; }

# addr EXPERIMENT D: the first agent of the deployment.
addr() { awk '$1 == "zookeeper" { print $2; exit }' "$out/$1/d$2.addrs"; }

# drive EXPERIMENT D N RUN: N requests at the first agent of the deployment, into RUN.
drive() {
	local exp=$1 d=$2 n=$3 run=$4
	echo "$exp D=$d: $run, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
	mkdir -p "$(dirname "$run")"
	"$gait" load --system gait-zookeeper --addr "$(addr "$exp" "$d")" --mix "$(mix "$exp")" --keys 100 --value-size 1KiB \
		--rate "$rate/s" --poisson --requests "$n" --factor duplicates="$d" --out "$run" 2>>"$out/$exp/load.log"
}

# warm EXPERIMENT D: the deployment's JVMs compile their hot paths under
# the same operations, unmeasured.
warm() {
	local exp=$1 d=$2
	if ((warmup > 0)); then
		rm -rf "$out/$exp/d$d.warmup"
		"$gait" load --system gait-zookeeper --addr "$(addr "$exp" "$d")" --mix "$(mix "$exp")" --keys 100 --value-size 1KiB \
			--clients 4 --duration "${warmup}s" --out "$out/$exp/d$d.warmup" >/dev/null 2>>"$out/$exp/load.log" ||
			echo "zoolander-zk: $exp D=$d: the warm-up failed (see $out/$exp/load.log); measuring cold" >&2
	fi
	settle "$exp" "$d"
	scrape "$exp" "$d" metrics0 # the clients' agent's metrics before the measured requests
}

# settle EXPERIMENT D waits (up to 60 s) until, as the clients' agent sees
# it, no replica is more than 20 ms behind the most advanced: the closed-loop warm-up runs faster
# than the other duplicates apply, and their backlog would otherwise make
# them late for the first measured requests (160 ms behind, 124 ms per
# reply, two seconds after a 2-s warm-up on testbed hosts).
settle() {
	local url i
	url=$(awk '$1 == "metrics" { print $2; exit }' "$out/$1/d$2.addrs")
	for i in $(seq 120); do
		curl -s --max-time 2 "$url" | awk '/^gait_replica_apply_lag_seconds\{/ { n++; if ($2 > 0.02) late++ } END { exit !(n > 0 && !late) }' && {
			echo "$1 D=$2: every replica caught up after $((i / 2)) s" >&2
			return 0
		}
		sleep 0.5
	done
	echo "zoolander-zk: $1 D=$2: replicas still apart after 60 s; measuring anyway" >&2
}

# scrape EXPERIMENT D NAME keeps the clients' agent's metrics as OUT/EXPERIMENT/dD.NAME.
scrape() {
	curl -s --max-time 5 "$(awk '$1 == "metrics" { print $2; exit }' "$out/$1/d$2.addrs")" >"$out/$1/d$2.$3" || true
}

# finish EXPERIMENT D: keeps the load average and the clients' agent's
# metrics (it proposed every write), then stops the deployment.
finish() {
	local exp=$1 d=$2
	echo "load average $(cut -d' ' -f1-3 /proc/loadavg)" >"$out/$exp/d$d.loadavg"
	scrape "$exp" "$d" metrics
	kill -INT "${clusters[$d]}"
	wait "${clusters[$d]}" || true
	unset "clusters[$d]"
}

# measure EXPERIMENT: with one round, one deployment at a time, each D's
# requests in one run (OUT/EXP/dD); with more, every D's deployment at
# once and their runs interleaved, round by round (OUT/EXP/dD/rK), so that
# whatever else the machine does in that time falls on every D alike.
measure() {
	local exp=$1 d k ds=()
	for d in $dups; do
		[[ -e $out/$exp/d$d ]] && { echo "$exp D=$d: kept" >&2; continue; }
		ds+=("$d")
	done
	if ((rounds == 1)); then
		for d in "${ds[@]}"; do
			start "$exp" "$d"
			if started "$exp" "$d" && pin "$exp" "$d"; then
				sleep 2 # the agents exchange their first status reports
				warm "$exp" "$d"
				drive "$exp" "$d" "$requests" "$out/$exp/d$d"
				finish "$exp" "$d"
			else
				cleanup
			fi
		done
		return
	fi
	for d in "${ds[@]}"; do start "$exp" "$d"; done
	local up=()
	for d in "${ds[@]}"; do started "$exp" "$d" && pin "$exp" "$d" && up+=("$d"); done
	sleep 2
	for d in "${up[@]}"; do warm "$exp" "$d"; done
	for k in $(seq "$rounds"); do
		for d in "${up[@]}"; do drive "$exp" "$d" $((requests / rounds)) "$out/$exp/d$d/r$k"; done
	done
	for d in "${up[@]}"; do finish "$exp" "$d"; done
	cleanup
}

if ! $reanalyze; then
	for exp in $only; do
		(
			trap cleanup EXIT # a subshell does not inherit the trap
			for lock in ${LOCK:-}; do
				exec {fd}>>"$lock"
				flock "$fd"
			done
			measure "$exp"
		)
	done
fi
go run ./scripts/zoolander-zk-report "$out"
if command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then
	HEIGHT=${HEIGHT:-2600} WIDTH=${WIDTH:-1300} scripts/screenshot.sh "$out/report.html" "$out/report.png" >/dev/null
	echo "figure: $out/report.png" >&2
fi
