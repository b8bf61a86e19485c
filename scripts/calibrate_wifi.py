"""Calibrate the DCF WiFi model (emulator kind dcf) against ns-3's WiFi model (kind wifi).

Simulated time: both models run the same scenario as fast as they go
(`radio-emulator --calibrate-wifi`, no TAPs): one BSS of a WiFi profile
(radio-configs/wifi/*.yaml) with N stations and constant-size UDP datagrams (1500-byte IP
packets), at three loads:

- saturated: every station offers 1.2 x the PHY rate / N towards the AP (queues stay full);
- both: the same, and the AP offers as much to every station (downlink contends too);
- light: Poisson arrivals, stations 0.2 x PHY / N up, the AP 0.1 x PHY / N to each station.

Prints a Markdown table: aggregate throughput, per-station spread, delay percentiles of both
models and their differences, and, for g / a saturated, Bianchi's analytical throughput.

Real time (--realtime): the emulator itself with kind dcf (and kind wifi for comparison) in
namespaces, N stations each sending saturated UDP (iperf3 -u) or TCP to the gateway: goodput,
lag p50/p99 and CPU from the emulator's lag log.

    nice -n 19 .venv/bin/python scripts/calibrate_wifi.py [--profiles g a n24 n5 ac]
        [--stations 1 2 5 10] [--loads saturated both light] [--duration 4] [--json out.json]
    nice -n 19 .venv/bin/python scripts/calibrate_wifi.py --realtime [--kinds dcf wifi]
        [--stations 5] [--traffic udp tcp]

RIG_RADIO_EMULATOR=/path/to/radio-emulator runs that build instead of building the repository's.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from calibration_runs import emulator, run_cases  # puts the repository on sys.path

from rig.rigs.emulated.radio import RadioProcess
from rig.rigs.emulated.radiospec import Pipe, RadioNetworkSpec, Station, WifiBss, _wifi_channel
from rig.model.profiles import wifi_profile

PACKET_BYTES = 1500
# The PHY data rate of each profile's fixed mode (rig/rigs/emulated/ns3/dcf_phy.cc, wifi.cc).
PHY_RATE = {("g", 20): 54e6, ("a", 20): 54e6, ("n", 20): 65e6, ("n", 40): 135e6,
            ("ac", 20): 78e6, ("ac", 40): 180e6, ("ac", 80): 390e6}


def bss_of(profile: str) -> WifiBss:
    p = wifi_profile(profile)
    return WifiBss(p.standard, p.band_ghz, p.width_mhz, p.channel)


def scenario(model: str, bss: WifiBss, stations: int, load: str, duration_s: float, seed: int) -> dict:
    phy = PHY_RATE[(bss.standard, bss.width_mhz)]
    up = {"saturated": 1.2, "both": 1.2, "light": 0.2}[load] * phy / stations
    down = {"saturated": 0.0, "both": 1.2, "light": 0.1}[load] * phy / stations
    return {"model": model, "standard": bss.standard, "band_ghz": bss.band_ghz, "width_mhz": bss.width_mhz,
            **_wifi_channel(bss), "stations": stations, "packet_bytes": PACKET_BYTES, "up_bps": up,
            "down_bps": down, "poisson": load == "light", "duration_s": duration_s, "seed": seed}


def mbps(result: dict, key: str) -> float:
    return sum(result[key]) * 8 / result["duration_s"] / 1e6


def bianchi_mbps(standard: str, stations: int) -> float:
    """Bianchi (2000), basic access, saturated, ideal channel: DCF throughput of 1500-byte
    packets at 54 Mbit/s (802.11a/g, 9 us slots, CW 15..1023)."""
    slot, sifs = 9.0, 16.0 if standard == "a" else 10.0
    ext = 0.0 if standard == "a" else 6.0  # 2.4 GHz signal extension
    difs = sifs + 2 * slot
    w, m = 16, 6  # CWmin + 1, and CWmax + 1 = W * 2^m
    mpdu = PACKET_BYTES + 24 + 8 + 4
    data = 20 + 4 * math.ceil((22 + 8 * mpdu) / 216) + ext
    ack = 20 + 4 * math.ceil((22 + 8 * 14) / 96) + ext
    ts, tc = data + sifs + ack + difs, data + difs
    # tau and p from the fixed point of Bianchi's Markov chain (bisection on tau).
    lo, hi = 0.0, 1.0
    for _ in range(200):
        tau = (lo + hi) / 2
        p = 1 - (1 - tau) ** (stations - 1)
        # 2(1-2p) / ((1-2p)(W+1) + pW(1-(2p)^m)), written without the 0/0 at p = 1/2
        tau_of_p = 2 / (w + 1 + p * w * sum((2 * p) ** k for k in range(m)))
        lo, hi = (tau, hi) if tau_of_p > tau else (lo, tau)
    ptr = 1 - (1 - tau) ** stations
    ps = stations * tau * (1 - tau) ** (stations - 1) / ptr
    slot_mean = (1 - ptr) * slot + ptr * ps * ts + ptr * (1 - ps) * tc
    return ps * ptr * PACKET_BYTES * 8 / slot_mean  # bits per us = Mbit/s


def pct(new: float, ref: float) -> str:
    return "-" if not ref else f"{(new - ref) / ref * 100:+.1f}"


def delays(result: dict) -> dict:
    """Delay percentiles over both directions, weighted as one pool (the larger direction)."""
    up, down = result["up_delay_ms"], result["down_delay_ms"]
    return up if (up and (not down or sum(result["up_bytes"]) >= sum(result["down_bytes"]))) else down


def simulated(args) -> None:
    rows = []
    cases = ((dict(profile=profile, load=load, stations=n),
              {m: scenario(m, bss_of(profile), n, load, args.duration, args.seed) for m in ("ns3", "dcf")})
             for profile in args.profiles for load in args.loads for n in args.stations)
    for case, pair in run_cases("--calibrate-wifi", cases, Path(args.json) if args.json else None):
        bss, load, n = bss_of(case["profile"]), case["load"], case["stations"]
        ref, new = pair["ns3"], pair["dcf"]
        t_ref = mbps(ref, "up_bytes") + mbps(ref, "down_bytes")
        t_new = mbps(new, "up_bytes") + mbps(new, "down_bytes")
        d_ref, d_new = delays(ref), delays(new)
        bianchi = (f"{bianchi_mbps(bss.standard, n):.2f}"
                   if load == "saturated" and bss.standard in ("g", "a") else "")
        spread = lambda r: (f"{min(r['up_bytes']) * 8 / r['duration_s'] / 1e6:.2f}-"
                            f"{max(r['up_bytes']) * 8 / r['duration_s'] / 1e6:.2f}")
        cells = [case["profile"], load, str(n), f"{t_ref:.2f}", f"{t_new:.2f}", pct(t_new, t_ref), bianchi,
                 spread(ref), spread(new)]
        for q in ("p10", "p50", "p90", "p99"):
            cells.append(f"{d_ref[q]:.2f} / {d_new[q]:.2f} ({pct(d_new[q], d_ref[q])})")
        cells += [str(ref["failures"]), str(new["failures"]), f"{ref['cpu_s']:.2f} / {new['cpu_s']:.3f}"]
        rows.append(cells)
        print(" | ".join(cells), file=sys.stderr, flush=True)
    head = ["profile", "load", "stations", "ns-3 Mbit/s", "dcf Mbit/s", "diff %", "Bianchi", "ns-3 per-station up",
            "dcf per-station up", "delay p10 ms ns-3 / dcf (%)", "p50", "p90", "p99", "ns-3 failed tx (MPDUs)",
            "dcf failed tx", "CPU s ns-3 / dcf"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for cells in rows:
        print("| " + " | ".join(cells) + " |")


def sh(*args: str, ns: str | None = None, check: bool = True) -> str:
    cmd = ["ip", "netns", "exec", ns, *args] if ns else list(args)
    return subprocess.run(cmd, check=check, capture_output=True, text=True).stdout


def run_realtime(kind: str, bss: WifiBss, stations: int, traffic: str, duration_s: float) -> dict:
    """One BSS of `kind` in namespaces (wcal-XXXX-*), every station sending to the gateway."""
    tag = secrets.token_hex(2)
    names = [f"wcal-{tag}-{role}" for role in ("emu", "gw", *(f"st{i}" for i in range(stations)))]
    procs: list[subprocess.Popen] = []
    radio = None
    try:
        for ns in names:
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "set", "lo", "up", ns=ns)
        emu, gw, nodes = names[0], names[1], names[2:]
        spec = RadioNetworkSpec(f"wcal{tag}", f"wc{tag}gw", kind=kind, wifi=bss, stations=tuple(
            Station(f"wc{tag}s{i}", Pipe(0, 0), Pipe(0, 0)) for i in range(stations)))
        radio = RadioProcess(spec, emu, Path(tempfile.mkdtemp(prefix="wcal-")))
        radio.start()
        ends = [(spec.gateway_tap, gw, "10.215.0.1")]
        ends += [(s.tap, ns, f"10.215.0.{2 + i}") for i, (s, ns) in enumerate(zip(spec.stations, nodes))]
        for tap, ns, addr in ends:
            sh("ip", "-n", emu, "link", "set", tap, "netns", ns)
            sh("ip", "addr", "add", f"{addr}/24", "dev", tap, ns=ns)
            sh("ip", "link", "set", tap, "up", ns=ns)
        macs = {tap: json.loads(sh("ip", "-j", "link", "show", tap, ns=ns))[0]["address"] for tap, ns, _ in ends}
        for tap, ns, _ in ends:
            for other, other_ns, other_addr in ends:
                if other_ns != ns:
                    sh("ip", "neigh", "replace", other_addr, "lladdr", macs[other], "dev", tap, "nud", "permanent", ns=ns)
        ports = [5401 + i for i in range(stations)]
        for port in ports:
            procs.append(subprocess.Popen(["ip", "netns", "exec", gw, "iperf3", "-s", "-1", "-p", str(port)],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(0.5)
        rate = 1.2 * PHY_RATE[(bss.standard, bss.width_mhz)] / stations
        mode = ["-u", "-b", f"{rate:.0f}", "-l", "1472"] if traffic == "udp" else []
        t0 = time.time()
        clients = [subprocess.Popen(["ip", "netns", "exec", ns, "iperf3", "-c", "10.215.0.1", "-p", str(port), "-J",
                                     "-t", str(duration_s), "-O", "1", *mode], stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, text=True)
                   for ns, port in zip(nodes, ports)]
        results = [json.loads(c.communicate(timeout=duration_s + 30)[0]) for c in clients]
        t1 = time.time()
        # what the receivers got (UDP: iperf3's "sum" is what was sent)
        per_station = [r["end"]["sum_received"]["bits_per_second"] / 1e6 for r in results]
        lag = radio.lag(t0 + 1.5, t1 - 0.5)
        rows = [r for r in radio.station_stats(t0 + 1.5, t1 - 0.5)]
        collisions = sum(r.get("collisions", r.get("retries", 0)) for r in rows)
        return {"kind": kind, "standard": bss.standard, "width_mhz": bss.width_mhz, "stations": stations,
                "traffic": traffic, "goodput_mbps": round(sum(per_station), 2),
                "per_station_mbps": [round(x, 2) for x in per_station], "collisions_or_retries": collisions,
                "lag_p50_ms": lag.p50_ms, "lag_p99_ms": lag.p99_ms, "lag_max_ms": lag.max_ms,
                "busy_max_ms": lag.busy_max_ms, "cpu": round(lag.cpu, 3),
                "load_average": os.getloadavg()[0]}
    finally:
        for p in procs:
            p.kill()
            p.wait()
        if radio is not None:
            radio.stop()
        for ns in names:
            for pid in sh("ip", "netns", "pids", ns, check=False).split():
                os.kill(int(pid), signal.SIGKILL)
            sh("ip", "netns", "del", ns, check=False)


def realtime(args) -> None:
    emulator()  # RadioProcess runs RIG_RADIO_EMULATOR too
    for kind in args.kinds:
        for n in args.stations:
            for traffic in args.traffic:
                row = run_realtime(kind, bss_of(args.profiles[0]), n, traffic, args.duration)
                print(json.dumps(row), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", nargs="+", default=["g", "a", "n24", "n5", "ac"])
    parser.add_argument("--stations", nargs="+", type=int, default=None)
    parser.add_argument("--loads", nargs="+", default=["saturated", "both", "light"],
                        choices=["saturated", "both", "light"])
    parser.add_argument("--duration", type=float, default=None, help="seconds measured (default 4; real time 10)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="write every result here")
    parser.add_argument("--realtime", action="store_true", help="the emulator in namespaces, CPU and lag")
    parser.add_argument("--kinds", nargs="+", default=["dcf", "wifi"], choices=["dcf", "wifi"])
    parser.add_argument("--traffic", nargs="+", default=["udp", "tcp"], choices=["udp", "tcp"])
    args = parser.parse_args()
    if args.realtime:
        args.stations = args.stations or [5]
        args.duration = args.duration or 10.0
        realtime(args)
    else:
        args.stations = args.stations or [1, 2, 5, 10]
        args.duration = args.duration or 4.0
        simulated(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
