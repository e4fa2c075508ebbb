#!/usr/bin/env bash
# Throughput and latency of gait replica (3 voters on loopback) against one
# plain redis-server, with redis-benchmark, in one run: SET and GET at
# concurrency 1, 8, 32 and pipeline 1, 16 (-n REQUESTS per test, five times
# as many with -P 16). Prints a markdown table of req/s, p50 and p99 with
# gait/plain ratios (docs/replica.md).
#
#   scripts/replica-bench.sh [-n REQUESTS] [-- extra 'gait replica cluster' flags]
set -euo pipefail

requests=20000
if [[ "${1:-}" == "-n" ]]; then requests=$2; shift 2; fi
[[ "${1:-}" == "--" ]] && shift
source "$(dirname "$0")/lib/scratch.sh"
need replica-bench redis-server redis-benchmark go
scratch

port=$(( 20000 + RANDOM % 20000 ))
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" >/dev/null &
pids+=($!)

mkfifo "$work/out"
"$work/gait" replica cluster --loopback --voters 3 "$@" >"$work/out" 2>"$work/gait.log" &
pids+=($!)
exec 3<"$work/out"
read -r -t 60 word gaitaddr <&3 || { echo "replica-bench: cluster did not start" >&2; cat "$work/gait.log" >&2; exit 1; }
[[ "$word" == redis ]] || { echo "replica-bench: unexpected line '$word $gaitaddr'" >&2; exit 1; }
# The first agent bootstrapped the deployment and leads it.
gaitport=${gaitaddr##*:}
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done

# bench PORT C P -> lines "TEST rps p50 p99"
bench() {
	local n=$requests
	[[ "$3" -gt 1 ]] && n=$((requests * 5))
	redis-benchmark -h 127.0.0.1 -p "$1" -t set,get -n "$n" -c "$2" -P "$3" --csv |
		awk -F, 'NR > 1 { gsub(/"/, ""); print $1, $2, $5, $7 }' | sort
}

echo "| test | c | P | plain req/s | gait req/s | ratio | plain p50 ms | gait p50 ms | plain p99 ms | gait p99 ms |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for c in 1 8 32; do
	for p in 1 16; do
		bench "$port" "$c" "$p" >"$work/plain.txt"
		bench "$gaitport" "$c" "$p" >"$work/gait.txt"
		join "$work/plain.txt" "$work/gait.txt" | awk -v c="$c" -v p="$p" \
			'{ printf "| %s | %d | %d | %.0f | %.0f | %.3f | %.3f | %.3f | %.3f | %.3f |\n", $1, c, p, $2, $5, $5 / $2, $3, $6, $4, $7 }'
	done
done
