#!/usr/bin/env bash
# The read SLA of gait replica at a latency bound for k = 1, 2, 4, 8 replicas
# answering each read, against the Zoolander prediction (docs/replica.md,
# "SLA against the Zoolander prediction").
#
# In each of PASSES passes, for each k (in an order that changes from pass to
# pass: the machine's background load drifts, and interleaving spreads it
# over every k), a deployment of 3 voters and 5 duplicates (8 replicas) with
# --read any --fanout k runs alone: the keys are preloaded (in pass 1 by a
# closed-loop calibration, 16 clients for 3 s), then an open-loop Poisson GET
# workload runs at its first agent for DURATION/PASSES at each rate. In pass
# 1 the k = 1 deployment also gets two runs per rate that drive the same
# arrival schedule (same seed) at two agents at once, for the independence
# check. Per rate:
#   bound     the k = 1 p99 (all passes) rounded to two significant digits, or --bound
#   measured  gait analyze --bound B on every read per k (and per pass)
#   predicted gait model predict --service <the k = 1 reads> --net 0 --bound B
#             --duplicates 1,2,4,8 --replicas 1, at the k = 1 runs' measured
#             rate and at a rate near 0 (the measured latencies already hold
#             the queueing at that rate)
# then a table (standard output), OUT/replica-sla.html (tables and figures)
# and, when chromium is installed, OUT/replica-sla.png (the figures).
#
#   scripts/replica-sla.sh [--rates "500 2000 4000"] [--duration 40s] [--passes 4]
#                          [--bound 2ms] [--value-size 64B] [--out out/replica-sla] [--reanalyze]
#
# --reanalyze measures nothing: it analyses the runs already in OUT again
# (with another --bound, say). --duration is in whole seconds.
set -euo pipefail

rates="500 2000 4000"
duration=40
passes=4
bound=""
value=64B
out=out/replica-sla
reanalyze=false
while [[ $# -gt 0 ]]; do
	case $1 in
	--rates) rates=$2; shift 2 ;;
	--duration) duration=${2%s}; shift 2 ;;
	--passes) passes=$2; shift 2 ;;
	--bound) bound=$2; shift 2 ;;
	--value-size) value=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--reanalyze) reanalyze=true; shift ;;
	*) echo "replica-sla: unknown argument $1" >&2; exit 2 ;;
	esac
done
[[ "$duration" =~ ^[0-9]+$ && "$passes" =~ ^[1-9][0-9]*$ ]] ||
	{ echo "replica-sla: --duration wants whole seconds (40s), --passes a positive integer" >&2; exit 2; }
for tool in redis-server go; do
	command -v "$tool" >/dev/null || { echo "replica-sla: $tool not found" >&2; exit 1; }
done
if $reanalyze; then
	[[ -d "$out" ]] || { echo "replica-sla: --reanalyze: no $out" >&2; exit 1; }
	rates=$(cd "$out" && ls -d r[0-9]* | sed 's/^r//' | sort -n | tr '\n' ' ')
elif [[ -e "$out" ]]; then
	echo "replica-sla: $out exists; remove it, choose --out, or --reanalyze" >&2
	exit 1
fi

go build -o bin/gait ./cmd/gait
gait=bin/gait
ks=(1 2 4 8)
# Pass p runs the k in orders[p % 4]: every k comes first, last and in between.
orders=("1 2 4 8" "8 4 2 1" "2 8 1 4" "4 1 8 2")
mkdir -p "$out"
declare -A cluster addr0 addr1
cleanup() {
	for k in "${!cluster[@]}"; do kill "${cluster[$k]}" 2>/dev/null || true; done
	for k in "${!cluster[@]}"; do wait "${cluster[$k]}" 2>/dev/null || true; done
}
trap cleanup EXIT

# start_cluster K starts the deployment with fan-out K in the background.
start_cluster() {
	"$gait" replica cluster --loopback --voters 3 --duplicates 5 --read any --fanout "$1" \
		>"$out/cluster-k$1.addrs" 2>>"$out/cluster-k$1.log" &
	cluster[$1]=$!
}

