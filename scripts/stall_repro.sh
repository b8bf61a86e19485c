#!/bin/sh
# A stalled MPTCP transfer outside the rig, to report upstream: two network namespaces joined by
# two links (a "WiFi" one and an "LTE" one, shaped by netem), the receiver's buffer capped as a
# seed 002 receiver-buffer run caps it, iperf3 under mptcpize sending a volume over N MPTCP
# connections with a congestion control. When no byte arrives for STALL_S, the sockets of both
# ends (ss -tnmiM) and the MPTCP/TCP counters (nstat) are printed and it exits 1; else exit 0.
# Everything it made is removed at its end. As root (Debian: iproute2, iperf3, mptcpize).
#
#   scripts/stall_repro.sh [RCVBUF_BYTES [CONNECTIONS [CC [VOLUME [TRIES]]]]]
#   scripts/stall_repro.sh 1000000 10 olia 15M 20     # seed 002's Setup I buffer condition
set -eu
RCVBUF=${1:-1000000} CONNS=${2:-10} CC=${3:-olia} VOLUME=${4:-15M} TRIES=${5:-10}
STALL_S=${STALL_S:-20}
SND=stall-snd-$$ RCV=stall-rcv-$$ NET=10.91
. "$(dirname "$0")/two_namespaces.sh"
# An 802.11g-like WiFi uplink and a slower LTE one with a deep queue (tbf: a kernel without
# sch_netem has it): the LTE subflow's data arrives late, as over the radios.
ip netns exec "$SND" tc qdisc add dev wifi root tbf rate 20mbit burst 16kb latency 20ms
ip netns exec "$SND" tc qdisc add dev lte root tbf rate 8mbit burst 16kb latency 300ms
# The receiver announces its LTE side; the sender joins it (the rig's paired paths).
ip -n "$RCV" mptcp endpoint add "$NET.2.2" dev lte signal
ip netns exec "$RCV" sysctl -qw net.ipv4.tcp_rmem="4096 $RCVBUF $RCVBUF"
ip netns exec "$SND" modprobe "tcp_$CC" 2>/dev/null || true

evidence() {
    for ns in "$RCV" "$SND"; do
        echo "== $ns: ss -tnmiM"; ip netns exec "$ns" ss -tnmiM
        echo "== $ns: nstat -az MPTcp* Tcp*"; ip netns exec "$ns" nstat -az | grep -E '^(MPTcp|Tcp)' || true
    done
}

try=1
while [ "$try" -le "$TRIES" ]; do
    ip netns exec "$RCV" mptcpize run iperf3 -s -1 -p 5399 >/dev/null 2>&1 &
    server=$!
    sleep 0.5
    ip netns exec "$SND" mptcpize run iperf3 -c "$NET.1.2" -p 5399 -P "$CONNS" -n "$VOLUME" -C "$CC" >/dev/null 2>&1 &
    client=$!
    waited=0 last=-1 still=0
    while kill -0 "$client" 2>/dev/null; do
        sleep 1
        # What the receiver's subflows have received in order (as the rig's stall check reads it)
        now=0
        for got in $(ip netns exec "$RCV" ss -HtinO state established '( sport = :5399 )' |
                     grep -o 'bytes_received:[0-9]*' | cut -d: -f2); do
            now=$((now + got))
        done
        if [ "$now" = "$last" ]; then still=$((still + 1)); else still=0 last=$now; fi
        if [ "$still" -ge "$STALL_S" ]; then
            echo "try $try: stalled ($now bytes received, none for $STALL_S s); evidence:"; evidence
            kill "$client" "$server" 2>/dev/null || true
            exit 1
        fi
        waited=$((waited + 1))
    done
    wait "$server" 2>/dev/null || true
    echo "try $try: done in about $waited s"
    try=$((try + 1))
done
echo "no stall in $TRIES tries"
