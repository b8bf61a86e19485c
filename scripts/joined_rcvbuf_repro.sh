#!/bin/sh
# A subflow whose receive buffer never grows, outside the rig, to report upstream: two network
# namespaces joined by two links (a "WiFi" one and an "LTE" one, shaped by tbf with a deep queue),
# the receiver's tcp_rmem as a rig run sets it (4096 131072 RCVBUF_MAX), iperf3 under mptcpize
# sending for SECONDS over one MPTCP connection. With WHEN=late the receiver announces its LTE
# side once the connection's receive buffer has reached RCVBUF_MAX (with early: before the
# transfer); the sender joins it, and 2 s later sets its WiFi endpoint to backup (MP_PRIO), as
# the rig's loss-aware policy does. Then it prints both ends' subflows (ss -tinmH) and exits 1
# when the joined subflow's receive buffer at the receiver is still tcp_rmem's default, else 0.
# Everything it made is removed at its end. As root (Debian: iproute2, iperf3, mptcpize).
#
#   scripts/joined_rcvbuf_repro.sh [RCVBUF_MAX [WHEN [SECONDS]]]
#   scripts/joined_rcvbuf_repro.sh 200000 late 20      # the default
#   scripts/joined_rcvbuf_repro.sh 200000 early 20     # the join before the transfer
# (Over these links the connection's buffer takes longer than the 10 s it waits to reach 1 MB;
# a smaller most shows the same.)
set -eu
RCVBUF_MAX=${1:-200000} WHEN=${2:-late} SECONDS_=${3:-20}
DEFAULT=131072
SND=rcvbuf-snd-$$ RCV=rcvbuf-rcv-$$ NET=10.92
. "$(dirname "$0")/two_namespaces.sh"
# 30 Mbit/s each, with a deep queue (tbf latency): cubic fills it, the RTT grows and with it the
# connection's receive buffer (to 200,000 within seconds; 1 MB takes longer than the wait below).
ip netns exec "$SND" tc qdisc add dev wifi root tbf rate 30mbit burst 16kb latency 200ms
ip netns exec "$SND" tc qdisc add dev lte root tbf rate 30mbit burst 16kb latency 200ms
# The sender's WiFi address as an endpoint without flags: only so that it can be set to backup.
ip -n "$SND" mptcp endpoint add "$NET.1.1" dev wifi id 1
ip netns exec "$RCV" sysctl -qw net.ipv4.tcp_rmem="4096 $DEFAULT $RCVBUF_MAX"
announce() { ip -n "$RCV" mptcp endpoint add "$NET.2.2" dev lte signal; }

# The data connection's subflows at the receiver, one line each (iperf3's control connection is
# MPTCP too, but carries less than a megabyte).
data_subflows() {
    ip netns exec "$RCV" ss -tinmHO state established '( sport = :5398 )' | grep -E 'bytes_received:[0-9]{7,}'
}
rb_of() { grep -- "$1" | grep -o 'rb[0-9]*' | head -1 | cut -c3-; }
# The data connection's own receive buffer (the MPTCP socket's; ss -M), the largest there.
connection_rb() { ip netns exec "$RCV" ss -MmH | grep -o 'rb[0-9]*' | cut -c3- | sort -n | tail -1; }

[ "$WHEN" = early ] && announce
ip netns exec "$RCV" mptcpize run iperf3 -s -1 -p 5398 >/dev/null 2>&1 &
sleep 0.5
ip netns exec "$SND" mptcpize run iperf3 -c "$NET.1.2" -p 5398 -t "$SECONDS_" -C cubic >/dev/null 2>&1 &
client=$!
if [ "$WHEN" = late ]; then
    waited=0  # in tenths of a second, at most 10 s
    while [ "$(connection_rb)" != "$RCVBUF_MAX" ] && [ "$waited" -lt 100 ]; do
        sleep 0.1; waited=$((waited + 1))
    done
    echo "the connection's receive buffer before the join: $(connection_rb) (most $RCVBUF_MAX)"
    announce
fi
sleep 2
ip -n "$SND" mptcp endpoint change id 1 backup
sleep 2
echo "== receiver (rb: its receive buffer; rcv_ssthresh: the most it offers for now)"
ip netns exec "$RCV" ss -tinmH state established '( sport = :5398 )'
echo "== sender (snd_wnd: the window the receiver offers; unacked: segments in flight)"
ip netns exec "$SND" ss -tinmH state established '( dport = :5398 )'
subflows=$(data_subflows)
first=$(echo "$subflows" | rb_of "$NET.1.2]*:5398")
joined=$(echo "$subflows" | rb_of "$NET.2.2]*:5398")
wait "$client" 2>/dev/null || true
echo "receive buffers at the receiver: first subflow ${first:-none}, joined subflow ${joined:-none} (tcp_rmem $DEFAULT .. $RCVBUF_MAX)"
if [ "${joined:-}" = "$DEFAULT" ] && [ "${first:-}" != "$DEFAULT" ]; then
    echo "reproduced: the joined subflow kept tcp_rmem's default"; exit 1
fi
echo "not reproduced"