# await_cluster K waits for its eight "redis ADDRESS" lines; the first
# agent bootstrapped the deployment and leads it.
await_cluster() {
	local f="$out/cluster-k$1.addrs"
	for _ in $(seq 900); do
		[[ $(grep -c '^redis ' "$f") -ge 8 ]] && break
		kill -0 "${cluster[$1]}" 2>/dev/null || break
		sleep 0.1
	done
	[[ $(grep -c '^redis ' "$f") -ge 8 ]] ||
		{ echo "replica-sla: deployment k=$1 did not start" >&2; tail "$out/cluster-k$1.log" >&2; exit 1; }
	addr0[$1]=$(awk 'NR == 1 { print $2 }' "$f")
	addr1[$1]=$(awk 'NR == 2 { print $2 }' "$f")
	# gait load samples the CPU of the agents (one process) and of the
	# redis-servers (its children) once a second.
	probes=(--pid "agents=${cluster[$1]}")
	local i=0 child
	for child in $(pgrep -P "${cluster[$1]}"); do
		probes+=(--pid "redis$i=$child")
		i=$((i + 1))
	done
}

summary_field() { # summary_field RUN NAME: a number from RUN/summary.json
	sed -n "s/^ *\"$2\": *\([-0-9.eE+]*\),*$/\1/p" "$1/summary.json"
}

load() { "$gait" load --system redis --mix get:100 --value-size "$value" "$@" 2>>"$out/load.log"; }

if ! $reanalyze; then
	slice=$((duration / passes))
	for p in $(seq "$passes"); do
		for k in ${orders[$(((p - 1) % 4))]}; do
			start_cluster "$k"
			await_cluster "$k"
			echo "pass $p, k=$k: 8 replicas, first agent ${addr0[$k]}" >&2
			sleep 2 # let the agents exchange their first status reports
			if [[ $p == 1 ]]; then
				load --addr "${addr0[$k]}" --clients 16 --duration 3s --factor k="$k" --out "$out/calibrate-k$k"
			else
				load --addr "${addr0[$k]}" --clients 1 --requests 1 --out "$out/preload-k$k-p$p"
			fi
			for rate in $rates; do
				load --addr "${addr0[$k]}" --no-preload --rate "$rate/s" --poisson --duration "${slice}s" \
					--seed "$p" --factor k="$k" --factor rate="$rate" --factor pass="$p" "${probes[@]}" \
					--out "$out/r$rate/k$k-p$p"
				if [[ $k == 1 && $p == 1 ]]; then
					# Two agents, the same Poisson schedule (same seed), at once.
					n=$((rate * slice))
					load --addr "${addr0[1]}" --no-preload --rate "$rate/s" --poisson --requests "$n" --seed 7 \
						--factor replica=a --out "$out/r$rate/pair-a" &
					pair=$!
					load --addr "${addr1[1]}" --no-preload --rate "$rate/s" --poisson --requests "$n" --seed 7 \
						--factor replica=b --out "$out/r$rate/pair-b"
					wait "$pair"
				fi
			done
			kill "${cluster[$k]}"
			wait "${cluster[$k]}" || true
			unset "cluster[$k]"
		done
	done
fi

# latencies RUN: the run's latencies in ns, in intended-start order.
latencies() { "$gait" export "$1" --csv | tail -n +2 | sort -t, -k1,1g | cut -d, -f2; }

# arrivals RUN ZERO: "time,latency_ns" per request in intended-start order,
# time in seconds since the wall-clock instant ZERO (seconds since the epoch).
arrivals() {
	local started
	started=$(sed -n 's/^ *"started": *"\(.*\)".*/\1/p' "$1/run.json")
	"$gait" export "$1" --csv | tail -n +2 | sort -t, -k1,1g |
		awk -F, -v t0="$(date -d "$started" +%s.%N)" -v zero="$2" '{ printf "%.9f,%s\n", $1 + (t0 - zero), $2 }'
}

