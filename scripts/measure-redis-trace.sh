#!/bin/sh
# Measures the bundled real trace, testdata/traces/redis-loopback.csv: Debian's
# redis-server on 127.0.0.1 driven by `gait load` in closed loop with the mix
# get:50,set:50 over 1000 keys, for clients {1, 4, 16} x value size
# {64B, 1KiB, 16KiB}, REQUESTS requests per configuration. docs/traces.md
# records how the committed trace was made.
#
#   scripts/measure-redis-trace.sh [OUTPUT.csv]     (REQUESTS=20000 by default)
set -eu
cd "$(dirname "$0")/.."
out=${1:-testdata/traces/redis-loopback.csv}
requests=${REQUESTS:-20000}
gait=bin/gait
[ -x "$gait" ] || make -s build

work=$(mktemp -d "${TMPDIR:-/tmp}/gait-trace.XXXXXX")
redis_pid=""
cleanup() {
	[ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A free loopback port; redis-server cannot be told to pick one itself.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
/usr/bin/redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
	--dir "$work" --daemonize no --logfile "$work/redis.log" &
redis_pid=$!
for _ in $(seq 100); do
	redis-cli -p "$port" ping >/dev/null 2>&1 && break
	sleep 0.1
done
redis-cli -p "$port" ping >/dev/null

echo "# $(/usr/bin/redis-server --version)"
echo "# kernel $(uname -r), $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), $requests requests per configuration"
csv="$work/trace.csv"
echo "clients,value_size,op,latency_us" >"$csv"
for clients in 1 4 16; do
	for size in 64B 1KiB 16KiB; do
		run="$work/c$clients-$size"
		"$gait" load --system redis --addr "127.0.0.1:$port" --clients "$clients" \
			--mix get:50,set:50 --keys 1000 --value-size "$size" --requests "$requests" \
			--factor clients="$clients" --factor value_size="$size" \
			--pid redis="$redis_pid" --out "$run" 2>"$work/progress.log" ||
			{ cat "$work/progress.log" >&2; exit 1; }
		# export: start_s,latency_ns,op,host,outcome,clients,value_size
		"$gait" export "$run" --csv -o "$work/run.csv"
		awk -F, -v run="$run" '
			NR == 1 { next }
			$5 != "ok" { print "measure-redis-trace: request " NR-1 " of " run " ended " $5 >"/dev/stderr"; bad = 1; exit 1 }
			{ printf "%s,%s,%s,%.3f\n", $6, $7, $3, $2 / 1000 }
			END { exit bad }' "$work/run.csv" >>"$csv"
	done
done
mkdir -p "$(dirname "$out")"
mv "$csv" "$out.tmp.$$" && mv "$out.tmp.$$" "$out"
echo "wrote $out ($(wc -l <"$out") lines, $(du -h "$out" | cut -f1))"
