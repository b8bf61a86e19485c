# Sourced by the reproduction scripts (stall_repro.sh, joined_rcvbuf_repro.sh) with SND, RCV
# and NET set: a sender and a receiver namespace joined by two veth links, "wifi" (NET.1.0/24)
# and "lte" (NET.2.0/24), the sender at .1 and the receiver at .2 on each, MPTCP limits for one
# join (the receiver announces, the sender joins: the rig's paired paths), no cached TCP metrics
# at the sender (as on the rig's nodes), and the namespaces removed when the script exits.
#
#   SND=name-snd-$$ RCV=name-rcv-$$ NET=10.9x; . "$(dirname "$0")/two_namespaces.sh"
trap 'ip netns del "$SND" 2>/dev/null || true; ip netns del "$RCV" 2>/dev/null || true' EXIT INT TERM
ip netns add "$SND"; ip netns add "$RCV"
for link in wifi lte; do
    ip link add "$link" netns "$SND" type veth peer name "$link" netns "$RCV"
done
for ns in "$SND" "$RCV"; do ip -n "$ns" link set lo up; ip -n "$ns" link set wifi up; ip -n "$ns" link set lte up; done
ip -n "$SND" addr add "$NET.1.1/24" dev wifi; ip -n "$RCV" addr add "$NET.1.2/24" dev wifi
ip -n "$SND" addr add "$NET.2.1/24" dev lte;  ip -n "$RCV" addr add "$NET.2.2/24" dev lte
ip -n "$RCV" mptcp limits set subflows 2 add_addr_accepted 0
ip -n "$SND" mptcp limits set subflows 2 add_addr_accepted 2
ip netns exec "$SND" sysctl -qw net.ipv4.tcp_no_metrics_save=1
