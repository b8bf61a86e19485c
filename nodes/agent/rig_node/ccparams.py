"""Run-time settings of the rig's BPF congestion controls (nodes/bpf: lia, olia, balia, rig_reno).

A fixed initial ssthresh: each of those CCs starts a connection with snd_ssthresh = N packets when
N is set for the connection's network namespace (the BPF LRU hash map `init_ssthresh`, keyed by the
namespace's cookie, one map per registered object). Set here for this process's namespace:
on a board the node itself, on the emulated rig the node's namespace. Kernel-builtin CCs (cubic,
reno) do not read it (docs/congestion-control.md, "Fixed initial ssthresh").
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys

from rig_node import validate as v
from rig_node.validate import Refused

MAP_NAME = "init_ssthresh"
# The CCs put back windows above 2^20 packets as runaway (coupled.bpf.h, CC_MAX_CWND); the kernel's
# own floor for ssthresh is 2.
MIN_PACKETS, MAX_PACKETS = 2, 1 << 20
SO_NETNS_COOKIE = 71  # socket.h; Python's socket module does not name it


def netns_cookie() -> int:
    """This process's network namespace, as the CCs see it (sock_net(sk)->net_cookie): unique for
    the kernel's lifetime, never reused by a later namespace."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        return int.from_bytes(s.getsockopt(socket.SOL_SOCKET, SO_NETNS_COOKIE, 8), sys.byteorder)


def _bpftool(*args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["bpftool", *args], capture_output=True, text=True, timeout=20)
    except FileNotFoundError:
        raise RuntimeError("bpftool is not installed (the node role's node_cc_build_packages)") from None


def _map_ids() -> list[int]:
    """The `init_ssthresh` maps of the registered objects (also of registrations that old sockets
    still hold after an unregister: writing those too is harmless)."""
    p = _bpftool("-j", "map", "show")
    if p.returncode != 0:
        raise RuntimeError(f"bpftool map show failed: {p.stderr.strip()[-300:]}")
    return [m["id"] for m in json.loads(p.stdout or "[]") if m.get("name") == MAP_NAME and m.get("type") == "lru_hash"]


def _key() -> list[str]:
    return [str(b) for b in netns_cookie().to_bytes(8, sys.byteorder)]


def _value(packets: int) -> list[str]:
    return [str(b) for b in packets.to_bytes(4, sys.byteorder)]


def checked_packets(value: object, where: str = "initial_ssthresh") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise Refused(f"{where}: {value!r} is not a whole number of packets")
    if value != 0 and not MIN_PACKETS <= value <= MAX_PACKETS:
        raise Refused(f"{where}: {value} packets is outside {MIN_PACKETS}..{MAX_PACKETS} (0: the kernel's default)")
    return value


def set_initial_ssthresh(packets: int) -> None:
    """Connections of this namespace that start with one of the rig's BPF CCs from now on get
    snd_ssthresh = `packets`; 0 = the kernel's default (infinite). Refused for a bad value;
    RuntimeError if a value is asked for and no rig CC is registered on this kernel."""
    packets = checked_packets(packets)
    ids = _map_ids()
    if not ids and packets:
        raise RuntimeError("initial_ssthresh: none of the rig's BPF congestion controls is registered on this "
                           "kernel (rig-cc-register)")
    for map_id in ids:
        if packets:
            p = _bpftool("map", "update", "id", str(map_id), "key", *_key(), "value", *_value(packets))
        else:
            p = _bpftool("map", "delete", "id", str(map_id), "key", *_key())
            if p.returncode != 0 and "No such file" in p.stderr:
                continue  # nothing was set
        if p.returncode != 0 and map_id in _map_ids():  # a map that went meanwhile does not matter
            raise RuntimeError(f"initial_ssthresh: bpftool map {map_id}: {p.stderr.strip()[-300:]}")


def initial_ssthresh() -> int:
    """The value set for this namespace (0: none), as the registered CCs will read it."""
    for map_id in _map_ids():
        p = _bpftool("-j", "map", "lookup", "id", str(map_id), "key", *_key())
        if p.returncode == 0:
            entry = json.loads(p.stdout)
            value = entry.get("value", [])
            return int.from_bytes(bytes(int(b, 16) for b in value), sys.byteorder) if value else 0
    return 0


def request(req: dict) -> dict:
    """The agent's `cc_params` request, {"op": "cc_params", "initial_ssthresh": N}: sets N for this
    node's namespace and answers with the value now set."""
    v.only(req, {"op", "initial_ssthresh"}, "cc_params")
    set_initial_ssthresh(checked_packets(v.need(req, "initial_ssthresh", "cc_params"), "cc_params.initial_ssthresh"))
    return {"initial_ssthresh": initial_ssthresh()}
