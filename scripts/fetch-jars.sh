#!/bin/sh
# Usage: scripts/fetch-jars.sh NAME
# Fetches the jars java/NAME/pom.xml names from Maven Central (and builds
# gait's own Java code there, if it has any), then copies them into
# $GAIT_<NAME> (default /var/cache/gait/NAME), where NAME's driver looks:
# dependencies in lib/, gait's own jar (target/gait-X-1.jar) as gait-X.jar.
# Safe to run again: it does nothing while the cache matches the pom and the
# source, and Maven works offline (-o) once its repository holds the jars.
# No jar is committed to the repository.
set -eu
name=${1:?usage: fetch-jars.sh NAME (a directory under java/)}
cd "$(dirname "$0")/../java/$name"
var=GAIT_$(echo "$name" | tr 'a-z-' 'A-Z_')
dest=$(eval echo "\${$var:-/var/cache/gait/$name}")
stamp=$(cat pom.xml $(find src -type f 2>/dev/null | sort) | sha256sum | cut -d' ' -f1)
[ -f "$dest/stamp" ] && [ "$(cat "$dest/stamp")" = "$stamp" ] && exit 0
command -v mvn >/dev/null || { echo "fetch-jars: mvn not found (install Debian's maven)" >&2; exit 1; }
echo "fetch-jars: fetching java/$name into $dest"
mvn -q -B -Dstyle.color=never -o package >/dev/null 2>&1 || mvn -q -B -Dstyle.color=never package
rm -rf "$dest.partial"
mkdir -p "$dest.partial/lib"
cp target/lib/*.jar "$dest.partial/lib/"
for jar in target/gait-*.jar; do
	[ -f "$jar" ] && cp "$jar" "$dest.partial/$(basename "$jar" -1.jar).jar"
done
echo "$stamp" > "$dest.partial/stamp"
rm -rf "$dest"
mv "$dest.partial" "$dest"
