#!/bin/sh
# screenshot.sh HTML PNG: renders a gait report to a PNG with Debian's
# headless chromium, without network, profile or background services.
# WIDTH and HEIGHT (default 1000x2400) set the window, and so the picture.
set -eu
if [ $# -ne 2 ]; then
	echo "usage: $0 REPORT.html OUT.png" >&2
	exit 2
fi
html=$1
png=$2
[ -r "$html" ] || { echo "screenshot: cannot read $html" >&2; exit 1; }
chromium=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$chromium" ] || { echo "screenshot: chromium not found (apt-get install chromium)" >&2; exit 1; }
case $html in /*) ;; *) html=$(pwd)/$html ;; esac
case $png in /*) ;; *) png=$(pwd)/$png ;; esac
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
# chromium writes its own file: render to a temporary one in the same
# directory and rename, so PNG is never half-written.
tmp=$(dirname "$png")/.$(basename "$png").tmp.png
"$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--hide-scrollbars --user-data-dir="$profile" --screenshot="$tmp" \
	--window-size="${WIDTH:-1000},${HEIGHT:-2400}" "file://$html" >/dev/null 2>&1 || {
	rm -f "$tmp"
	echo "screenshot: chromium failed on $html" >&2
	exit 1
}
[ -s "$tmp" ] || { rm -f "$tmp"; echo "screenshot: chromium wrote no image for $html" >&2; exit 1; }
mv "$tmp" "$png"
echo "$png"
