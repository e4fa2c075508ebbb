#!/bin/bash
# emulate-bench.sh: issue 11's bandwidth goal for the emulating file system,
# in one run, on the file system that holds DIR. For each write size (64 KiB,
# a DataNode's packet, and 1 MiB):
#   - the raw disk: dd if=/dev/zero oflag=direct (and fio, if installed);
#   - gait's synthetic stream into /dev/null, by 1 writer and by WRITERS
#     at once (the writers' own ceiling: no file system can be faster);
#   - gait's synthetic stream written through `gait emulate mount` (direct
#     I/O, its default) by 1 writer, then by WRITERS writers at once, each
#     file fsynced (`sync FILE`) inside the timing;
#   - the same through a second mount with --write-back (the kernel's
#     write-back cache), as a peer, unless WRITEBACK=0;
#   - with BENCH (a test binary of internal/limpfs, `go test -c`), its
#     BenchmarkEmulateWrite beside them in each round, by 1 and by 4
#     writers: the same bytes copied into memory (memcpy), the raw disk
#     with O_DIRECT, a FUSE file system that does nothing with its writes
#     (the ceiling of any FUSE file system here) and an emulating mount,
#     each writer generating its bytes in process;
#   - the store's compression ratio (`gait emulate stats`);
#   - LITERAL bytes of random data (incompressible: the store keeps them
#     as they are) through a fresh mount, fsync included, as the control
#     that the store's own writes reach the disk at the disk's speed (a
#     fresh one: in a mount whose checksum index is full of the synthetic
#     rows' sums, every word of random data is looked up in it).
# Raw and emulated alternate ROUNDS times, so load from other processes
# falls on both. Needs root (FUSE, O_DIRECT).
#
# RAW_LIMIT=100MB/s gives the disk Exalt's speed: the script moves itself,
# and so every process it starts (dd, fio, the writers, the mount's server
# and so the store's writes), into a cgroup whose block-I/O throttle caps
# writes to the disk holding DIR (cgroup v2 io.max wbps where the io
# controller is on the v2 hierarchy, else v1 blkio.throttle.write_bps_device,
# the same kernel throttle). Writes the kernel's flusher threads issue for
# dirty pages are charged to no cgroup and escape it; the literal control
# shows whether the store's writes were held to the limit.
#
#   sudo scripts/emulate-bench.sh [DIR]
#   env: GAIT (gait binary), SIZE (per writer, default 2GiB), RAW (default
#        1GiB), WRITERS (default 2), ROUNDS (default 2), SIZES (default
#        "64KiB 1MiB"), WRITEBACK (default 1), LITERAL (default 512MiB,
#        0 for none), RAW_LIMIT (default none: 100MB/s, 100MiB/s or bytes
#        per second), BENCH (default none), BENCHTIME (default 2s),
#        REPEAT (default 1: how many times BENCH's peers run, one after
#        another, for each write size; each figure is then the median, and
#        the emulating/null ratio the median of the repetitions' ratios,
#        which a shared machine's bursts of load move far less)
set -euo pipefail

GAIT=${GAIT:-gait}
DIR=${1:-/var/tmp/gait-emulate-bench}
SIZE=${SIZE:-2GiB}
RAW=${RAW:-1GiB}
WRITERS=${WRITERS:-2}
ROUNDS=${ROUNDS:-2}
SIZES=${SIZES:-64KiB 1MiB}
WRITEBACK=${WRITEBACK:-1}
LITERAL=${LITERAL:-512MiB}
RAW_LIMIT=${RAW_LIMIT:-}
BENCH=${BENCH:-}
BENCHTIME=${BENCHTIME:-2s}
REPEAT=${REPEAT:-1}

bytes() { # 2GiB -> 2147483648
	local n=${1%%[KMG]iB} u=${1##*[0-9]}
	case $u in KiB) echo $((n << 10)) ;; MiB) echo $((n << 20)) ;; GiB) echo $((n << 30)) ;; *) echo "$1" ;; esac
}
now() { date +%s.%N; }
rate() { awk -v b="$1" -v t0="$2" -v t1="$3" 'BEGIN { printf "%.0f", b / (t1 - t0) }'; }
mbs() { awk -v r="$1" 'BEGIN { printf "%6.0f MB/s", r / 1e6 }'; }
times() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%4.1fx", a / b }'; }

