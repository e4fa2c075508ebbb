#!/bin/bash
# hdfs-scale.sh: a many-DataNode scenario through `gait run`, with what
# `gait run` itself does not record: each DataNode JVM's memory (RSS and
# PSS from /proc/PID/smaps_rollup, threads) once the cluster is ready, the
# NameNode's, the machine's free memory and load average. The start-up
# time, creates and errors are gait's own (its log and summary).
#
#   sudo scripts/hdfs-scale.sh SCENARIO OUT
#   env: GAIT (gait binary, default bin/gait)
#        MINFREE (MiB, default 1536): stop the run (SIGINT to gait) if
#        the machine's available memory falls below it, so a count too
#        large for the machine ends as "memory" rather than in the OOM
#        killer, which may pick anyone's process
#
# It takes no lock itself: on a shared machine run it under the
# machine's lock (a hundred JVMs are more than 4 GiB). Every 5 s it
# notes the available memory and the load average, whose fourth field
# counts the machine's threads, in OUT.mem; it prints the figures at
# the end.
set -euo pipefail
GAIT=${GAIT:-bin/gait}
MINFREE=${MINFREE:-1536}
scenario=$1 out=$2
echo "start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
free -g | sed 's/^/free: /'
mkdir -p "$(dirname "$out")"
log=$out.log
"$GAIT" run "$scenario" --out "$out" --format json >"$out.json" 2>"$log" &
gait=$!
watch() { # OUT.mem every 5 s; SIGINT to gait below MINFREE
	local avail
	while kill -0 $gait 2>/dev/null; do
		avail=$(awk '/^MemAvailable:/ {print int($2 / 1024)}' /proc/meminfo)
		echo "$(date -u +%T) available ${avail} MiB load $(cut -d' ' -f1-4 /proc/loadavg)" >>"$out.mem"
		if ((avail < MINFREE)); then
			echo "$(date -u +%T) available ${avail} MiB < ${MINFREE} MiB: stopping the run" | tee -a "$out.mem" >&2
			kill -INT $gait
			return
		fi
		sleep 5
	done
}
watch &
watcher=$!
trap 'kill -INT $gait 2>/dev/null; wait $gait; kill $watcher 2>/dev/null' INT TERM
trap 'kill $watcher 2>/dev/null' EXIT
until grep -q "cluster ready in" "$log" 2>/dev/null; do
	kill -0 $gait 2>/dev/null || { tail -30 "$log"; exit 1; }
	sleep 2
done
sleep 10 # the DataNodes' first block reports and the clients' JVM
mem() { # pid -> "rss_kib pss_kib threads"
	awk '/^Rss:/ {r=$2} /^Pss:/ {p=$2} END {printf "%d %d ", r, p}' "/proc/$1/smaps_rollup"
	awk '/^Threads:/ {print $2}' "/proc/$1/status"
}
ours() { # pattern -> the pids of gait's descendants whose command line matches it
	local pid p
	for pid in $(pgrep -f "$1"); do
		p=$pid
		while ((p > 1)); do
			if ((p == gait)); then echo "$pid"; break; fi
			p=$(awk '/^PPid:/ {print $2}' "/proc/$p/status" 2>/dev/null) || break
			[[ -n $p ]] || break
		done
	done
}
dn=0 rss=0 pss=0 thr=0 maxpss=0
for pid in $(ours "datanode.DataNode"); do
	read -r r p t < <(mem "$pid") || continue
	dn=$((dn + 1)) rss=$((rss + r)) pss=$((pss + p)) thr=$((thr + t))
	((p > maxpss)) && maxpss=$p
done
nn=$(ours "namenode.NameNode" | head -1)
((dn > 0)) || { echo "no DataNode of this run found" >&2; wait $gait; exit 1; }
read -r nnr nnp nnt < <(mem "$nn")
echo "memory: $dn DataNodes, RSS mean $((rss / dn / 1024)) MiB, PSS mean $((pss / dn / 1024)) MiB (max $((maxpss / 1024))), threads mean $((thr / dn)); all DataNodes PSS $((pss / 1024)) MiB; NameNode RSS $((nnr / 1024)) MiB PSS $((nnp / 1024)) MiB; load $(cut -d' ' -f1-3 /proc/loadavg)"
free -m | sed 's/^/free at ready: /'
wait $gait || true
grep -E "cluster ready in|registered," "$log" | sed 's/^/gait: /'
if [[ -s $out.json ]]; then # empty when gait run was interrupted
	python3 - "$out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("summary:", json.dumps(d)[:1500])
PY
fi
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
