#!/usr/bin/env python3
"""Truth check of the rig's flow completion time against packet captures.

One emulated path (links radios, Setup II, WiFi only): 10 Mbit/s on the sender's hop, 10 ms
one-way on each of the path's four hop directions (40 ms RTT), no jitter. For each volume the
rig's transfer runs through the node agents as in a campaign, while a raw-socket capture with
kernel timestamps runs on the sender's and on the receiver's interface. Compared:
  rig FCT      = last byte read by the receiver - the sender's start (rig_transfer.py)
  capture FCT  = last data segment at the receiver's interface - first SYN at the sender's
  (and, for reference, the receiver's capture alone: first SYN to last data segment, both at
  the receiver, which is one SYN one-way delay shorter).

    .venv/bin/python scripts/bench_fct_truth.py [REPS]      # as root; ~1 min
"""

from __future__ import annotations

import json
import shutil
import signal
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

from rig.rigs.backends import configure_setup
from rig.run.execute import RunSettings
from rig.model.campaign import Limits
from rig.rigs.emulated.emulated_rig import EmulatedRig
from rig.model.block import BlockSettings
from rig.model.routing import node_plan
from rig.agents.client import AgentPool
from rig.agents.netns import NetnsTransport

PORT = 5301
PATH = {"wifi": {"rate_bps": 10e6, "delay_ms": 10.0, "jitter_ms": 0.0, "direction": "both"},
        "receiver_a": {"delay_ms": 10.0, "jitter_ms": 0.0, "direction": "both"}}
VOLUMES = [10_000, 100_000, 1_000_000, 10_000_000]

# A capture of TCP segments to or from PORT on one interface: kernel receive timestamps
# (SIOCGSTAMP), one JSON line per segment: [t, syn, payload bytes, towards PORT, seq]. Runs inside
# a namespace.
CAPTURE = r"""
import fcntl, json, signal, socket, struct, sys
iface, port = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))  # ETH_P_ALL: outgoing too
s.bind((iface, 0))
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
out = sys.stdout
while True:
    frame = s.recv(65535)
    ip = frame[14:]
    if frame[12:14] != b"\x08\x00" or ip[9] != 6:
        continue
    ihl = (ip[0] & 15) * 4
    tcp = ip[ihl:]
    sport, dport = struct.unpack("!HH", tcp[:4])
    if port not in (sport, dport):
        continue
    sec, usec = struct.unpack("@ll", fcntl.ioctl(s, 0x8906, b"\0" * 16))
    total = struct.unpack("!H", ip[2:4])[0]
    payload = total - ihl - (tcp[12] >> 4) * 4
    seq = struct.unpack("!I", tcp[4:8])[0]
    out.write(json.dumps([sec + usec / 1e6, bool(tcp[13] & 2) and not tcp[13] & 16, payload, dport == port, seq]) + "\n")
    out.flush()
"""


def capture(netns: str, iface: str, path: Path) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", netns, sys.executable, "-c", CAPTURE, iface, str(PORT)],
                            stdout=path.open("w"), stderr=subprocess.DEVNULL)


def segments(path: Path) -> list[list]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def in_order_complete(path: Path) -> float:
    """When the receiver's interface had every byte of the stream (the arrival that filled the
    last gap): a segment lost in a queue and sent again completes the data only when it arrives."""
    first_seq = syn_seq(path)
    data = sorted((t, (seq - first_seq) % 2**32, payload) for t, _, payload, to_port, seq in segments(path)
                  if payload > 0 and to_port)
    end = max(start + n for _, start, n in data)
    have, pending = 1, []  # sequence 1: the first data byte after the SYN; ranges not yet joined
    for t, start, n in data:
        pending.append((start, start + n))
        grew = True
        while grew:
            grew = False
            for s_, e_ in pending:
                if s_ <= have < e_:
                    have, grew = e_, True
            pending = [(s_, e_) for s_, e_ in pending if e_ > have]
        if have >= end:
            return t
    return data[-1][0]


