"""Changing a running emulator's links: cut and restore, a loss step, a rate change, a trace.

Real emulator processes between throw-away namespaces (the shared `netns` fixture, tests/fixtures/radio_net.py).
Traffic is a paced UDP source in a station's namespace and a sink in the gateway's namespace
that records each datagram's sequence number, send time and the kernel's receive time stamp
(SO_TIMESTAMPNS: when the frame reached the socket, however late the sink process runs).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from rig.rigs.emulated.control import PipeChange
from rig.rigs.emulated.radiospec import LteCell, Pipe, RadioNetworkSpec, Station, WifiBss
from rig.model.traces import load_trace
from rig.core.errors import InputError, RigError
from fixtures.cli import REPO
from fixtures.radio_net import SUBNET, UE_SUBNET, cell, star

pytestmark = pytest.mark.emulated

CELL_EDGE = REPO / "radio-configs" / "traces" / "lte-cell-edge-uplink.mahi"
PORT = 7010
IP_UDP_HEADERS = 28

SINK = """
import json, socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)  # SO_RCVBUFFORCE
s.setsockopt(socket.SOL_SOCKET, 35, 1)  # SO_TIMESTAMPNS
s.bind(("0.0.0.0", int(sys.argv[1])))
print("listening", flush=True)
s.settimeout(15.0)
rows = []
try:
    while True:
        data, anc, _, _ = s.recvmsg(2048, 64)
        s.settimeout(2.5)  # longer than any cut in these tests
        sec, nsec = struct.unpack("qq", anc[0][2][:16])
        seq, sent = struct.unpack("!Qd", data[:16])
        rows.append((seq, sent, sec + nsec / 1e9, len(data)))
except socket.timeout:
    pass
json.dump(rows, sys.stdout)
"""

# argv: address port rate_pps seconds size; sends in bursts of what is due, so a late wake-up
# does not lower the rate.
SOURCE = """
import socket, struct, sys, time
addr, port, pps, seconds, size = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, 32, 8 << 20)  # SO_SNDBUFFORCE
pad = b"x" * (size - 16)
start = time.monotonic()
seq = 0
while True:
    elapsed = time.monotonic() - start
    if elapsed >= seconds:
        break
    while seq < elapsed * pps:
        s.sendto(struct.pack("!Qd", seq, time.time()) + pad, (addr, port))
        seq += 1
    time.sleep(0.0005)
