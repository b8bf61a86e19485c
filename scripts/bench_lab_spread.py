#!/usr/bin/env python3
"""The lab's achievable start spread: the senders' launch spread over SSH plus chrony's offsets.

On the lab each sender waits for T0 on its own clock, which chrony keeps near the controller's.
Two senders then start apart by the launch spread the rig measures (each on its own clock) plus
the difference of their clocks' errors. This plays the lab on the emulated rig (links radios,
Setup I): every node reachable over SSH on the management network, a lab-shaped inventory, and
the campaign run through the lab backend (`rig campaign run FILE --rig INVENTORY`) from the
management namespace, as from the lab's controller. chronyd runs in every node's namespace,
following a chronyd in the management namespace (the controller role's `local stratum 8`
server) with the node role's polling (`iburst minpoll 4 maxpoll 6`).

What the offsets here are: every namespace shares the host's one clock, so no node's clock is
really off. Each chronyd runs with -x (it never touches the host's clock) and then steers a
virtual clock of its own (chrony's null clock driver); `chronyc -c tracking`'s system-time
offset is that virtual clock's correction, i.e. the error chrony's own steering would give a
perfect oscillator from its measurement noise (scheduling on a loaded host, the veth and bridge
path's delay asymmetry). No drift, no temperature, no WiFi or switch in the way: a lower bound
for a board's offset, not a measurement of one. chrony's bound on each clock's error, |offset| +
root dispersion + root delay / 2, is reported beside it, and the rig's own record of each run
(status.json `clock_offsets_ms`, asked through each node's agent) is what the lab records.

Per run: the launch spread (status.json `start_spread_ms`), the senders' offsets' spread, their
sum (what the lab could achieve), and the sum with chrony's bounds instead (the worst case it
vouches for). Needs root; about 2-3 minutes at 5 pairs x 10 runs on 2 cores, a minute of it
chrony settling. docs/measurements/2026-11-23-lab-start-spread.md has the numbers.

    nice -n 19 .venv/bin/python scripts/bench_lab_spread.py [--pairs 5] [--runs 10] [--volume 1MB]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

from rig.rigs.emulated import mgmt
from rig.rigs.emulated.inventory import emulated_inventory
from rig.rigs.emulated.emulated_rig import EmulatedRig
from rig.model.block import BlockSettings
from rig.agents.netns import AGENT
from rig.store.reader import CampaignDir

PREFIX = "ls"
SETUP = "I"
# `chronyc -c tracking`: the fields of its one CSV line, in order.
TRACKING_FIELDS = ("ref_id", "ref_name", "stratum", "ref_time", "offset_s", "last_offset_s", "rms_offset_s",
                   "freq_ppm", "residual_freq_ppm", "skew_ppm", "root_delay_s", "root_dispersion_s",
                   "update_interval_s", "leap")
# The lab's time source: the controller role's chrony.conf, serving the management network.
SERVER_CONF = """\
local stratum 8
allow {subnet}
bindcmdaddress /
pidfile {pidfile}
"""
# A node: the node role's chrony.conf (its server line).
NODE_CONF = """\
server {server} iburst minpoll 4 maxpoll 6
bindcmdaddress /
pidfile {pidfile}
"""


def start_chronyd(rig: EmulatedRig, host: str, conf: str) -> subprocess.Popen:
    """chronyd in the host's namespace, without control of the (shared) system clock (-x). No
    Unix command socket (bindcmdaddress /): chronyc asks on the namespace's 127.0.0.1. It dies
    with the namespace (rig.down kills whatever runs in the rig's namespaces)."""
    d = rig.state_dir / "chrony"
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{host}.conf"
    path.write_text(conf.format(subnet=mgmt.MGMT_SUBNET, server=mgmt.CONTROLLER_ADDRESS, pidfile=d / f"{host}.pid"))
    log = open(d / f"{host}.log", "ab")
    return subprocess.Popen(["ip", "netns", "exec", rig.ns(host), "chronyd", "-x", "-d", "-f", str(path)],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)


def tracking(rig: EmulatedRig, host: str) -> dict | None:
    p = subprocess.run(["ip", "netns", "exec", rig.ns(host), "chronyc", "-h", "127.0.0.1", "-c", "tracking"],
                       capture_output=True, text=True, timeout=10)
    fields = p.stdout.strip().split(",")
    if p.returncode != 0 or len(fields) != len(TRACKING_FIELDS):
        return None
    row = dict(zip(TRACKING_FIELDS, fields))
    for k in TRACKING_FIELDS[2:-1]:
        row[k] = float(row[k])
    # chrony's bound on the clock's error (chrony's FAQ): |offset| + root dispersion + root delay / 2
    row["bound_s"] = abs(row["offset_s"]) + row["root_dispersion_s"] + row["root_delay_s"] / 2
    return row


def wait_synced(rig: EmulatedRig, hosts: list[str], timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    pending = list(hosts)
    while pending and time.monotonic() < deadline:
        rows = {h: tracking(rig, h) for h in pending}
        pending = [h for h, r in rows.items() if not r or r["leap"] != "Normal" or r["ref_name"] != str(mgmt.CONTROLLER_ADDRESS)]
        if pending:
            time.sleep(1)
    if pending:
        raise SystemExit(f"chrony did not synchronise on {', '.join(pending)} within {timeout_s:.0f} s")


class Sampler(threading.Thread):
    """Every node's `chronyc -c tracking`, every `interval_s` (chrony updates every 16-64 s)."""

    def __init__(self, rig: EmulatedRig, hosts: list[str], interval_s: float = 3.0):
        super().__init__(daemon=True)
        self.rig, self.hosts, self.interval_s = rig, hosts, interval_s
        self.samples: list[tuple[float, dict]] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            t = time.time()
            self.samples.append((t, {h: tracking(self.rig, h) for h in self.hosts}))
            self.done.wait(self.interval_s)

    def before(self, t: float) -> dict:
        """The last sample taken before t (the first one if none was)."""
        earlier = [s for at, s in self.samples if at <= t]
        return earlier[-1] if earlier else self.samples[0][1]


def inner(argv: list[str]) -> None:
    """In the management namespace: the campaign through the lab backend, with SSH control
    sockets of its own (the lab's default directory may be in use by another run)."""
    from rig.rigs.backends import LabBackend
    from rig.campaign.runner import run_campaign

    file, inventory, out, control = map(Path, argv)
    result = run_campaign(file, out, LabBackend(inventory, state_dir=control))
    print(result.store.root)


def ms(seconds: float) -> float:
    return seconds * 1000


def analyse(root: Path, sampler: Sampler, senders: list[str]) -> list[dict]:
    rows = []
    statuses = [(run.status(), run) for run in CampaignDir(root).recorded()]
    for st, run in sorted((s for s in statuses if s[0].get("t0")), key=lambda s: s[0]["t0"]):
        t0 = datetime.fromisoformat(st["t0"]).timestamp()
        recorded = st["clock_offsets_ms"]  # the rig's own record: each node's agent asked chronyc before T0
        offsets = [recorded[s] for s in senders if recorded.get(s) is not None]
        chrony = sampler.before(t0)
        bounds = sorted((ms(chrony[s]["bound_s"]) for s in senders if chrony.get(s)), reverse=True)
        launch = st["start_spread_ms"]
        offset_spread = max(offsets) - min(offsets) if len(offsets) == len(senders) else None
        rows.append({
            "run": run.run_id, "status": st["status"], "launch_spread_ms": launch,
            "offsets_ms": {s: recorded.get(s) for s in senders},
            "offset_spread_ms": offset_spread,
            "lab_spread_ms": None if launch is None or offset_spread is None else launch + offset_spread,
            # the two clocks chrony vouches least for, each at its bound, in opposite directions
            "bound_spread_ms": None if launch is None or len(bounds) < 2 else launch + bounds[0] + bounds[1],
            "chrony": {s: chrony.get(s) for s in senders},
        })
    return rows


def fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def report(rows: list[dict], sampler: Sampler, senders: list[str], receivers: list[str]) -> None:
    print("| run | status | launch spread | senders' offsets (ms) | offsets' spread | lab spread | with chrony's bounds |")
    print("|---|---|---|---|---|---|---|")
    for i, r in enumerate(rows, 1):
        offs = " ".join(fmt(r["offsets_ms"][s]) for s in senders)
        print(f"| {i} | {r['status']} | {fmt(r['launch_spread_ms'])} | {offs} | {fmt(r['offset_spread_ms'])} "
              f"| {fmt(r['lab_spread_ms'])} | {fmt(r['bound_spread_ms'])} |")
    for key, name in (("launch_spread_ms", "launch spread"), ("offset_spread_ms", "senders' offsets' spread"),
                      ("lab_spread_ms", "lab spread (launch + offsets)"), ("bound_spread_ms", "with chrony's bounds")):
        vals = [r[key] for r in rows if r[key] is not None]
        if vals:
            print(f"{name}: median {statistics.median(vals):.3f} ms, max {max(vals):.3f} ms ({len(vals)} runs)")
    print("\nchrony, every sample taken during the campaign (ms; offset = system time, chronyc -c tracking):")
    print("| node | offset median / max abs | last offset max abs | RMS offset max | root delay max | root dispersion max | bound max |")
    print("|---|---|---|---|---|---|---|")
    for h in senders + receivers:
        got = [s[h] for _, s in sampler.samples if s.get(h)]
        if not got:
            print(f"| {h} | no sample | | | | | |")
            continue
        col = lambda k: [ms(abs(g[k])) for g in got]  # noqa: E731
        print(f"| {h} | {statistics.median(col('offset_s')):.4f} / {max(col('offset_s')):.4f} | {max(col('last_offset_s')):.4f} "
              f"| {max(col('rms_offset_s')):.4f} | {max(col('root_delay_s')):.4f} | {max(col('root_dispersion_s')):.4f} "
              f"| {max(col('bound_s')):.4f} |")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--inner":
        return inner(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--volume", default="1MB")
    ap.add_argument("--settle-s", type=float, default=60, help="chrony's time after its first sync, before the campaign")
    ap.add_argument("--out", type=Path, default=None, help="where the campaign's results go (default: a new temp dir)")
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="lab-spread-"))
    out.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    rig = EmulatedRig(PREFIX)
    rig.claim()
    rig.down()  # what an interrupted run of this script left (the lock says no one else uses it)
    sampler = None
    try:
        rig.up(BlockSettings(SETUP, "n5", "band7-10mhz", args.pairs, {}), ssh=True)
        topo = rig.topo
        senders, receivers = [p.sender for p in topo.pairs], [p.receiver for p in topo.pairs]
        # As tests/system/test_lab_backend.py: the emulated cell's modems need a next hop, and the agent is
        # this checkout's (the node role would have put it at /opt/rig/rig_agent.py).
        inventory = rig.state_dir / "lab.ini"
        inventory.write_text(emulated_inventory(rig, SETUP, args.pairs) + f"lte_gateway=10.45.0.1\nnode_agent_path={AGENT}\n")
        campaign = out / "lab-spread.yaml"
        campaign.write_text(f"name: labspread\nsetups: [{SETUP}]\npairs: {args.pairs}\nrepetitions: {args.runs}\n"
                            f"factors: {{volume: [{args.volume}], homing: [dual]}}\n")

        start_chronyd(rig, "mgmt", SERVER_CONF)
        for h in topo.nodes:
            start_chronyd(rig, h, NODE_CONF)
        t_sync = time.monotonic()
        wait_synced(rig, topo.nodes)
        print(f"chrony synchronised on {len(topo.nodes)} nodes in {time.monotonic() - t_sync:.1f} s; "
              f"settling {args.settle_s:.0f} s", file=sys.stderr)
        time.sleep(args.settle_s)

        sampler = Sampler(rig, topo.nodes)
        sampler.start()
        t_start = time.monotonic()
        p = subprocess.run(["ip", "netns", "exec", rig.ns("mgmt"), sys.executable, __file__, "--inner",
                            str(campaign), str(inventory), str(out), str(rig.state_dir / "lab-control")],
                           capture_output=True, text=True, timeout=1800)
        wall = time.monotonic() - t_start
        sampler.done.set()
        sampler.join()
        if p.returncode != 0:
            raise SystemExit(f"the campaign failed ({p.returncode}): {p.stderr.strip()[-2000:]}")
        root = Path(p.stdout.strip().splitlines()[-1])
        rows = analyse(root, sampler, senders)
        load_after = os.getloadavg()
        print(f"{root}: {len(rows)} runs in {wall:.0f} s; load average before {load_before[0]:.2f} "
              f"after {load_after[0]:.2f} (5 min: {load_after[1]:.2f})")
        report(rows, sampler, senders, receivers)
        (out / "lab-spread.json").write_text(json.dumps({"runs": rows, "samples": sampler.samples,
                                                         "load": [load_before, load_after]}, indent=1))
    finally:
        if sampler is not None:
            sampler.done.set()
            sampler.join()
        rig.down()


if __name__ == "__main__":
    main()
