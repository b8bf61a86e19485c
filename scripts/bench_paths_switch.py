#!/usr/bin/env python3
"""How long a node agent's `paths` request takes when a sender's homing changes, and how many
`ip` processes it starts.

    .venv/bin/python scripts/bench_paths_switch.py --prefix hcb               # 1 sender
    .venv/bin/python scripts/bench_paths_switch.py --prefix hcb --senders 5   # 5 at once, as a run's configure
    .venv/bin/python scripts/bench_paths_switch.py --prefix hcb --agent /tmp/old/nodes/agent/rig_agent.py

As root. Makes `--senders` sender namespaces (`<prefix>-s<N>`, with a gateway namespace each; the
plan's interfaces are veths to it), starts a node agent in each (the rig's own, or `--agent`),
applies the dual-homed plan of the given setup, then switches every sender's homing
dual -> lte -> wifi -> dual `--cycles` times, all senders at once as the runner's configure
does, and prints the milliseconds per switch (the slowest sender's round trip) by switch:
median, p90, max. With `--count`, a second pass has `ip` replaced on the agents' PATH by a
wrapper that logs each call: the `ip` processes per switch and per sender, by kind. Removes
its namespaces at the end, also on failure. Numbers are printed, never asserted; on a shared
host they are upper bounds (the load average is printed with them).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rig.rigs.emulated import netns as rig_netns  # noqa: E402
from rig.model.routing import node_plan  # noqa: E402
from rig.agents.client import AgentPool  # noqa: E402
from rig.model.topology import topology  # noqa: E402
from rig.agents.transport import popen_agent  # noqa: E402
from rig.agents.netns import AGENT, NetnsTransport  # noqa: E402
from rig.rigs.emulated import node_configs  # noqa: E402

SWITCHES = [("dual", "lte"), ("lte", "wifi"), ("wifi", "dual")]


class Transport(NetnsTransport):
    def __init__(self, prefix: str, agent: Path, node_dir: Path):
        super().__init__(prefix, node_dir=node_dir)
        self.agent = agent

    def start_agent(self, host: str):
        node = ["--node", str(self.node_dir / f"{host}.json")]  # its radios, as on a node
        return popen_agent(self.argv(host, [sys.executable, "-u", "-I", str(self.agent), *node]))


def make_node(prefix: str, host: str, plan: dict) -> None:
    node, gw = f"{prefix}-{host}", f"{prefix}-{host}gw"
    rig_netns.add(node)
    rig_netns.add(gw)
    for i in plan["interfaces"]:
        peer = "g" + i["name"]
        rig_netns.ip("link", "add", i["name"], "type", "veth", "peer", "name", peer, "netns", gw, netns=node)
        rig_netns.ip("link", "set", peer, "up", netns=gw)
        if i.get("gateway"):
            rig_netns.ip("addr", "add", f"{i['gateway']}/{i['prefixlen']}", "dev", peer, netns=gw)


def switch_times(agents: AgentPool, topo, senders: list[str], cycles: int) -> dict[tuple, list[float]]:
    times: dict[tuple, list[float]] = {s: [] for s in SWITCHES}
    plans = {(h, homing): node_plan(topo, h, homing) for h in senders for homing in ("dual", "lte", "wifi")}
    agents.each(senders, lambda a: a.request("paths", plan=plans[a.host, "dual"]))
    for _ in range(cycles):
        for switch in SWITCHES:
            began = time.perf_counter()
            agents.each(senders, lambda a: a.request("paths", plan=plans[a.host, switch[1]]))
            times[switch].append((time.perf_counter() - began) * 1000)
    return times


def ip_wrapper(directory: Path, log: Path) -> None:
    real = shutil.which("ip")
    wrapper = directory / "ip"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real} "$@"\n')
    wrapper.chmod(0o755)


def kinds(line: str) -> str:
    words = [w for w in line.split() if not w.startswith("-")]
    return " ".join(words[:2]) if line.split()[-1:] != ["-"] else "batch"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prefix", required=True, help="namespace prefix (one per concurrent bench)")
    ap.add_argument("--setup", default="I", choices=("I", "II", "III"))
    ap.add_argument("--senders", type=int, default=1)
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--agent", type=Path, default=AGENT,
                    help="the rig_agent.py to run (default: this tree's; one that reads its node's radios, --node)")
    ap.add_argument("--count", action="store_true", help="also count the ip processes per switch")
    args = ap.parse_args()
    if rig_netns.with_prefix(args.prefix):
        sys.exit(f"namespaces with prefix {args.prefix} exist already")
    topo = topology(args.setup, args.senders)
    senders = [p.sender for p in topo.pairs]
    path = os.environ["PATH"]
    node_dir = Path(tempfile.mkdtemp(prefix="bench-nodes-"))
    node_configs.write(node_dir, senders)
    try:
        for h in senders:
            make_node(args.prefix, h, node_plan(topo, h))
        load = os.getloadavg()[0]
        with AgentPool(Transport(args.prefix, args.agent, node_dir), senders) as agents:
            times = switch_times(agents, topo, senders, args.cycles)
        load_after = os.getloadavg()[0]
        print(f"agent {args.agent}, setup {args.setup}, {args.senders} sender(s), {args.cycles} cycles, "
              f"load {load:.2f} -> {load_after:.2f}")
        print("| switch | median ms | p90 ms | max ms |\n|---|---|---|---|")
        every = []
        for (a, b), ms in times.items():
            every += ms
            print(f"| {a} -> {b} | {statistics.median(ms):.1f} | {statistics.quantiles(ms, n=10)[-1]:.1f} | {max(ms):.1f} |")
        print(f"| all | {statistics.median(every):.1f} | {statistics.quantiles(every, n=10)[-1]:.1f} | {max(every):.1f} |")
        if args.count:
            with tempfile.TemporaryDirectory() as tmp:
                log = Path(tmp) / "ip.log"
                ip_wrapper(Path(tmp), log)
                os.environ["PATH"] = f"{tmp}:{path}"
                with AgentPool(Transport(args.prefix, args.agent, node_dir), senders) as agents:
                    agents.each(senders, lambda a: a.request("paths", plan=node_plan(topo, a.host, "dual")))
                    log.write_text("")
                    os.environ["PATH"] = path
                    switch_times(agents, topo, senders, 1)
                calls = log.read_text().splitlines()
            per = len(calls) / (len(SWITCHES) + 1) / len(senders)
            print(f"\nip processes per switch and sender (an agent that applied the plan before): {per:.1f}; by kind:",
                  dict(Counter(kinds(c) for c in calls)))
    finally:
        os.environ["PATH"] = path
        rig_netns.delete(rig_netns.with_prefix(args.prefix))
        shutil.rmtree(node_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
