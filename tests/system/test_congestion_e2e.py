"""Coupled congestion control end to end: real kernel MPTCP, real iperf3, in namespaces.

Topology (namespaces from the shared `netns` fixture, removed afterwards, also on failure):

    client c1 (10.91.1.2, .3, .4) -- r1 --tbf R1--> server 10.91.100.1
    client c2 (10.91.2.2)         -- r2 --tbf R2--> server

The bottlenecks are tbf qdiscs on the routers' server-side interfaces (this kernel has no
netem, so delay is queueing delay only). Measured numbers are printed (pytest -s) and
collected in docs/congestion-control.md.
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import time
from contextlib import ExitStack, contextmanager

import pytest

from fixtures.namespaces import Namespaces
from fixtures.random_loss import random_loss
from rig import congestion

pytestmark = [pytest.mark.emulated, pytest.mark.slow]

SERVER = "10.91.100.1"
# Shared bottleneck: 50 Mbit/s with 0.1 % independent random loss. The ~217-packet queue holds both
# flows' windows (~40 packets per TCP flow at this loss rate), so losses are the random ones, and each
# subflow carries ~20 packets, enough for fast retransmit (docs/congestion-control.md, "Shared
# bottleneck").
SHARED_RATE = "50mbit"
SHARED_LOSS_PPM = 1000
PATH_RATES = ("20mbit", "10mbit")
SECONDS = 20
# a CC's share is the median of this many runs: uncoupled reno's single runs scatter wider
# (1.36-2.49 over 12 runs; docs/congestion-control.md, "Shared bottleneck")
FAIRNESS_RUNS = {"lia": 3, "olia": 3, "balia": 3, "reno": 5}
OMIT = 5  # slow start is not what the fairness goal is about
DRAINING = ("state", "established", "state", "fin-wait-1", "state", "closing", "state", "last-ack", "state", "close-wait")


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=check)


def nsx(ns: str, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return sh("ip", "netns", "exec", ns, *argv, check=check)


@pytest.fixture(scope="module")
def registered():
    before = congestion.available()
    congestion.ensure_registered(congestion.COUPLED)
    yield before
    if not set(congestion.COUPLED) & before:  # none was registered before this module: nor after it
        congestion.unregister_all()


@contextmanager
def topology(netns: Namespaces):
    """The namespaces above as {"c", "r1", "r2", "s"} -> name, made in the registry `netns` (the
    fixture, or `Namespaces(prefix)` in a measurement script), iperf3 servers running; all removed
    at the end of the block. A context manager: a test can build a fresh one per run."""
    ns = {k: netns(k) for k in ("c", "r1", "r2", "s")}
    try:
        links = [("c", "c1", "r1", "r1c"), ("c", "c2", "r2", "r2c"), ("r1", "r1s", "s", "s1"), ("r2", "r2s", "s", "s2")]
        for a, ia, b, ib in links:
            netns.veth(ns[a], ia, ns[b], ib)
            for n, i in ((a, ia), (b, ib)):
                # no offloads: each frame is one MTU packet, as on a radio
                nsx(ns[n], "ethtool", "-K", i, "tso", "off", "gso", "off", "gro", "off", check=False)
                nsx(ns[n], "ip", "link", "set", i, "up")
        addrs = [("c", "c1", "10.91.1.2/24"), ("c", "c1", "10.91.1.3/24"), ("c", "c1", "10.91.1.4/24"),
                 ("c", "c2", "10.91.2.2/24"), ("r1", "r1c", "10.91.1.1/24"), ("r1", "r1s", "10.91.11.1/24"),
                 ("r2", "r2c", "10.91.2.1/24"), ("r2", "r2s", "10.91.12.1/24"), ("s", "s1", "10.91.11.2/24"),
                 ("s", "s2", "10.91.12.2/24"), ("s", "lo", f"{SERVER}/32")]
        for n, dev, addr in addrs:
            nsx(ns[n], "ip", "addr", "add", addr, "dev", dev)
        nsx(ns["c"], "ip", "route", "add", "default", "via", "10.91.1.1")
        nsx(ns["c"], "ip", "route", "add", "default", "via", "10.91.2.1", "table", "102")
        nsx(ns["c"], "ip", "rule", "add", "from", "10.91.2.2", "table", "102")
        for r, via in (("r1", "10.91.11.2"), ("r2", "10.91.12.2")):
            nsx(ns[r], "sysctl", "-qw", "net.ipv4.ip_forward=1")
            nsx(ns[r], "ip", "route", "add", SERVER, "via", via)
        nsx(ns["s"], "ip", "route", "add", "10.91.1.0/24", "via", "10.91.11.1")
        nsx(ns["s"], "ip", "route", "add", "10.91.2.0/24", "via", "10.91.12.1")
        for n in ("c", "s"):
            nsx(ns[n], "ip", "mptcp", "limits", "set", "subflow", "4", "add_addr_accepted", "4")
            nsx(ns[n], "sysctl", "-qw", "net.ipv4.tcp_no_metrics_save=1")
        netns.start(["mptcpize", "run", "iperf3", "-s", "-p", "5201"], ns["s"], stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL)
        netns.start(["iperf3", "-s", "-p", "5202"], ns["s"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        yield ns
    finally:
        # let closed connections drain before the namespaces go: an orphaned socket in a
        # deleted namespace keeps its CC (and our struct_ops map) alive until it times out
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and nsx(ns["c"], "ss", "-tnH", *DRAINING, check=False).stdout.strip():
            time.sleep(0.2)
        netns.remove(list(ns.values()))  # the iperf3 servers (SIGTERM, then SIGKILL) with them


def shape(ns, router: str, rate: str) -> None:
    # ~50 ms of queue at this rate: room for both flows' sawtooth
    nsx(ns[router], "tc", "qdisc", "replace", "dev", f"{router}s", "root", "tbf",
        "rate", rate, "burst", "16kb", "latency", "50ms")


def iperf(ns, port: int, bind: str, cc: str, seconds: int, mptcp: bool) -> subprocess.Popen:
    argv = ["ip", "netns", "exec", ns["c"]] + (["mptcpize", "run"] if mptcp else []) + [
        "iperf3", "-c", SERVER, "-p", str(port), "-B", bind, "-C", cc, "-t", str(seconds), "-O", str(OMIT), "-J"]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class NeverConnected(AssertionError):
    """iperf3's control connection closed before its data connection existed: nothing was
    measured (seen under load with the MPTCP control connection), so the run may be made again."""


def goodput(proc: subprocess.Popen) -> float:
    out, err = proc.communicate(timeout=120)
    result = json.loads(out or "{}")
    if result.get("error") and not result.get("start", {}).get("connected", True):
        raise NeverConnected(result["error"])
    assert proc.returncode == 0 and "error" not in result, result.get("error") or err or out[-500:]
    return result["end"]["sum_received"]["bits_per_second"]


def sample_subflows(topos: list[dict], until: float) -> list[list[list[dict]]]:
    """Each topology's client MPTCP subflows (cc, cwnd, rtt) once a second while the runs last."""
    samples: list[list[list[dict]]] = [[] for _ in topos]
    while time.monotonic() < until:
        time.sleep(1)
        for mine, ns in zip(samples, topos):
            # the data connection's subflows (iperf3's control connection is MPTCP too, but idle)
            mine.append([s for s in congestion.subflow_ccs(ns["c"]) if s["mptcp"] and s["remote"].endswith(":5201")
                         and s.get("bytes_acked", 0) > 1_000_000])
    return samples