# pair_by_time RUN_A RUN_B DIR: DIR/pair-a.csv and DIR/pair-b.csv, line i
# holding request i of RUN_A and the request of RUN_B that arrived nearest to
# it in time (the two runs start a few ms apart); DIR/pair-gap the mean
# distance in time, in seconds.
pair_by_time() {
	local zero
	zero=$(date -d "$(sed -n 's/^ *"started": *"\(.*\)".*/\1/p' "$1/run.json")" +%s.%N)
	awk -F, -v a="$3/pair-a.csv" -v b="$3/pair-b.csv" -v gap="$3/pair-gap" '
		NR == FNR { t[n] = $1; l[n] = $2; n++; next }
		FNR == 1 { print "latency_ns" > a; print "latency_ns" > b }
		{
			while (j + 1 < n && (t[j + 1] - $1) ^ 2 <= (t[j] - $1) ^ 2) j++
			print $2 > a; print l[j] > b
			d = t[j] - $1; sum += d < 0 ? -d : d; m++
		}
		END { printf "%.9f\n", sum / m > gap }' <(arrivals "$2" "$zero") <(arrivals "$1" "$zero")
}

for rate in $rates; do
	run="$out/r$rate"
	{
		echo "pass,k,latency_ns"
		for dir in "$run"/k*-p*; do
			name=${dir##*/k}
			latencies "$dir" | sed "s/^/${name#*-p},${name%-p*},/"
		done
	} >"$run/reads.csv"
	cut -d, -f2- "$run/reads.csv" >"$run/reads-by-k.csv"
	{ echo latency_ns; grep '^1,' "$run/reads-by-k.csv" | cut -d, -f2; } >"$run/reads-k1.csv"
	b=$bound
	if [[ -z "$b" ]]; then
		# The k = 1 p99 (numpy's linear quantile), to two significant digits.
		b=$(tail -n +2 "$run/reads-k1.csv" | sort -n | awk '{ x[NR] = $1 } END {
			h = (NR - 1) * 0.99; i = int(h); p = x[i + 1] + (h - i) * (x[i + 2] - x[i + 1])
			e = 10 ^ (int(log(p / 1000) / log(10)) - 1); b = int(p / 1000 / e + 0.5) * e
			if (b >= 1000) printf "%gms", b / 1000; else printf "%dus", b }')
	fi
	echo "$b" >"$run/bound"
	"$gait" analyze "$run/reads-by-k.csv" --bound "$b" --format json >"$run/analyze.json"
	"$gait" analyze "$run/reads-by-k.csv" --bound "$b" >"$run/analyze.txt"
	"$gait" analyze "$run/reads.csv" --bound "$b" --format json >"$run/analyze-passes.json"
	# The model's rate: what the k = 1 runs measured, all passes together.
	measured=$(for dir in "$run"/k1-p*; do echo "$(summary_field "$dir" requests) $(summary_field "$dir" duration)"; done |
		awk '{ n += $1; t += $2 } END { printf "%.1f", n / t }')
	echo "$measured" >"$run/rate"
	predict() {
		"$gait" model predict --service "$run/reads-k1.csv" --net 0 --bound "$b" --duplicates 1,2,4,8 \
			--replicas 1 --format json "$@"
	}
	predict --rate "$measured" >"$run/predict.json"
	predict --rate 0.001 >"$run/predict-noqueue.json"

	pair_by_time "$run/pair-a" "$run/pair-b" "$run"
	"$gait" model independence "$run/pair-a.csv" "$run/pair-b.csv" --format json >"$run/independence.json"
	"$gait" model independence "$run/pair-a.csv" "$run/pair-b.csv" --html "$run/independence.html" \
		>"$run/independence.txt"
	# Control: request i of one run against the partner of request i + 2·rate,
	# 2 s later (half the pair run if that is shorter than 4 s). Coincidence
	# that is there only for requests at the same moment comes from what the
	# two replicas share at that moment.
	pairs=$(($(wc -l <"$run/pair-a.csv") - 1))
	shift=$((2 * rate < pairs / 2 ? 2 * rate : pairs / 2))
	echo "$shift" >"$run/pair-shift"
	head -n -"$shift" "$run/pair-a.csv" >"$run/pair-a-early.csv"
	{ echo latency_ns; tail -n +$((shift + 2)) "$run/pair-b.csv"; } >"$run/pair-b-late.csv"
	"$gait" model independence "$run/pair-a-early.csv" "$run/pair-b-late.csv" --format json \
		>"$run/independence-shifted.json"
done

go run ./scripts/replica-sla-report "$out"
if command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then
	HEIGHT=${HEIGHT:-1900} scripts/screenshot.sh "$out/replica-sla-figure.html" "$out/replica-sla.png" >/dev/null
	echo "figure: $out/replica-sla.png" >&2
fi