print(seq)
"""


def udp_run(gw: str, station: str, pps: float, seconds: float, size: int, changes_at) -> tuple[list, float]:
    """Runs source -> sink; `changes_at(start)` schedules changes once the source started.
    Returns the sink's rows (seq, sent, received, bytes) and the source's start (unix)."""
    sink = subprocess.Popen(["ip", "netns", "exec", gw, sys.executable, "-c", SINK, str(PORT)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert sink.stdout.readline().strip() == "listening"
        start = time.time()
        source = subprocess.Popen(["ip", "netns", "exec", station, sys.executable, "-c", SOURCE,
                                   f"{SUBNET}.1", str(PORT), str(pps), str(seconds), str(size)],
                                  stdout=subprocess.PIPE, text=True)
        try:
            changes_at(start)
            source.communicate(timeout=seconds + 20)
        finally:
            source.kill()
            source.wait()
        out, _ = sink.communicate(timeout=30)
        return json.loads(out), start
    finally:
        sink.kill()
        sink.wait()


def ip_rate_bps(rows: list, since: float, until: float) -> float:
    """IP-level rate received in [since, until) (kernel receive stamps)."""
    got = sum(size + IP_UDP_HEADERS for _, _, received, size in rows if since <= received < until)
    return got * 8 / (until - since)


def links_network(rate_bps: float = 20e6, delay_s: float = 0.010, **pipe) -> RadioNetworkSpec:
    station = Station("nsts0", up=Pipe(rate_bps, delay_s, **pipe), down=Pipe(rate_bps, delay_s, **pipe))
    return RadioNetworkSpec("links", "nstgw", (station,))


def test_cut_and_restore(emulator, netns, tmp_path):
    spec = links_network()
    radio, gw, (station,) = star(spec, netns, tmp_path)
    planned = {}
    with radio:
        def cut_then_restore(start):
            planned["cut"], planned["restore"] = start + 1.0, start + 2.0
            radio.schedule([PipeChange(planned["cut"], "nsts0", state="down"),
                            PipeChange(planned["restore"], "nsts0", state="up")])

        rows, _ = udp_run(gw, station, pps=500, seconds=3.0, size=200, changes_at=cut_then_restore)
        applied = radio.applied()
    assert [(c.planned, c.values["state"], c.direction) for c in applied] == [
        (pytest.approx(planned["cut"], abs=1e-6), "down", "both"),
        (pytest.approx(planned["restore"], abs=1e-6), "up", "both")]
    cut, restore = (c.actual for c in applied)
    assert all(c.lateness_s >= -0.001 for c in applied), applied
    before = [r for r in rows if r[1] < cut - 0.1]
    during = [r for r in rows if cut <= r[1] < restore - 0.05]
    after = [r for r in rows if r[1] >= restore]
    assert len(before) >= 200 and sorted(r[0] for r in before) == list(range(len(before)))  # no loss
    assert during == []  # sent after the cut: dropped until the restore
    assert len(after) >= 300  # the path carries traffic again
    # frames in flight at the cut are dropped too: nothing arrives later than one RTT after it
    last_before_restore = max(r[2] for r in rows if r[2] < restore)
    assert last_before_restore < cut + 2 * 0.010 + 0.005, (last_before_restore - cut)
    sent_after = sorted(r[0] for r in rows if r[1] >= restore + 0.05)
    assert sent_after == list(range(sent_after[0], sent_after[-1] + 1))  # and loses nothing


def test_loss_step_on_one_direction(emulator, netns, tmp_path):
    spec = links_network()
    radio, gw, (station,) = star(spec, netns, tmp_path)
    with radio:
        rows, start = udp_run(gw, station, pps=800, seconds=3.0, size=200,
                              changes_at=lambda start: radio.schedule(
                                  [PipeChange(start + 1.0, "nsts0", direction="up", loss=0.3)]))
        (step,) = radio.applied()
    assert step.direction == "up" and step.values == {"loss": 0.3}
    before = sorted(r[0] for r in rows if r[1] < step.actual - 0.05)
    assert len(before) >= 300 and before == list(range(len(before)))  # nothing lost before the step
    after = sorted(r[0] for r in rows if r[1] >= step.actual + 0.02)
    after = [seq in set(after) for seq in range(after[0], after[-1] + 1)]  # sent after it: received?
    assert len(after) >= 1000
    assert sum(after) / len(after) == pytest.approx(0.7, abs=0.06)


def test_rate_change(emulator, netns, tmp_path):
    spec = links_network(rate_bps=10e6, delay_s=0.005)
    radio, gw, (station,) = star(spec, netns, tmp_path)
    with radio:
        rows, start = udp_run(gw, station, pps=1200, seconds=4.0, size=1472,  # 14.4 Mbit/s offered
                              changes_at=lambda start: radio.schedule(
                                  [PipeChange(start + 2.0, "nsts0", direction="up", rate_bps=4e6)]))
        (change,) = radio.applied()
    frame_share = 1500 / 1514  # the rate counts Ethernet frames; the receiver sees IP packets
    assert ip_rate_bps(rows, start + 0.7, change.actual - 0.1) == pytest.approx(10e6 * frame_share, rel=0.1)
    assert ip_rate_bps(rows, change.actual + 0.5, start + 3.9) == pytest.approx(4e6 * frame_share, rel=0.1)


def test_trace_is_followed(emulator, netns, tmp_path):
    trace = load_trace(CELL_EDGE)
    spec = links_network(rate_bps=10e6, delay_s=0.005)
    radio, gw, (station,) = star(spec, netns, tmp_path)
    with radio:
        # 9.4 Mbit/s of 1500-byte IP packets: above every 1 s rate of the trace's first 6 s,
        # so the queue never runs dry and every opportunity is used
        rows, start = udp_run(gw, station, pps=780, seconds=7.5, size=1472,
                              changes_at=lambda start: radio.schedule(
                                  [PipeChange(start + 0.5, "nsts0", direction="up", trace=CELL_EDGE)]))
        (change,) = radio.applied()
    assert change.values["trace"].endswith(change.id)  # the normalised copy the emulator read
    for second in range(6):
        since = change.actual + second
        expected = trace.rate_bps(second, second + 1)
        assert ip_rate_bps(rows, since, since + 1) == pytest.approx(expected, rel=0.12), second


def cut_on_radio_station(radio, gw, node):
    def cut(start):
        radio.schedule([PipeChange(start + 0.8, "nsts0", direction="up", state="down"),
                        PipeChange(start + 1.6, "nsts0", direction="up", state="up")])

    rows, _ = udp_run(gw, node, pps=300, seconds=2.5, size=200, changes_at=cut)
    down, up = radio.applied()
    assert not [r for r in rows if down.actual <= r[1] < up.actual - 0.05]
    assert len([r for r in rows if r[1] < down.actual - 0.1]) >= 150
    assert len([r for r in rows if r[1] >= up.actual]) >= 200


def test_cut_on_a_wifi_station(emulator, netns, tmp_path):
    """kinds wifi/lte: the change acts on the impairment pipe on top of the radio (made on
    first use when the station had none)."""
    station = Station("nsts0", up=Pipe(0, 0), down=Pipe(0, 0))
    spec = RadioNetworkSpec("bss", "nstgw", (station,), kind="wifi", wifi=WifiBss("g", 2.4, 20))
    radio, gw, (node,) = star(spec, netns, tmp_path)
    with radio:
        cut_on_radio_station(radio, gw, node)


def test_cut_on_an_lte_ue(emulator, netns, tmp_path):
    ue = Station("nsts0", Pipe(0, 0), Pipe(0, 0), address=f"{UE_SUBNET}.2/24")
    spec = RadioNetworkSpec("cell", "nstgw", (ue,), kind="lte",
                            lte=LteCell(25, sgi_address=f"{SUBNET}.2/24", sgi_gateway=f"{SUBNET}.1"))
    radio, gw, (node,) = cell(spec, netns, tmp_path)
    with radio:
        cut_on_radio_station(radio, gw, node)


def test_bad_changes_are_refused_and_nothing_is_sent(emulator, netns, tmp_path):
    spec = links_network()
    radio, _, _ = star(spec, netns, tmp_path)
    bad = tmp_path / "bad.mahi"
    bad.write_text("1\n2\n\n5\n3\n")
    with radio:
        good = PipeChange(time.time() + 5, "nsts0", rate_bps=1e6)
        with pytest.raises(InputError, match=rf"{bad}:5: timestamps must not decrease \(3 after 5\)"):
            radio.schedule([good, PipeChange(time.time() + 5, "nsts0", trace=bad)])
        bad.write_text("1\n2ms\n")
        with pytest.raises(InputError, match=rf"{bad}:2: not a millisecond timestamp"):
            radio.schedule([PipeChange(time.time() + 5, "nsts0", trace=bad)])
        with pytest.raises(RigError, match="no such station TAP"):
            radio.schedule([good, PipeChange(time.time() + 5, "nope")])
        with pytest.raises(RigError, match="loss must be in"):
            radio.schedule([PipeChange(time.time() + 5, "nsts0", loss=2)])
        assert radio.events_log.read_text() == ""  # the emulator got none of them
        # a change in the past applies at once
        radio.schedule([PipeChange(time.time() - 1, "nsts0", delay_s=0.02)])
        for _ in range(100):
            if radio.applied():
                break
            time.sleep(0.01)
        (late,) = radio.applied()
        assert late.lateness_s >= 1.0 and late.values == {"delay_s": 0.02}


def test_bad_trace_files(tmp_path):
    for text, problem in (("", "no delivery opportunities"), ("0\n0\n", r"period\) must be > 0"),
                          ("5\n-1\n", ":2: not a millisecond")):
        path = tmp_path / "t.mahi"
        path.write_text(text)
        with pytest.raises(InputError, match=problem):
            load_trace(path)
    path.write_text("0\n3\n3\n10\n")
    trace = load_trace(path)
    # opportunities at 0, 3, 3, 10, then (period 10) 10, 13, 13: seven in the first 20 ms
    assert trace.period_ms == 10 and trace.rate_bps(0, 0.02) == pytest.approx(7 * 1500 * 8 / 0.02)


def test_emulated_rig_finds_a_nodes_station(emulator, rig_prefix):
    from rig.rigs.emulated.emulated_rig import EmulatedRig
    from rig.model.block import BlockSettings

    rig = EmulatedRig(rig_prefix)
    rig.up(BlockSettings("II", "n5", "band7-10mhz", 1, {}))
    lte = next(i for i in rig.topo.interfaces if i.network == "cell")
    network, tap = rig.station_tap(lte.host, lte.ifname)
    assert network == "cell" and rig.stations[tap] == (lte.host, lte.ifname)
    rig.radios[network].schedule([PipeChange(time.time(), tap, state="down")])
    for _ in range(100):
        if rig.radios[network].applied():
            break
        time.sleep(0.01)
    assert [c.tap for c in rig.radios[network].applied()] == [tap]
    with pytest.raises(RigError, match=f"no radio station for {lte.host} eth9"):
        rig.station_tap(lte.host, "eth9")