@contextmanager
def dmesg_watch():
    before = len(sh("dmesg").stdout.splitlines())
    yield
    new = sh("dmesg").stdout.splitlines()[before:]
    bad = [line for line in new if re.search(r"WARNING:|BUG:|Oops|RIP:|Call Trace|bpf.*(fault|leak)", line)]
    assert not bad, "kernel warnings during the run:\n" + "\n".join(bad)


def shared_bottlenecks(topos: list[dict], cc: str, rate: str, loss_ppm: int,
                       seconds: int) -> list[tuple[float, float, list[list[dict]]] | NeverConnected]:
    """In each topology at once, one 2-subflow MPTCP connection (cc) and one TCP reno connection
    through its bottleneck: (MPTCP goodput, TCP goodput, subflow samples) per topology, or what
    kept it from measuring. Side by side, each run has a bottleneck of its own, and forwarding
    it takes a few percent of a core."""
    started = []
    for ns in topos:
        shape(ns, "r1", rate)
        if loss_ppm:  # on the data direction: at the router's client side
            random_loss(ns["r1"], "r1c", loss_ppm)
        nsx(ns["c"], "ip", "mptcp", "endpoint", "add", "10.91.1.3", "dev", "c1", "subflow")
    for ns in topos:
        started.append((iperf(ns, 5201, "10.91.1.2", cc, seconds, mptcp=True),
                        iperf(ns, 5202, "10.91.1.4", "reno", seconds, mptcp=False)))
    samples = sample_subflows(topos, time.monotonic() + seconds - 2)
    results = []
    for (mp, tcp), mine in zip(started, samples):
        try:
            results.append((goodput(mp), goodput(tcp), mine))
        except NeverConnected as e:
            results.append(e)  # its TCP peer ends with its topology
    return results


