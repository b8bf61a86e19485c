#!/usr/bin/env bash
# Installs everything the rig needs on Debian 12 / Ubuntu, as root, from the distribution's
# packages and PyPI only; builds the ns-3 emulator and the BPF congestion controls.
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  python3 python3-venv python3-pip git iproute2 iputils-ping ethtool procps
  iperf3 mptcpd                      # traffic, and mptcpize for iperf3 builds without --mptcp
  build-essential pkg-config         # the ns-3 emulator is compiled against the ns3 wheel
  clang llvm libbpf-dev bpftool      # BPF congestion controls (LIA, OLIA, BALIA)
  hostapd iw                         # the real hostapd parses the rendered AP configs
  influxdb                           # the embedded time-series sink of the demo and the tests
  ansible openssh-server openssh-client
  chromium                           # renders the report in the tests
  systemd                            # systemd-analyze verifies the nightly units
)

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
.venv/bin/python -m rig.emu.build
echo "==> building the BPF congestion controls"
make -s -C nodes/bpf  # into nodes/bpf/build (rig.congestion.BUILD_DIR)
ln -sf "$PWD/.venv/bin/rig" /usr/local/bin/rig
echo "==> installed; 'rig doctor' tells what this host can do"