# rate_limit 100MB/s -> 100000000: a bandwidth in bytes per second.
rate_limit() {
	case $1 in
	*[0-9]MB/s) echo $((${1%MB/s} * 1000000)) ;;
	*[0-9]MiB/s) echo $((${1%MiB/s} << 20)) ;;
	*[!0-9]* | "") echo "RAW_LIMIT=$1: not a bandwidth (100MB/s, 100MiB/s or bytes per second)" >&2 && return 1 ;;
	*) echo "$1" ;;
	esac
}

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
pids=()
cgroup= cgroup_root= io_enabled=
lit=/dev/shm/gait-emulate-bench-literal.$$
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	rm -rf "$DIR/store" "$DIR/store-wb" "$DIR/store-lit" "$DIR/raw" "$DIR"/mount*.out
	rm -f "$lit"
	rmdir "$DIR/mnt" "$DIR/mnt-wb" "$DIR/mnt-lit" 2>/dev/null || true
	if [ -n "$cgroup" ]; then
		echo $$ >"$cgroup_root/cgroup.procs"
		rmdir "$cgroup"
	fi
	# Only if no one else has started using it meanwhile.
	[ -z "$io_enabled" ] || echo -io >"$io_enabled/cgroup.subtree_control" 2>/dev/null || true
}
trap cleanup EXIT

# limit_disk BYTES_PER_SECOND: this shell and its children into a cgroup
# whose writes to the whole disk under DIR are throttled; cleanup puts the
# shell back where it was and removes the cgroup.
limit_disk() {
	local bps=$1 dev disk majmin v2
	dev=$(findmnt -no SOURCE -T "$DIR")
	disk=$(lsblk -no PKNAME "$dev" 2>/dev/null | head -1)
	# The throttle takes whole disks only, not partitions.
	majmin=$(lsblk -dno MAJ:MIN "/dev/${disk:-${dev#/dev/}}" | tr -d ' ')
	v2=$(findmnt -rno TARGET -t cgroup2 | head -1)
	if [ -n "$v2" ] && grep -qw io "$v2/cgroup.controllers"; then
		cgroup_root=$v2$(sed -n 's/^0:://p' /proc/self/cgroup)
		file=io.max setting="$majmin wbps=$bps"
		if ! grep -qw io "$v2/cgroup.subtree_control"; then
			echo +io >"$v2/cgroup.subtree_control"
			io_enabled=$v2
		fi
		cgroup=$v2/gait-emulate-bench
	else
		cgroup_root=$(findmnt -rno TARGET -t cgroup -O blkio | head -1)
		[ -n "$cgroup_root" ] || { echo "RAW_LIMIT: no cgroup io (v2) or blkio (v1) controller mounted" >&2 && exit 1; }
		cgroup=$cgroup_root/gait-emulate-bench
		cgroup_root+=$(sed -n 's/^[0-9]*:\([^:]*,\)\{0,1\}blkio\(,[^:]*\)\{0,1\}://p' /proc/self/cgroup)
		file=blkio.throttle.write_bps_device setting="$majmin $bps"
	fi
	rmdir "$cgroup" 2>/dev/null || true # left by a run killed with SIGKILL
	mkdir "$cgroup"
	echo "$setting" >"$cgroup/$file"
	echo $$ >"$cgroup/cgroup.procs"
	limit_how="$cgroup/$file \"$(cat "$cgroup/$file")\" on $dev"
}
if [ -n "$RAW_LIMIT" ]; then
	bps=$(rate_limit "$RAW_LIMIT")
	limit_disk "$bps"
fi

# mount NAME [FLAGS...]: serve $DIR/NAME from $DIR/store${NAME#mnt}.
mount() {
	local name=$1
	shift
	rm -rf "$DIR/store${name#mnt}"
	mkdir -p "$DIR/$name"
	"$GAIT" emulate mount "$DIR/$name" --store "$DIR/store${name#mnt}" "$@" >"$DIR/mount-$name.out" &
	pids+=($!)
	for _ in $(seq 100); do grep -q mounted "$DIR/mount-$name.out" 2>/dev/null && return; sleep 0.1; done
	echo "gait emulate mount $* did not come up" >&2
	exit 1
}
mount mnt
mounts=(mnt)
if [ "$WRITEBACK" = 1 ]; then
	mount mnt-wb --write-back
	mounts+=(mnt-wb)
fi

raw_bytes=$(bytes "$RAW")
size_bytes=$(bytes "$SIZE")

