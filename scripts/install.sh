#!/usr/bin/env bash
# Installs everything the rig needs on Debian 12 / Ubuntu, as root, from the distribution's
# packages and PyPI only; builds the ns-3 emulator, the BPF congestion controls and the mptcpd plugin.
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  python3 python3-minimal python3-venv python3-pip git iproute2 iputils-ping ethtool procps kmod
  iperf3 mptcpize                    # traffic; mptcpize (its own package) MPTCP-izes iperf3 3.12
  build-essential g++ make pkg-config # the ns-3 emulator is compiled against the ns3 wheel
  clang llvm libbpf-dev bpftool      # BPF congestion controls (LIA, OLIA, BALIA)
  jq                                 # the CC reproducer (nodes/bpf/repro) reads iperf3's JSON
  chrony                             # chronyc: a lab node's clock offset per run (the node agent)
  hostapd iw                         # the real hostapd parses the rendered AP configs
  mptcpd mptcpd-plugins              # the path-return test: mptcpd's path managers beside the kernel's
  gcc libmptcpd3-dev libell-dev      # the rig's mptcpd plugin (nodes/mptcpd): paths.manager userspace
  wpasupplicant libconfig9 nftables  # ... wpa_supplicant, libconfig (srsRAN's parser) and nft the nodes', eNodeB's and APs' ones
  influxdb                           # the embedded time-series sink of the demo and the tests
  ansible ansible-core openssh-server openssh-client  # Debian's 2.14: the playbooks refuse it; .venv has the pinned one
  sudo passwd                        # emulated nodes' runner account: sudo starts the agent (useradd makes it)
  chromium                           # renders the report in the tests
  systemd                            # systemd-analyze verifies the nightly units
  bash dash coreutils grep sed findutils tar util-linux mount dpkg apt  # essential already; the rig runs them
)
# Every program the rig runs (rig/ops/host_tools.py) comes from one of these packages: tests/system/test_install.py
# checks it with dpkg -S.

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "==> apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv"
  python3 -m venv .venv
fi
stamp=.venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)
if [ ! -f "$stamp" ]; then
  echo "==> pip install -e '.[test]' (ns3, pyarrow, ...)"
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e '.[test]'
  touch "$stamp"
fi

echo "==> building the ns-3 emulator"
.venv/bin/python -m rig.rigs.emulated.build
echo "==> building the BPF congestion controls"
make -s -C nodes/bpf  # into nodes/bpf/build (rig.congestion.BUILD_DIR)
echo "==> building the rig's mptcpd plugin"
make -s -C nodes/mptcpd  # into nodes/mptcpd/build (rig.rigs.mptcpd.PLUGIN_BUILD)
ln -sf "$PWD/.venv/bin/rig" /usr/local/bin/rig
echo "==> rig doctor"
if ! .venv/bin/rig doctor; then
  echo "error: scripts/install.sh: the host is not ready: rig doctor marked what is MISSING above, with the fix" >&2
  exit 1
fi
echo "==> installed"
