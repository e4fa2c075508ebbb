#!/bin/sh
# exalt-nnbench.sh [OUT]: the Exalt case study's NameNode measurements on
# this machine, as root, from the repository root, into OUT (default
# runs/exalt), then its figures (OUT/exalt-*.html and .png):
#   ops   NNThroughputBenchmark's create, mkdirs, open, fileStatus, delete
#         against a real NameNode: 10 and 256 handlers, global and
#         fine-grained lock, peers alternating over GAIT_EXALT_ROUNDS rounds
#   dir   creates into one directory up to GAIT_EXALT_DIR_FILES entries
#   heap  NameNode heap after full GC against blocks written
#   append one file growing by 4 KiB appends (scenarios/hdfs/exalt-append-many-blocks.yaml)
# GAIT_EXALT=ops,dir,heap,append picks parts (default all). About 45
# minutes on 2 cores. It needs the jars of make deps (scripts/fetch-hadoop.sh).
set -eu
out=${1:-runs/exalt}
parts=${GAIT_EXALT:-ops,dir,heap,append}
mkdir -p "$out"
out=$(cd "$out" && pwd)
go test -c -o "$out/hdfs.test" ./internal/systems/hdfs/
go build -o "$out/gait" ./cmd/gait
for part in ops dir heap; do
	case ,$parts, in *,$part,*) ;; *) continue ;; esac
	test=$(echo "$part" | sed 's/ops/TestExaltOps/; s/dir/TestExaltOneDirectory/; s/heap/TestExaltHeap/')
	echo "exalt-nnbench: $part ($test)"
	(cd internal/systems/hdfs && GAIT_EXALT=$part GAIT_EXALT_OUT=$out \
		"$out/hdfs.test" -test.run "^$test\$" -test.v -test.count=1 -test.timeout 2h) | tee "$out/$part.log"
done
case ,$parts, in *,append,*)
	echo "exalt-nnbench: append"
	rm -rf "$out/append"
	"$out/gait" run scenarios/hdfs/exalt-append-many-blocks.yaml --out "$out/append" --html "$out/append.html"
	"$out/gait" export "$out/append/f1-r1" --csv -o "$out/append.csv"
	;;
esac
go run ./scripts/exalt-figures -in "$out" -out "$out" | while read -r page; do
	WIDTH=1000 HEIGHT=1100 scripts/screenshot.sh "$page" "${page%.html}.png"
done
