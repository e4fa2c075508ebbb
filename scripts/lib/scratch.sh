# Sourced by the replica benchmark scripts.
#   need NAME TOOL...   exits 1 naming the first TOOL not on PATH
#   scratch             makes a scratch directory ($work) with gait built
#                       into it (or the binary $GAIT names, built before);
#                       on exit, kills every process whose pid the script
#                       appended to $pids and removes the directory
need() {
	local name=$1; shift
	for tool in "$@"; do
		command -v "$tool" >/dev/null || { echo "$name: $tool not found" >&2; exit 1; }
	done
}
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
scratch() {
	work=$(mktemp -d)
	pids=()
	trap cleanup EXIT
	if [[ -n "${GAIT:-}" ]]; then
		cp "$GAIT" "$work/gait"
	else
		go build -o "$work/gait" ./cmd/gait
	fi
}
