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
#   scale aggregate write throughput of 1 MiB creates through HDFS's client
#         against DataNodes (GAIT_EXALT_SCALE_DNS, default 3,10,30,100) on
#         emulated storage, NameNode handlers GAIT_EXALT_SCALE_PEERS (default
#         10,256; 256:fgl adds the fine-grained lock); needs about 110 MiB
#         per DataNode with 6 GiB left free
# GAIT_EXALT=ops,dir,heap,append,scale picks parts (default all). About
# an hour and a half on 2 shared cores. It needs the jars of make deps (scripts/fetch-jars.sh hadoop).
set -eu
out=${1:-runs/exalt}
parts=${GAIT_EXALT:-ops,dir,heap,append,scale}
mkdir -p "$out"
out=$(cd "$out" && pwd)
go test -c -o "$out/hdfs.test" ./internal/systems/hdfs/
go build -o "$out/gait" ./cmd/gait
for part in ops dir heap scale; do
	case ,$parts, in *,$part,*) ;; *) continue ;; esac
	test=$(echo "$part" | sed 's/ops/TestExaltOps/; s/dir/TestExaltOneDirectory/; s/heap/TestExaltHeap/; s/scale/TestExaltScale/')
	echo "exalt-nnbench: $part ($test)"
	(cd internal/systems/hdfs && GAIT_EXALT=$part GAIT_EXALT_OUT=$out \
		"$out/hdfs.test" -test.run "^$test\$" -test.v -test.count=1 -test.timeout 3h) | tee "$out/$part.log"
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