# write MNT WRITERS WS SEED: the stream through the mount, fsync included;
# prints bytes per second over all writers.
write() {
	local mnt=$1 n=$2 ws=$3 seed=$4 t0 t1 w
	local ws_pids=()
	t0=$(now)
	for w in $(seq "$n"); do
		{ "$GAIT" emulate gen --seed $((seed * 100 + w)) --bytes "$SIZE" --write-size "$ws" >"$DIR/$mnt/f-$seed-$w" && sync "$DIR/$mnt/f-$seed-$w"; } &
		ws_pids+=($!)
	done
	wait "${ws_pids[@]}"
	t1=$(now)
	rate $((size_bytes * n)) "$t0" "$t1"
}

# write_null WRITERS WS: the stream into /dev/null by WRITERS writers at
# once; prints bytes per second over all writers.
write_null() {
	local n=$1 ws=$2 t0 t1 w
	local ws_pids=()
	t0=$(now)
	for w in $(seq "$n"); do
		"$GAIT" emulate gen --seed "$w" --bytes "$SIZE" --write-size "$ws" >/dev/null &
		ws_pids+=($!)
	done
	wait "${ws_pids[@]}"
	t1=$(now)
	rate $((size_bytes * n)) "$t0" "$t1"
}

# ceiling WS: BenchmarkEmulateWrite's peers for writes of WS, 1 and 4
# writers, on the disk under DIR (its temporary directories there), REPEAT
# times one after another; one line of MB/s (medians).
ceiling() {
	local kib=$(($(bytes "$1") >> 10)) out="" i
	for i in $(seq "$REPEAT"); do
		out+=$(cd "$DIR" && TMPDIR=$DIR "$BENCH" -test.run '^$' -test.benchtime "$BENCHTIME" \
			-test.bench "EmulateWrite/^(memcpy|raw-disk-odirect|null-fuse|emulating)\$/^${kib}KiB(-x4)?\$")
		out+=$'\n'"repetition done"$'\n'
	done
	echo "$out" | awk -v ws="$1" -v reps="$REPEAT" '
		function median(key,   n, i, j, a, t) {
			n = split(vals[key], a, " ")
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
			return n ? (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2) : 0
		}
		/^BenchmarkEmulateWrite\// {
			split($1, n, "/"); sub(/-[0-9]+$/, "", n[3]); w = n[3] ~ /x4/ ? "x4" : "x1"
			for (i = 2; i < NF; i++) {
				if ($(i + 1) == "MB/s") { vals[n[2] "," w] = vals[n[2] "," w] " " $i; r[n[2] "," w] = $i }
				if ($(i + 1) == "cpu-ms/GiB") vals["cpu," n[2] "," w] = vals["cpu," n[2] "," w] " " $i
				if ($(i + 1) == "%fsync") vals["fsync," n[2] "," w] = vals["fsync," n[2] "," w] " " $i
			}
		}
		/^repetition done/ {
			if (r["null-fuse,x1"] > 0) vals["ratio,x1"] = vals["ratio,x1"] " " r["emulating,x1"] / r["null-fuse,x1"]
			if (r["null-fuse,x4"] > 0) vals["ratio,x4"] = vals["ratio,x4"] " " r["emulating,x4"] / r["null-fuse,x4"]
		}
		END {
			printf "  in process, %s writes (MB/s, 1 writer / 4%s):", ws, (reps > 1 ? ", medians of " reps : "")
			split("memcpy raw-disk-odirect null-fuse emulating", t, " ")
			for (k = 1; k <= 4; k++) { m1[t[k]] = median(t[k] ",x1"); m4[t[k]] = median(t[k] ",x4"); printf " %s %.0f / %.0f |", t[k], m1[t[k]], m4[t[k]] }
			printf " null vs raw %.1fx / %.1fx, emulating vs raw %.1fx / %.1fx, emulating vs null %.2f / %.2f",
				m1["null-fuse"] / m1["raw-disk-odirect"], m4["null-fuse"] / m4["raw-disk-odirect"],
				m1["emulating"] / m1["raw-disk-odirect"], m4["emulating"] / m4["raw-disk-odirect"],
				median("ratio,x1"), median("ratio,x4")
			if (reps > 1) printf " (each repetition: %s /%s)", vals["ratio,x1"], vals["ratio,x4"]
			# Where the gap between them goes: CPU per GiB (the writers
			# and the in-process server), and the share of the time the writers spend in fsync.
			printf "; cpu-ms/GiB null %.0f / %.0f, emulating %.0f / %.0f; %% of writer time in fsync null %.1f / %.1f, emulating %.1f / %.1f",
				median("cpu,null-fuse,x1"), median("cpu,null-fuse,x4"), median("cpu,emulating,x1"), median("cpu,emulating,x4"),
				median("fsync,null-fuse,x1"), median("fsync,null-fuse,x4"), median("fsync,emulating,x1"), median("fsync,emulating,x4")
			printf "\n"
		}'
}

