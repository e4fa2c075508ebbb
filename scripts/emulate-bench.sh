#!/bin/bash
# emulate-bench.sh: issue 11's goals for the emulating file system, in one
# run, on the file system that holds DIR:
#   - the raw disk: dd oflag=direct, 64 KiB writes (and fio, if installed);
#   - gait's synthetic stream into /dev/null (the pipeline's ceiling);
#   - gait's synthetic stream written through `gait emulate mount` in
#     64 KiB writes with dd (conv=fsync: the time includes making it
#     durable), by 1 writer and by WRITERS writers at once;
#   - the store's compression ratio (`gait emulate stats`).
# Raw and emulated alternate ROUNDS times, so load from other processes
# falls on both. Needs root (FUSE, O_DIRECT).
#
#   sudo scripts/emulate-bench.sh [DIR]
#   env: GAIT (gait binary), SIZE (per writer, default 2GiB), RAW (default
#        1GiB), WRITERS (default 4), ROUNDS (default 2)
set -euo pipefail

GAIT=${GAIT:-gait}
DIR=${1:-/var/tmp/gait-emulate-bench}
SIZE=${SIZE:-2GiB}
RAW=${RAW:-1GiB}
WRITERS=${WRITERS:-4}
ROUNDS=${ROUNDS:-2}

bytes() { # 2GiB -> 2147483648
	local n=${1%%[KMG]iB} u=${1##*[0-9]}
	case $u in KiB) echo $((n << 10)) ;; MiB) echo $((n << 20)) ;; GiB) echo $((n << 30)) ;; *) echo "$1" ;; esac
}
now() { date +%s.%N; }
rate() { awk -v b="$1" -v t0="$2" -v t1="$3" 'BEGIN { printf "%.0f", b / (t1 - t0) }'; }
mbs() { awk -v r="$1" 'BEGIN { printf "%8.0f MB/s", r / 1e6 }'; }

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
store=$DIR/store mnt=$DIR/mnt
rm -rf "$store" "$DIR/raw"
mkdir -p "$mnt"
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$store" "$DIR/raw" "$DIR/mount.out"
	rmdir "$mnt" 2>/dev/null || true
}
trap cleanup EXIT

"$GAIT" emulate mount "$mnt" --store "$store" >"$DIR/mount.out" &
pid=$!
for _ in $(seq 100); do grep -q mounted "$DIR/mount.out" 2>/dev/null && break; sleep 0.1; done
grep -q mounted "$DIR/mount.out" || { echo "gait emulate mount did not come up" >&2; exit 1; }

raw_bytes=$(bytes "$RAW")
size_bytes=$(bytes "$SIZE")
echo "file system of $DIR: $(df -T "$DIR" | awk 'NR == 2 { print $1, $2 }'); $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "raw: dd oflag=direct bs=64K, $RAW; emulated: gait emulate gen | dd bs=64K conv=fsync, $SIZE per writer"
for round in $(seq "$ROUNDS"); do
	t0=$(now)
	dd if=/dev/zero of="$DIR/raw" bs=64K count=$((raw_bytes >> 16)) oflag=direct status=none
	t1=$(now)
	rm -f "$DIR/raw"
	raw=$(rate "$raw_bytes" "$t0" "$t1")

	# The same pipeline into /dev/null: the ceiling without a file system.
	t0=$(now)
	"$GAIT" emulate gen --seed "$round" --bytes "$SIZE" | dd of=/dev/null bs=64K iflag=fullblock status=none
	t1=$(now)
	null=$(rate "$size_bytes" "$t0" "$t1")

	t0=$(now)
	"$GAIT" emulate gen --seed "$round" --bytes "$SIZE" | dd of="$mnt/one-$round" bs=64K iflag=fullblock conv=fsync status=none
	t1=$(now)
	one=$(rate "$size_bytes" "$t0" "$t1")

	t0=$(now)
	writers=()
	for w in $(seq "$WRITERS"); do
		"$GAIT" emulate gen --seed $((round * 100 + w)) --bytes "$SIZE" | dd of="$mnt/par-$round-$w" bs=64K iflag=fullblock conv=fsync status=none &
		writers+=($!)
	done
	wait "${writers[@]}"
	t1=$(now)
	par=$(rate $((size_bytes * WRITERS)) "$t0" "$t1")

	printf "round %d: raw %s | gen | dd of=/dev/null %s | emulated, 1 writer %s (%.1fx raw) | %d writers %s (%.1fx raw)\n" "$round" \
		"$(mbs "$raw")" "$(mbs "$null")" "$(mbs "$one")" "$(awk -v a="$one" -v b="$raw" 'BEGIN { print a / b }')" \
		"$WRITERS" "$(mbs "$par")" "$(awk -v a="$par" -v b="$raw" 'BEGIN { print a / b }')"
done
if command -v fio >/dev/null; then
	fio --name=raw --filename="$DIR/raw" --rw=write --bs=64k --size="${RAW%iB}" --direct=1 --ioengine=psync \
		--output-format=normal 2>/dev/null | grep -E '^ +WRITE:' | sed 's/^ */fio, raw disk, 64k O_DIRECT: /'
	rm -f "$DIR/raw"
fi
echo "store: $("$GAIT" emulate stats "$store")"
echo "store on disk: $(du -s -B1 "$store" | cut -f1) bytes allocated (du, directories included)"
