# Read-only probe of a lab node for check.yml: key=value lines. $1: the LTE interface ('' if none).
lte=$1
echo "interfaces=$(ls /sys/class/net | tr '\n' ' ')"
if [ -n "$lte" ] && [ -e "/sys/class/net/$lte" ]; then
    echo "lte_mtu=$(cat "/sys/class/net/$lte/mtu")"
    echo "lte_address=$(ip -4 -o addr show dev "$lte" | awk '{ split($4, a, "/"); print a[1]; exit }')"
fi
if command -v mmcli >/dev/null 2>&1; then
    echo "modem_state=$(mmcli -m any -K 2>/dev/null | awk -F': ' '/^modem.generic.state / { print $2 }')"
fi
echo "chrony=$(chronyc -c tracking 2>/dev/null | cut -d, -f14)"
echo "ccs=$(cat /proc/sys/net/ipv4/tcp_available_congestion_control)"
echo "kernel=$(uname -r)"
if [ -e /sys/kernel/btf/vmlinux ]; then echo btf=yes; else echo btf=no; fi
echo "networkd=$(systemctl is-active systemd-networkd 2>/dev/null)"
config=$(systemd-analyze cat-config systemd/networkd.conf 2>/dev/null)
echo "foreign_rules=$(printf '%s\n' "$config" | sed -n 's/^ManageForeignRoutingPolicyRules=//p' | tail -n 1)"
echo "foreign_routes=$(printf '%s\n' "$config" | sed -n 's/^ManageForeignRoutes=//p' | tail -n 1)"
