#!/bin/sh
# Fetches Hadoop (the version java/hadoop/pom.xml names) from Maven Central
# and builds gait's HDFS client against it, then copies every jar into
# $GAIT_HADOOP (default /var/cache/gait/hadoop), where the hdfs driver looks.
# Safe to run again: it does nothing while the cache matches the pom and the
# client's source, and Maven works offline (-o) once its repository holds
# the jars. No jar is committed to the repository.
set -eu
cd "$(dirname "$0")/../java/hadoop"
dest=${GAIT_HADOOP:-/var/cache/gait/hadoop}
stamp=$(cat pom.xml $(find src -type f | sort) | sha256sum | cut -d' ' -f1)
[ -f "$dest/stamp" ] && [ "$(cat "$dest/stamp")" = "$stamp" ] && exit 0
command -v mvn >/dev/null || { echo "fetch-hadoop: mvn not found (install Debian's maven)" >&2; exit 1; }
echo "fetch-hadoop: building java/hadoop into $dest"
mvn -q -B -Dstyle.color=never -o package >/dev/null 2>&1 || mvn -q -B -Dstyle.color=never package
rm -rf "$dest.partial"
mkdir -p "$dest.partial/lib"
cp target/lib/*.jar "$dest.partial/lib/"
cp target/gait-hdfs-1.jar "$dest.partial/gait-hdfs.jar"
echo "$stamp" > "$dest.partial/stamp"
rm -rf "$dest"
mv "$dest.partial" "$dest"
