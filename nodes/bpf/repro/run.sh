#!/bin/bash
# One run of the runaway-window reproducer (docs/congestion-control.md, "Runaway windows").
# usage: run.sh CC [SECONDS] [BUSY]
#   CC       congestion control of the MPTCP connection (min_reno, lia, reno, ...)
#   BUSY=1   a busy loop on one core during the run (the problem shows mostly under load)
# Topology (namespaces rrr$$-{c,r,s}): client with 3 addresses -- router -- server; the router
# has a 20 Mbit/s tbf towards the server and drops 0.5 % of the data packets at random (XDP).
# One 2-subflow MPTCP connection (CC) and one TCP reno connection share the bottleneck.
# Prints the MPTCP/TCP goodput ratio and the largest cwnd and ssthresh `ss` saw on a subflow.
set -euo pipefail
CC=$1; SECS=${2:-20}; BUSY=${3:-1}
HERE=$(cd "$(dirname "$0")" && pwd)
if ! grep -qw -- "$CC" /proc/sys/net/ipv4/tcp_available_congestion_control; then
	echo "run.sh: congestion control $CC is not available (start build/repro_load first for min_reno)" >&2
	exit 2
fi
BUILD=${RIG_BPF_BUILD:-$HERE/../build}
LOSS=$BUILD/loss_5000.bpf.o
[ -f "$LOSS" ] || make -s -C "$HERE/.." BUILD="$BUILD" "$LOSS"
P=rrr$$; C=$P-c; R=$P-r; S=$P-s; OUT=$(mktemp -d)
cleanup() {
	[ -n "${BP:-}" ] && kill "$BP" 2>/dev/null
	for n in $C $R $S; do ip netns pids $n 2>/dev/null | xargs -r kill 2>/dev/null; done
	sleep 0.3
	for n in $C $R $S; do ip netns del $n 2>/dev/null; done
	rm -rf "$OUT"
}
trap cleanup EXIT
for n in $C $R $S; do ip netns add $n; ip -n $n link set lo up; done
ip link add c1 netns $C type veth peer name rc netns $R
ip link add rs netns $R type veth peer name s1 netns $S
for x in "$C c1" "$R rc" "$R rs" "$S s1"; do
	set -- $x
	ip netns exec $1 ethtool -K $2 tso off gso off gro off >/dev/null 2>&1 || true
	ip -n $1 link set $2 up
done
for a in 2 3 4; do ip -n $C addr add 10.93.1.$a/24 dev c1; done
ip -n $R addr add 10.93.1.1/24 dev rc; ip -n $R addr add 10.93.2.1/24 dev rs
ip -n $S addr add 10.93.2.2/24 dev s1
ip -n $C route add default via 10.93.1.1; ip -n $S route add default via 10.93.2.1
ip netns exec $R sysctl -qw net.ipv4.ip_forward=1
for n in $C $S; do
	ip -n $n mptcp limits set subflow 4 add_addr_accepted 4
	ip netns exec $n sysctl -qw net.ipv4.tcp_no_metrics_save=1
done
ip netns exec $R tc qdisc replace dev rs root tbf rate 20mbit burst 16kb latency 50ms
ip -n $R link set dev rc xdpgeneric obj "$LOSS" sec xdp
ip -n $C mptcp endpoint add 10.93.1.3 dev c1 subflow
ip netns exec $S mptcpize run iperf3 -s -p 5201 >/dev/null 2>&1 &
ip netns exec $S iperf3 -s -p 5202 >/dev/null 2>&1 &
sleep 0.5
if [ "$BUSY" = 1 ]; then timeout $((SECS + 3)) sh -c 'while :; do :; done' & BP=$!; fi
ip netns exec $C mptcpize run iperf3 -c 10.93.2.2 -p 5201 -B 10.93.1.2 -C "$CC" -t "$SECS" -J >"$OUT/mp.json" 2>/dev/null &
MP=$!
ip netns exec $C iperf3 -c 10.93.2.2 -p 5202 -B 10.93.1.4 -C reno -t "$SECS" -J >"$OUT/tcp.json" 2>/dev/null &
TP=$!
end=$((SECONDS + SECS))
while [ $SECONDS -lt $end ]; do
	ip netns exec $C ss -tinH dst 10.93.2.2 >>"$OUT/ss.log" || true
	sleep 0.2
done
wait $MP $TP || { echo "run.sh: iperf3 failed: $(jq -r .error "$OUT/mp.json" "$OUT/tcp.json" | tr '\n' ' ')" >&2; exit 1; }
max() { grep -o " $1:[0-9]*" "$OUT/ss.log" | cut -d: -f2 | sort -n | tail -1; }
python3 - "$CC" "$(jq .end.sum_received.bits_per_second "$OUT/mp.json")" \
	"$(jq .end.sum_received.bits_per_second "$OUT/tcp.json")" "$(max cwnd)" "$(max ssthresh)" <<'PY'
import sys
cc, mp, tcp, cwnd, ssth = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5] or "-"
print(f"{cc}: ratio {mp / tcp:.2f} (MPTCP {mp / 1e6:.1f}, TCP {tcp / 1e6:.1f} Mbit/s), max cwnd {cwnd}, max ssthresh {ssth}")
PY
