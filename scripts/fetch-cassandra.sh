#!/bin/sh
# Fetches Cassandra (the version java/cassandra/pom.xml names) and its
# dependencies from Maven Central, then copies every jar into
# $GAIT_CASSANDRA (default /var/cache/gait/cassandra), where the cassandra
# driver looks. Safe to run again: it does nothing while the cache matches
# the pom, and Maven works offline (-o) once its repository holds the
# jars. No jar is committed to the repository.
set -eu
cd "$(dirname "$0")/../java/cassandra"
dest=${GAIT_CASSANDRA:-/var/cache/gait/cassandra}
stamp=$(sha256sum pom.xml | cut -d' ' -f1)
[ -f "$dest/stamp" ] && [ "$(cat "$dest/stamp")" = "$stamp" ] && exit 0
command -v mvn >/dev/null || { echo "fetch-cassandra: mvn not found (install Debian's maven)" >&2; exit 1; }
echo "fetch-cassandra: fetching java/cassandra into $dest"
mvn -q -B -Dstyle.color=never -o package >/dev/null 2>&1 || mvn -q -B -Dstyle.color=never package
rm -rf "$dest.partial"
mkdir -p "$dest.partial/lib"
cp target/lib/*.jar "$dest.partial/lib/"
echo "$stamp" > "$dest.partial/stamp"
rm -rf "$dest"
mv "$dest.partial" "$dest"
