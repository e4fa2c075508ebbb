#!/bin/sh
# redis-suite.sh [UNIT...]: runs Redis's own tcl test suite, of the release
# the installed redis-server is, unpatched, against a plain redis-server and
# against a gait replica cluster (3 voters on loopback), one unit at a time
# (./runtest --host H --port P --singledb --durable --tags -needs:repl
# --single UNIT), and prints
# per unit how many tests passed, failed (err or exception) and were skipped,
# plain next to gait. Not part of make test: it needs the suite's sources.
#
# The sources: $REDIS_SRC if set (a redis checkout of that release: runtest
# and tests/), else a cache directory
# ${XDG_CACHE_HOME:-$HOME/.cache}/gait/redis-VERSION, cloned from GitHub the
# first time. Logs go to $OUT (default a new directory in /tmp, named at the
# end): UNIT.plain.log and UNIT.gait.log per unit, and counts.tsv.
#
# --durable keeps a unit running past a test that raised an error (without it
# the first refused command ends the whole unit, and the counts would say
# nothing of the rest); the plain server runs with enable-debug-command yes,
# as the suite's own servers do. TAGS (default -needs:repl) leaves out the
# tests that attach to the server as a replica (SYNC), which gait refuses on
# purpose and which hang against a plain server that shares the machine: its
# BGSAVE child may sleep on a key-save delay an earlier test left configured.
# GAIT is the gait binary (default: built from this checkout). UNIT_TIMEOUT
# bounds each unit (default 600 s); BASEPORT (default 21111; the gait side
# uses BASEPORT+100) moves the ports the harness listens on, for two runs side
# by side. Each unit runs against a new redis-server and a new cluster, the
# two sides at the same time. The cluster runs with --script-commandstats
# (the commands scripts call count in INFO commandstats, as the suite's
# tests of them want; off by default, as it costs EVAL a third).
set -eu

repo=$(cd "$(dirname "$0")/.." && pwd)
version=$(redis-server --version | sed -n 's/.* v=\([0-9.]*\) .*/\1/p')
[ -n "$version" ] || { echo "redis-suite: cannot read the version from redis-server --version" >&2; exit 1; }
src=${REDIS_SRC:-${XDG_CACHE_HOME:-$HOME/.cache}/gait/redis-$version}
if [ ! -x "$src/runtest" ]; then
	if [ -n "${REDIS_SRC:-}" ]; then
		echo "redis-suite: REDIS_SRC=$src has no runtest" >&2
		exit 1
	fi
	mkdir -p "$(dirname "$src")"
	git clone -q --depth 1 --branch "$version" https://github.com/redis/redis "$src.tmp"
	mv "$src.tmp" "$src"
fi
command -v tclsh >/dev/null || { echo "redis-suite: tclsh not found (apt-get install tcl)" >&2; exit 1; }