echo "file system of $DIR: $(df -T "$DIR" | awk 'NR == 2 { print $1, $2 }'); $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%H:%M) UTC"
[ -n "$RAW_LIMIT" ] && echo "disk writes limited to $RAW_LIMIT for every process of this script: $limit_how"
echo "raw: dd if=/dev/zero oflag=direct, $RAW; emulated: gait emulate gen --write-size WS > FILE; sync FILE, $SIZE per writer"
seed=0
for round in $(seq "$ROUNDS"); do
	for ws in $SIZES; do
		wsb=$(bytes "$ws")
		t0=$(now)
		dd if=/dev/zero of="$DIR/raw" bs="$wsb" count=$((raw_bytes / wsb)) oflag=direct status=none
		t1=$(now)
		rm -f "$DIR/raw"
		raw=$(rate "$raw_bytes" "$t0" "$t1")

		t0=$(now)
		"$GAIT" emulate gen --seed 0 --bytes "$SIZE" --write-size "$ws" >/dev/null
		t1=$(now)
		null=$(rate "$size_bytes" "$t0" "$t1")
		nullpar=$(write_null "$WRITERS" "$ws")

		line=$(printf "round %d, %-5s writes: raw %s | gen > /dev/null: 1 writer %s (%s), %d writers %s (%s)" "$round" "$ws" "$(mbs "$raw")" "$(mbs "$null")" "$(times "$null" "$raw")" "$WRITERS" "$(mbs "$nullpar")" "$(times "$nullpar" "$raw")")
		for m in "${mounts[@]}"; do
			seed=$((seed + 1))
			one=$(write "$m" 1 "$ws" "$seed")
			seed=$((seed + 1))
			par=$(write "$m" "$WRITERS" "$ws" "$seed")
			label=emulated
			[ "$m" = mnt-wb ] && label=write-back
			line+=$(printf " | %s: 1 writer %s (%s), %d writers %s (%s)" "$label" "$(mbs "$one")" "$(times "$one" "$raw")" "$WRITERS" "$(mbs "$par")" "$(times "$par" "$raw")")
		done
		echo "$line"
		[ -z "$BENCH" ] || ceiling "$ws"
	done
done
if command -v fio >/dev/null; then
	for ws in $SIZES; do
		fio --name=raw --filename="$DIR/raw" --rw=write --bs="$(bytes "$ws")" --size="$raw_bytes" --direct=1 --ioengine=psync \
			--output-format=normal 2>/dev/null | grep -E '^ +WRITE:' | sed "s/^ */fio, raw disk, $ws O_DIRECT: /"
		rm -f "$DIR/raw"
	done
fi
echo "store (every file the emulated rows wrote): $("$GAIT" emulate stats "$DIR/store")"
echo "store on disk: $(du -s -B1 "$DIR/store" | cut -f1) bytes allocated (du, directories included)"
if [ "$LITERAL" != 0 ]; then
	# Random bytes from memory, so that neither the source nor the
	# generator limits the rate; the raw disk once more beside them.
	literal_bytes=$(bytes "$LITERAL")
	head -c "$literal_bytes" /dev/urandom >"$lit"
	mount mnt-lit
	t0=$(now)
	dd if="$lit" of="$DIR/mnt-lit/literal" bs=1M status=none && sync "$DIR/mnt-lit/literal"
	t1=$(now)
	lit_rate=$(rate "$literal_bytes" "$t0" "$t1")
	t0=$(now)
	dd if="$lit" of="$DIR/raw" bs=1M oflag=direct status=none
	t1=$(now)
	rm -f "$DIR/raw"
	lit_raw=$(rate "$literal_bytes" "$t0" "$t1")
	# The store writes through the page cache and fsyncs, as this does.
	t0=$(now)
	dd if="$lit" of="$DIR/raw" bs=1M conv=fsync status=none
	t1=$(now)
	rm -f "$lit" "$DIR/raw"
	lit_buf=$(rate "$literal_bytes" "$t0" "$t1")
	echo "random data ($LITERAL, 1 MiB writes, fsync included): through a fresh mount $(mbs "$lit_rate") | raw disk, O_DIRECT $(mbs "$lit_raw") ($(times "$lit_rate" "$lit_raw")) | raw disk, page cache + fsync $(mbs "$lit_buf") ($(times "$lit_rate" "$lit_buf"))"
	echo "its store: $("$GAIT" emulate stats "$DIR/store-lit")"
fi
