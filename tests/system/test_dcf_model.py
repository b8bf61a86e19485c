"""Emulator kind dcf (one WiFi BSS as a per-frame DCF medium) with real traffic in namespaces.

Saturated stations share the channel as DCF does: the BSS carries about the same in total
whether one or five stations send, each of five gets about a fifth, and five contending
stations collide (counted in the stats log) while one alone does not. A TCP upload's ACKs
cross the AP's downlink on the same channel.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from fixtures.radio_net import SUBNET, star
from fixtures.radio_traffic import NO_IMPAIRMENT, iperf_server
from rig.rigs.emulated.radio import RadioProcess
from rig.rigs.emulated.radiospec import RadioNetworkSpec, Station, WifiBss
from rig.core.errors import RigError

pytestmark = pytest.mark.emulated

BSS_A = WifiBss("a", 5, 20)  # 54 Mbit/s OFDM: DCF saturation ~30 Mbit/s of 1500-byte packets


def bss(n: int, name: str) -> RadioNetworkSpec:
    stations = tuple(Station(f"nsts{i}", NO_IMPAIRMENT, NO_IMPAIRMENT) for i in range(n))
    return RadioNetworkSpec(name, "nstgw", stations, kind="dcf", wifi=BSS_A)


def saturate(netns, gw: str, senders: list[str], seconds: int = 5) -> tuple[float, float]:
    """UDP from every sender to the gateway at 1.2 x 54 Mbit/s in total; the window measured."""
    ports = [5301 + i for i in range(len(senders))]
    for port in ports:
        iperf_server(netns, gw, port)
    rate = 1.2 * 54e6 / len(senders)
    start = time.time()
    clients = [subprocess.Popen(["ip", "netns", "exec", ns, "iperf3", "-c", f"{SUBNET}.1", "-p", str(port), "-u",
                                 "-b", f"{rate:.0f}", "-l", "1472", "-t", str(seconds)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for ns, port in zip(senders, ports)]
    for c in clients:
        c.wait(timeout=seconds + 30)
    return start + 1.5, start + seconds - 0.5  # queues full, senders still sending


def per_station_mbps(radio: RadioProcess, since: float, until: float) -> tuple[dict[str, float], int]:
    """Mbit/s each station got through the air over the whole seconds in [since, until], and
    the collisions its transmissions suffered."""
    rows = [r for r in radio.station_stats(since, until) if since <= r["t"] - 1 and r["t"] <= until]
    seconds = len({r["t"] for r in rows})
    assert seconds >= 1, rows
    rates = {}
    for r in rows:
        rates[r["station"]] = rates.get(r["station"], 0.0) + r["up_bytes"] * 8 / seconds / 1e6
    return rates, sum(r["collisions"] for r in rows)


def test_saturated_stations_share_the_channel_as_dcf(emulator, netns, tmp_path):
    results = {}
    for n in (1, 5):
        radio, gw, senders = star(bss(n, f"dcf{n}"), netns, tmp_path / str(n))
        with radio:
            since, until = saturate(netns, gw, senders)
            results[n] = per_station_mbps(radio, since, until)
    (one,), collisions_alone = results[1][0].values(), results[1][1]
    five, collisions_five = list(results[5][0].values()), results[5][1]
    # One sender alone: Bianchi's saturation throughput of 802.11a at 54 Mbit/s, ~30.5 Mbit/s of
    # IP packets (31 Mbit/s of Ethernet frames), never more than the air time allows.
    assert 26 <= one <= 33, one
    # Five: about the same in total (DCF loses a little to collisions), about a fifth each.
    assert 0.85 * one <= sum(five) <= 1.05 * one, (one, five)
    assert all(0.12 * sum(five) <= r <= 0.28 * sum(five) for r in five), five
    # Alone, a station can collide only with the AP's own few frames (an ARP reply); five
    # contending stations collide by the thousand.
    assert collisions_alone <= 2 and collisions_five > 100, (collisions_alone, collisions_five)


def test_tcp_upload_and_its_acks_share_the_channel(emulator, netns, tmp_path):
    radio, gw, (sender,) = star(bss(1, "dcftcp"), netns, tmp_path)
    with radio:
        iperf_server(netns, gw, 5201)
        start = time.time()
        out = subprocess.run(["ip", "netns", "exec", sender, "iperf3", "-c", f"{SUBNET}.1", "-p", "5201", "-J",
                              "-t", "3", "-O", "1"], capture_output=True, text=True, timeout=60).stdout
        goodput = json.loads(out)["end"]["sum_received"]["bits_per_second"] / 1e6
        # Below UDP saturation (~30 Mbit/s): the ACKs take air time and contend with the data.
        assert 15 <= goodput <= 30, goodput
        rows = radio.station_stats(start, time.time())
        assert sum(r["down_frames"] for r in rows) > 0 and all(r["data_mode"] == "OfdmRate54Mbps" for r in rows)


def test_dcf_needs_the_bss_profile(tmp_path):
    spec = RadioNetworkSpec("nobss", "nstgw", (Station("nsts0", NO_IMPAIRMENT, NO_IMPAIRMENT),), kind="dcf")
    with pytest.raises(RigError, match="kind dcf needs a WifiBss"):
        RadioProcess(spec, "unused", tmp_path).start()


def lone_frame_delays_ms(emulator, tmp_path, standard: str, width_mhz: int) -> dict:
    """Simulated time (`--calibrate-wifi`): one station sending a 1500-byte packet every 12 ms,
    each finding the channel idle; its delay percentiles from the MAC to the AP."""
    scenario = tmp_path / f"{standard}.json"
    scenario.write_text(json.dumps({
        "model": "dcf", "standard": standard, "band_ghz": 5, "width_mhz": width_mhz, "channel_number": 36,
        "stations": 1, "packet_bytes": 1500, "up_bps": 1e6, "down_bps": 0, "duration_s": 2, "seed": 1}))
    out = subprocess.run([str(emulator), "--calibrate-wifi", str(scenario)], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    return json.loads(out)["up_delay_ms"]


def test_a_frame_at_an_idle_channel_waits_difs_or_the_next_edca_slot(emulator, tmp_path):
    # 802.11a (DCF): DIFS (34 us) then the PPDU (248 us), whenever the frame arrives.
    assert set(lone_frame_delays_ms(emulator, tmp_path, "a", 20).values()) == {0.282}
    # 802.11n (EDCA) acts at slot boundaries: the HT40 PPDU (128 us) starts at the next 9 us
    # boundary of the idle channel, 0-9 us after the frame arrived.
    d = lone_frame_delays_ms(emulator, tmp_path, "n", 40)
    assert 0.128 < d["p10"] < d["p90"] <= 0.137, d
