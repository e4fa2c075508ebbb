# Sourced by the replica benchmark scripts, after lib/scratch.sh: starting
# the peers they measure and pointing a client at a deployment's leader.
#   redis PORT ARGS...        a redis-server on 127.0.0.1 (its pid: pid_PORT)
#   gait NAME BINARY FLAGS... a 'gait replica cluster --voters 3 --metrics'
#                             (clients_NAME, metrics_NAME; its pid: pid_NAME)
#   aim PEER                  target[PEER] := the deployment's current leader
#   start_peers BEFORE FLAGS... the peers the scripts compare (below)
declare -A target=()

# redis PORT ARGS... starts a redis-server on 127.0.0.1.
redis() {
	local port=$1; shift
	mkdir -p "$work/r$port"
	redis-server --port "$port" --bind 127.0.0.1 --save "" --dir "$work/r$port" "$@" >/dev/null &
	pids+=($!)
	printf -v "pid_$port" %s "$!"
	for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && return; sleep 0.1; done
	echo "${0##*/}: redis-server on $port did not start" >&2; exit 1
}
# gait NAME BINARY FLAGS... starts a deployment and keeps its agents'
# client addresses (clients_NAME) and metrics URLs (metrics_NAME).
gait() {
	local name=$1 bin=$2; shift 2
	mkfifo "$work/$name.out"
	"$bin" replica cluster --voters 3 --metrics "$@" >"$work/$name.out" 2>"$work/$name.log" &
	pids+=($!)
	printf -v "pid_$name" %s "$!"
	exec {fd}<"$work/$name.out"
	local word addr clients=() urls=()
	while read -r -t 120 word addr <&"$fd"; do
		case $word in
		redis) clients+=("$addr") ;;
		metrics) urls+=("$addr"); [[ ${#urls[@]} -eq ${#clients[@]} ]] && break ;;
		*) echo "${0##*/}: $name: unexpected line '$word $addr'" >&2; exit 1 ;;
		esac
	done
	[[ ${#clients[@]} -gt 0 && ${#urls[@]} -eq ${#clients[@]} ]] || { echo "${0##*/}: $name did not start" >&2; cat "$work/$name.log" >&2; exit 1; }
	printf -v "clients_$name" '%s ' "${clients[@]}"
	printf -v "metrics_$name" '%s ' "${urls[@]}"
}

# aim PEER points target[PEER] at a gait deployment's current leader (its
# agent's /metrics says gait_replica_leader 1), so a handover during the run
# does not silently route the next measurement through a follower; it logs
# each move to leaders.txt.
aim() {
	local -n clients="clients_$1" urls="metrics_$1"
	[[ -v clients ]] || return 0
	local c=($clients) u=($urls) i
	for i in "${!u[@]}"; do
		# grep reads it all: with -q it would stop early and curl, cut off, would fail the pipe (pipefail).
		if curl -s --max-time 2 "${u[$i]}" | grep '^gait_replica_leader 1$' >/dev/null; then
			[[ "${target[$1]:-}" == "${c[$i]}" ]] || echo "$1 ${c[$i]}" >>"$work/leaders.txt"
			target[$1]=${c[$i]}
			return 0
		fi
	done
	target[$1]=${target[$1]:-${c[0]}}
	echo "${0##*/}: $1: no agent says it leads; measuring through ${target[$1]}" >&2
}

# linked PORT BANDWIDTH starts a redis-server without persistence on a
# testbed host of its own (a 'gait testbed up' of one host, its link shaped
# to BANDWIDTH), so a deployment on testbed hosts has a peer whose clients
# cross the same kind of link: what the link costs is then not counted as
# gait's. Sets target[plainlink].
linked() {
	local port=$1 bandwidth=$2 host addr ns rest
	mkfifo "$work/testbed.out"
	"$work/gait" testbed up --hosts 1 --bandwidth "$bandwidth" >"$work/testbed.out" 2>"$work/testbed.log" &
	pids+=($!)
	exec {fd}<"$work/testbed.out"
	while read -r -t 60 host addr ns rest <&"$fd"; do
		[[ $host == h0 ]] && break
	done
	[[ ${host:-} == h0 ]] || { echo "${0##*/}: testbed host for plainlink did not start" >&2; cat "$work/testbed.log" >&2; exit 1; }
	mkdir -p "$work/r$port"
	ip netns exec "$ns" redis-server --port "$port" --bind "$addr" --save "" --appendonly no --protected-mode no --dir "$work/r$port" >/dev/null &
	pids+=($!)
	for _ in $(seq 50); do [[ $(redis-cli -h "$addr" -p "$port" ping 2>/dev/null) == PONG ]] && break; sleep 0.1; done
	[[ $(redis-cli -h "$addr" -p "$port" ping 2>/dev/null) == PONG ]] || { echo "${0##*/}: redis-server on $ns did not start" >&2; exit 1; }
	target[plainlink]="$addr:$port"
}

# start_peers BEFORE FLAGS... starts what the replica scripts compare: a
# redis-server with appendfsync always (aof) and one without persistence
# (plain) on loopback, and gait deployments with --durability disk and
# replicated, FLAGS passed on; with BEFORE (a gait binary built from an
# older tree) also its deployments disk0 and replicated0. It sets peers (in
# the order to measure them), kinds (the gait ones) and peerpid[PEER].
start_peers() {
	local before=$1 base=$(( 20000 + RANDOM % 20000 ))
	shift
	: >"$work/leaders.txt"
	redis "$base" --appendonly yes --appendfsync always
	redis "$((base + 1))" --appendonly no
	gait disk "$work/gait" --durability disk "$@"
	gait replicated "$work/gait" --durability replicated "$@"
	target+=([aof]="127.0.0.1:$base" [plain]="127.0.0.1:$((base + 1))")
	declare -gA peerpid=([aof]=$(eval echo "\$pid_$base") [plain]=$(eval echo "\$pid_$((base + 1))") [disk]=$pid_disk [replicated]=$pid_replicated)
	peers=(aof plain disk replicated) kinds=(disk replicated)
	# On testbed hosts (no --loopback) also plain redis behind the same link.
	if [[ " $* " != *" --loopback "* ]]; then
		local bandwidth=100Mbit/s prev=
		for f in "$@"; do [[ $prev == --bandwidth ]] && bandwidth=$f; [[ $f == --bandwidth=* ]] && bandwidth=${f#--bandwidth=}; prev=$f; done
		linked "$((base + 2))" "$bandwidth"
		peerpid[plainlink]=${pids[-1]} # its redis-server (ip netns exec execs it)
		peers+=(plainlink)
	fi
	if [[ -n "$before" ]]; then
		gait disk0 "$before" --durability disk "$@"
		gait replicated0 "$before" --durability replicated "$@"
		peerpid+=([disk0]=$pid_disk0 [replicated0]=$pid_replicated0)
		peers=(aof plain ${target[plainlink]:+plainlink} disk0 disk replicated0 replicated) kinds=(disk0 disk replicated0 replicated)
	fi
}