def shared_bottleneck(ns, cc: str, rate: str, loss_ppm: int, seconds: int) -> tuple[float, float, list[list[dict]]]:
    """One such run alone in topology `ns` (shared_bottlenecks)."""
    (result,) = shared_bottlenecks([ns], cc, rate, loss_ppm, seconds)
    if isinstance(result, NeverConnected):
        raise result
    return result


@pytest.mark.parametrize("cc", ["lia", "olia", "balia", "reno"])
def test_shared_bottleneck_fairness(registered, netns, cc):
    """RFC 6356 goal 2: a coupled MPTCP connection takes about one TCP share of a shared bottleneck.

    The goal is about the long-run share; one 20 s run scatters around it (lia 0.91-1.10, olia
    0.81-1.33, balia 0.94-1.13 over 5-10 runs; uncoupled reno, about 2, 1.36-2.49 over 12), so a
    CC is judged by the median of FAIRNESS_RUNS[cc] runs, each on a fresh topology of its own,
    all side by side (shared_bottlenecks)."""
    measured = []
    for attempt in (1, 2):  # runs that measured nothing are made once more, in fresh topologies
        with ExitStack() as topologies, dmesg_watch():
            topos = [topologies.enter_context(topology(netns)) for _ in range(FAIRNESS_RUNS[cc] - len(measured))]
            results = shared_bottlenecks(topos, cc, SHARED_RATE, SHARED_LOSS_PPM, SECONDS)
        measured += [r for r in results if not isinstance(r, NeverConnected)]
        missed = [r for r in results if isinstance(r, NeverConnected)]
        if not missed:
            break
        if attempt == 2:
            raise missed[0]
        print(f"\n{cc}: {len(missed)} run(s) where iperf3 never connected its data stream ({missed[0]}); made again")
    ratios = []
    for i, (mp_bps, tcp_bps, samples) in enumerate(measured):
        ratios.append(mp_bps / tcp_bps)
        print(f"\nshared {SHARED_RATE} loss {SHARED_LOSS_PPM / 1e4:g}%: {cc} run {i + 1}: MPTCP {mp_bps / 1e6:.2f} Mbit/s, "
              f"TCP {tcp_bps / 1e6:.2f} Mbit/s, ratio {ratios[-1]:.2f}")
        print("subflow samples (cwnd, rtt_ms):", [[(s["cwnd"], s["rtt_ms"]) for s in row] for row in samples[::4]])
        # the connection used 2 subflows, both running the CC asked for
        assert max(len(row) for row in samples) == 2
        assert {s["cc"] for row in samples for s in row} == {cc}
    print("runaway windows put back so far (kernel 6.18 problem):", congestion.repairs())
    ratio = statistics.median(ratios)
    if cc == "reno":
        assert ratio > 1.5, f"uncoupled reno should take about twice the TCP share, got median {ratio:.2f} (runs: {ratios})"
    else:
        assert 0.7 <= ratio <= 1.4, f"{cc}: median MPTCP/TCP ratio {ratio:.2f} outside [0.7, 1.4] (runs: {ratios})"


