"""Lateness of link changes in a running radio emulator (docs/emulator.md, "Changing links").

    .venv/bin/python scripts/bench_link_events.py [--kind links|wifi] [--changes 400]
        [--spacing 0.05] [--traffic/--no-traffic]

Starts one emulator (two stations) in throw-away namespaces (bev<hex>-*, deleted at the end),
optionally with an iperf3 TCP upload saturating station 0, schedules the changes in one batch
(the first 1 s ahead, then every `spacing`: rate and loss steps on station 0, cut and restore
of station 1, in turn) and prints the lateness (actual - planned) of those applied: p50, p99,
max, in ms. Root, /dev/net/tun and a built emulator needed.
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rig.rigs.emulated.control import PipeChange  # noqa: E402
from rig.rigs.emulated.radio import RadioProcess  # noqa: E402
from rig.rigs.emulated.radiospec import Pipe, RadioNetworkSpec, Station, WifiBss  # noqa: E402

SUBNET = "10.215.0"


def sh(*args: str, ns: str | None = None) -> str:
    cmd = ["ip", "netns", "exec", ns, *args] if ns else list(args)
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def changes(start: float, n: int, spacing: float) -> list[PipeChange]:
    out = []
    for i in range(n):
        at = start + i * spacing
        step = i % 4
        if step == 0:
            out.append(PipeChange(at, "bevs0", "up", rate_bps=10e6 if i % 8 == 0 else 20e6))
        elif step == 1:
            out.append(PipeChange(at, "bevs0", "up", loss=0.01 if i % 8 == 1 else 0.0))
        else:
            out.append(PipeChange(at, "bevs1", "both", state="down" if step == 2 else "up"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=("links", "wifi"), default="links")
    parser.add_argument("--changes", type=int, default=400)
    parser.add_argument("--spacing", type=float, default=0.05)
    parser.add_argument("--traffic", action=argparse.BooleanOptionalAction, default=True)
    args = parser.parse_args()

    tag = f"bev{secrets.token_hex(2)}"
    names = {role: f"{tag}-{role}" for role in ("emu", "gw", "s0", "s1")}
    pipe = Pipe(20e6, 0.010) if args.kind == "links" else Pipe(0, 0)
    stations = (Station("bevs0", pipe, pipe), Station("bevs1", pipe, pipe))
    spec = RadioNetworkSpec("bench", "bevgw", stations, kind=args.kind,
                            wifi=WifiBss("n", 5, 40) if args.kind == "wifi" else None)
    procs: list[subprocess.Popen] = []
    try:
        for ns in names.values():
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "set", "lo", "up", ns=ns)
        with tempfile.TemporaryDirectory() as workdir, RadioProcess(spec, names["emu"], Path(workdir)) as radio:
            for i, (tap, role) in enumerate((("bevgw", "gw"), ("bevs0", "s0"), ("bevs1", "s1"))):
                sh("ip", "-n", names["emu"], "link", "set", tap, "netns", names[role])
                sh("ip", "addr", "add", f"{SUBNET}.{1 + i}/24", "dev", tap, ns=names[role])
                sh("ip", "link", "set", tap, "up", ns=names[role])
            seconds = 2 + args.changes * args.spacing
            if args.traffic:
                procs.append(subprocess.Popen(["ip", "netns", "exec", names["gw"], "iperf3", "-s", "-1", "-p", "5311"],
                                              stdout=subprocess.DEVNULL))
                time.sleep(0.5)
                procs.append(subprocess.Popen(["ip", "netns", "exec", names["s0"], "iperf3", "-c", f"{SUBNET}.1", "-p",
                                               "5311", "-t", str(int(seconds) + 1), "-J"], stdout=subprocess.PIPE))
                time.sleep(0.5)
            start = time.time() + 1.0
            radio.schedule(changes(start, args.changes, args.spacing))
            time.sleep(max(0.0, start + args.changes * args.spacing - time.time()) + 0.5)
            applied = radio.applied()
            lag = radio.lag(start, time.time())
            goodput = None
            if args.traffic:
                out, _ = procs[-1].communicate(timeout=seconds + 30)
                goodput = json.loads(out)["end"]["sum_received"]["bits_per_second"]
    finally:
        for p in procs:
            p.kill()
            p.wait()
        for ns in names.values():
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    late_ms = sorted(c.lateness_s * 1e3 for c in applied)
    p99 = late_ms[min(len(late_ms) - 1, int(0.99 * len(late_ms)))]
    print(f"kind {args.kind}, traffic {'iperf3 TCP upload' if args.traffic else 'none'}"
          + (f" ({goodput / 1e6:.1f} Mbit/s)" if goodput else "")
          + f", {len(applied)}/{args.changes} changes applied: lateness p50 {statistics.median(late_ms):.3f} ms,"
          f" p99 {p99:.3f} ms, max {late_ms[-1]:.3f} ms; emulator lag p99 {lag.p99_ms:.3f} ms, cpu {lag.cpu:.2f}")


if __name__ == "__main__":
    main()
