#!/bin/sh
# Installs the Debian packages gait needs, only those missing; safe to run
# again. apt-get update runs only when something must be installed.
set -eu
packages="redis-server redis-sentinel redis-tools etcd-server etcd-client zookeeper fuse3 iproute2 util-linux python3-numpy python3-scipy fio bc jq stress-ng maven openjdk-17-jdk-headless openssh-server sudo"
# kazoo from PyPI, ZooKeeper's Python client, in a venv of its own: gait
# replica's ZooKeeper tests run its recipes (they skip them without it).
kazoo="$HOME/.cache/gait/kazoo"
if ! "$kazoo/bin/python" -c 'import kazoo' 2>/dev/null; then
	{ python3 -m venv "$kazoo" && "$kazoo/bin/pip" install -q kazoo==2.11.0; } >/dev/null 2>&1 ||
		echo "install-deps: kazoo not installed; gait replica's ZooKeeper tests skip its recipes" >&2
fi
missing=""
for p in $packages; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing Debian packages:$missing; run as root or install them" >&2
	exit 1
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing >/dev/null
# The packaged servers must not run as system services: gait starts its own
# (sshd too: the many-machines test runs its own, one per test machine).
for s in redis-server redis-sentinel etcd zookeeper ssh; do
	systemctl disable --now "$s" >/dev/null 2>&1 || service "$s" stop >/dev/null 2>&1 || true
done