out=${OUT:-$(mktemp -d /tmp/redis-suite-XXXXXX)}
mkdir -p "$out"
work=$(mktemp -d /tmp/redis-suite-run-XXXXXX)
plainpid= gaitpid=
cleanup() {
	[ -z "$plainpid" ] || kill "$plainpid" 2>/dev/null || true
	[ -z "$gaitpid" ] || { kill -TERM "$gaitpid" 2>/dev/null || true; wait "$gaitpid" 2>/dev/null || true; }
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ $# -eq 0 ]; then
	# Every unit of the suite's own list that runs against an external server.
	set -- $(sed -n '/^set ::all_tests {/,/^}/p' "$src/tests/test_helper.tcl" | grep -o 'unit/[a-z0-9/_-]*')
fi

gait=${GAIT:-}
if [ -z "$gait" ]; then
	gait=$work/gait
	(cd "$repo" && go build -o "$gait" ./cmd/gait)
fi

# Each unit gets a new plain redis-server and a new gait cluster: the suite
# leaves configuration behind (a key-save delay left by one unit made the
# next unit's DEBUG RELOAD sleep for minutes), and the two sides must start
# alike.
start_servers() { # start_servers UNITDIR
	# A free port for the plain server: the kernel picks one for a listener we close.
	plainport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	mkdir -p "$1"
	redis-server --port "$plainport" --bind 127.0.0.1 --save '' --appendonly no --dir "$1" \
		--enable-debug-command yes --logfile "$1/plain.log" &
	plainpid=$!
	"$gait" replica cluster --loopback --voters 3 --script-commandstats >"$1/gait.out" 2>"$1/gait.err" &
	gaitpid=$!
	gaitaddr=
	for _ in $(seq 1 300); do
		gaitaddr=$(sed -n 's/^redis //p' "$1/gait.out" 2>/dev/null | head -1)
		[ -n "$gaitaddr" ] && break
		kill -0 "$gaitpid" 2>/dev/null || { cat "$1/gait.err" >&2; echo "redis-suite: gait replica cluster failed" >&2; exit 1; }
		sleep 0.1
	done
	[ -n "$gaitaddr" ] || { echo "redis-suite: gait replica cluster printed no address in 30 s" >&2; exit 1; }
	gaitport=${gaitaddr##*:}
	for _ in $(seq 1 50); do
		redis-cli -p "$plainport" PING >/dev/null 2>&1 && return
		sleep 0.1
	done
	echo "redis-suite: redis-server on port $plainport does not answer" >&2
	exit 1
}

stop_servers() { # stop_servers UNITDIR
	kill "$plainpid" 2>/dev/null || true
	wait "$plainpid" 2>/dev/null || true
	# SIGTERM: sh starts background commands with SIGINT ignored. A cluster
	# that has not stopped 30 s later is killed (SIGKILL takes its
	# redis-servers with it): its stop can hang in raft's shutdown.
	kill -TERM "$gaitpid" 2>/dev/null || true
	for _ in $(seq 1 300); do
		kill -0 "$gaitpid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$gaitpid" 2>/dev/null; then
		echo "redis-suite: gait replica cluster did not stop 30 s after SIGTERM; killed" >&2
		kill -KILL "$gaitpid" 2>/dev/null || true
		rm -rf "$(sed -n 's/.*files in \(.*\)$/\1/p' "$1/gait.err" | head -1)"
	fi
	wait "$gaitpid" 2>/dev/null || true
	plainpid= gaitpid=
}

# count LOG: "ok err skip" of one unit's log; an exception counts as an error.
count() {
	sed 's/\x1b\[[0-9;]*m//g' "$1" | awk '
		/^\[ok\]:/ {ok++} /^\[(err|exception)\]:/ {err++} /^\[(skip|ignore)\]:/ {skip++}
		/^\[(timeout|TIMEOUT)\]/ {err++}
		END {printf "%d %d %d\n", ok, err, skip}'
}

run() { # run NAME PORT UNIT BASEPORT: the unit's log
	log=$out/$(echo "$3" | tr / _).$1.log
	(cd "$src" && timeout "${UNIT_TIMEOUT:-600}" ./runtest --host 127.0.0.1 --port "$2" --singledb --durable \
		--tags "${TAGS--needs:repl}" --baseport "$4" --single "$3" --clients 1 --timeout "${UNIT_TIMEOUT:-600}") >"$log" 2>&1 || true
}

printf '%-28s %8s %8s %8s   %8s %8s %8s\n' unit plain-ok err skip gait-ok err skip | tee "$out/counts.tsv"
tp=0 tg=0
base=${BASEPORT:-21111}
for unit in "$@"; do
	start_servers "$work/$(echo "$unit" | tr / _)"
	# Both sides at once, on ports of their own.
	run plain "$plainport" "$unit" "$base" &
	p=$!
	run gait "$gaitport" "$unit" $((base + 100))
	wait "$p"
	stop_servers "$work/$(echo "$unit" | tr / _)"
	u=$(echo "$unit" | tr / _)
	set -- $(count "$out/$u.plain.log") $(count "$out/$u.gait.log")
	printf '%-28s %8s %8s %8s   %8s %8s %8s\n' "$unit" "$1" "$2" "$3" "$4" "$5" "$6" | tee -a "$out/counts.tsv"
	tp=$((tp + $1)) tg=$((tg + $4))
done
printf '%-28s %8s %8s %8s   %8s\n' total "$tp" "" "" "$tg" | tee -a "$out/counts.tsv"
echo "logs in $out" >&2