@pytest.mark.parametrize("cc", ["lia", "olia", "balia"])
def test_disjoint_paths_beat_the_better_path(registered, netns, cc):
    """Two disjoint paths of different capacity: MPTCP gets at least the better path alone.

    The better path alone (TCP) and MPTCP over both run at once, each in a topology of its own
    shaped the same: neither run shares a queue with the other."""
    seconds = 12
    with ExitStack() as topologies, dmesg_watch():
        alone, both = (topologies.enter_context(topology(netns)) for _ in range(2))
        for ns in (alone, both):
            shape(ns, "r1", PATH_RATES[0])
            shape(ns, "r2", PATH_RATES[1])
        nsx(both["c"], "ip", "mptcp", "endpoint", "add", "10.91.2.2", "dev", "c2", "subflow")
        best = iperf(alone, 5202, "10.91.1.2", "reno", seconds, mptcp=False)
        mp = iperf(both, 5201, "10.91.1.2", cc, seconds, mptcp=True)
        (samples,) = sample_subflows([both], time.monotonic() + seconds - 2)
        best_bps, mp_bps = goodput(best), goodput(mp)
    print(f"\ndisjoint {PATH_RATES[0]}+{PATH_RATES[1]}: {cc}: MPTCP {mp_bps / 1e6:.2f} Mbit/s, "
          f"better path alone (TCP) {best_bps / 1e6:.2f} Mbit/s, ratio {mp_bps / best_bps:.2f}")
    assert max(len(row) for row in samples) == 2
    assert mp_bps >= 0.97 * best_bps, f"{cc}: aggregate {mp_bps / 1e6:.2f} below the better path {best_bps / 1e6:.2f}"


def ccs_in_use_elsewhere() -> set[str]:
    """The rig's CCs that sockets (in any state) in this host's namespaces run: none of this module's
    once its topologies are gone, so those of other users of the kernel."""
    out = set()
    for ns in [None] + [line.split()[0] for line in sh("ip", "netns", "list").stdout.splitlines() if line.strip()]:
        p = sh(*(["ip", "netns", "exec", ns] if ns else []), "ss", "-tinH", "state", "all", check=False)
        out |= {sock["cc"] for sock in congestion.parse_ss(p.stdout)}
    return out & set(congestion.RIG_CCS)


def test_unregister_leaves_nothing(registered):
    """Unregistering removes the struct_ops maps and their per-connection maps once no socket uses
    them (this module's topologies drain their connections before they go); registered again
    afterwards, so the tests of this module run in any order."""
    ours = {map_id for _, map_id, state in congestion.struct_ops_maps() if state == "INUSE"}
    assert ours
    congestion.unregister_all()
    try:
        assert not set(congestion.COUPLED) & congestion.available()

        def leftovers():
            # each per-connection map goes with its struct_ops map (asynchronously, after RCU);
            # only registrations still referenced by sockets outside this test may keep theirs
            # (another user of this kernel, e.g. an emulated campaign running lia meanwhile)
            maps = congestion.struct_ops_maps()
            held = ccs_in_use_elsewhere()
            conns = [m["id"] for m in json.loads(sh("bpftool", "-j", "map", "show").stdout) if m.get("name") == "conns"]
            return {i for name, i, _ in maps if i in ours and name not in held}, len(conns) > len(maps)

        deadline = time.monotonic() + 30  # maps go once the last socket using them is freed
        while any(leftovers()) and time.monotonic() < deadline:
            time.sleep(0.2)
        ours_left, conns_left = leftovers()
        assert not ours_left, f"struct_ops maps still there: {ours_left}"
        assert not conns_left, "per-connection maps left behind"
    finally:
        # as the module found them, plus the coupled ones (the fixture unregisters at the end if it registered)
        congestion.ensure_registered(set(congestion.COUPLED) | (set(congestion.RIG_CCS) & registered))