def syn_seq(path: Path) -> int:
    return next(seq for _, syn, _, to_port, seq in segments(path) if syn and to_port)


def one(agents: AgentPool, rig: EmulatedRig, volume: int, workdir: Path) -> dict:
    p = rig.topo.pairs[0]
    sender_cap, receiver_cap = workdir / "s.jsonl", workdir / "r.jsonl"
    caps = [capture(rig.ns("s1"), p.radio("wifi").ifname, sender_cap), capture(rig.ns("r1"), p.receiver_a.ifname, receiver_cap)]
    # The sender knows its gateway's MAC: an ARP exchange before the SYN (a real part of a first
    # connection's time, but not of TCP's) is not what this compares.
    subprocess.run(["ip", "netns", "exec", rig.ns("s1"), "ping", "-c1", "-W2", "-I", str(p.radio("wifi").address),
                    str(p.receiver_a.address)], capture_output=True)
    time.sleep(0.3)  # the captures are listening
    try:
        agents["r1"].request("launch", key="sink", program="transfer", args={"mode": "sink", "port": PORT, "connections": 1})
        while not agents["r1"].request("listening", port=PORT)["listening"]:
            time.sleep(0.01)
        agents["s1"].request("launch", key="source", program="transfer", args={
            "mode": "source", "port": PORT, "connections": 1, "target": str(p.receiver_a.address),
            "bind": str(p.radio("wifi").address), "bytes": volume, "cc": "cubic", "at": time.time() + 0.2})
        src = json.loads(agents["s1"].request("wait", key="source", timeout=120)["stdout"])
        dst = json.loads(agents["r1"].request("wait", key="sink", timeout=30)["stdout"])
        time.sleep(0.2)
    finally:
        for c in caps:
            c.send_signal(signal.SIGTERM)
            c.wait()
    syn_sent = min(t for t, syn, _, to_port, _ in segments(sender_cap) if syn and to_port)
    syn_received = min(t for t, syn, _, to_port, _ in segments(receiver_cap) if syn and to_port)
    last_data = in_order_complete(receiver_cap)
    conn = dst["connections"][0]
    assert conn["bytes"] == volume, conn
    return {"rig": conn["last_byte_at"] - src["started_at"], "capture": last_data - syn_sent,
            "receiver_only": last_data - syn_received}


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    rig = EmulatedRig("fc" + uuid.uuid4().hex[:5])
    settings = BlockSettings("II", "n5", "band7-10mhz", 1, PATH)
    workdir = Path("/tmp") / rig.prefix
    workdir.mkdir(exist_ok=True)
    try:
        rig.up(settings)
        with AgentPool(NetnsTransport(rig.prefix, node_dir=rig.node_dir), rig.topo.nodes) as agents:
            ctx = configure_setup(rig, agents, settings, RunSettings(Limits()))
            agents["s1"].request("paths", plan=node_plan(ctx.topo, "s1", "wifi"))  # one path: WiFi only
            print("| volume | rig FCT (ms) | capture FCT (ms) | rig - capture (ms) | allowed (1 ms + 1 %) | receiver-only capture (ms) |")
            print("|---|---|---|---|---|---|")
            for volume in VOLUMES:
                rows = [one(agents, rig, volume, workdir) for _ in range(reps)]
                rig_ms = statistics.median(r["rig"] for r in rows) * 1000
                cap_ms = statistics.median(r["capture"] for r in rows) * 1000
                diffs = [(r["rig"] - r["capture"]) * 1000 for r in rows]
                worst = max(diffs, key=abs)
                rcv_ms = statistics.median(r["receiver_only"] for r in rows) * 1000
                print(f"| {volume:,} B | {rig_ms:.2f} | {cap_ms:.2f} | {statistics.median(diffs):+.3f} (worst {worst:+.3f}) | "
                      f"{1 + cap_ms / 100:.2f} | {rcv_ms:.2f} |", flush=True)
    finally:
        rig.down()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
