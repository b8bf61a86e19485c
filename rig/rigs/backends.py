"""Where a campaign's runs happen: the emulated rig, or the physical lab of an Ansible inventory.

A backend turns a block's settings (setup, WiFi standard, ...) into a RunContext: topology,
node agents and (emulated) radios, with every node configured for the block. The campaign loop
and the runs themselves are the same for both.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rig import congestion
from rig.model.campaign import Campaign
from rig.rigs.emulated.emulated_rig import EmulatedRig
from rig.model.block import BlockSettings
from rig.model.topology import Topology
from rig.core.errors import InputError, RigError
from rig.rigs.lab import CONTROL_DIR, NODE_CC_FIX, check_clocks, lab_topology, lab_transport, load_lab, node_cc_facts
from rig.model.routing import node_plan
from rig.agents.client import AgentPool
from rig.rigs.emulated.radio_side import EmulatedRadios
from rig.run.execute import RunContext, RunSettings
from rig.run.radios import NoRadios, Radios
from rig.run.timeline import check_for_lab
from rig.agents.netns import NetnsTransport
from rig.rigs import mptcpd
from rig.rigs.emulated.path_managers import PathManagers

RECONFIGURE_ENV = "RIG_RECONFIGURE"  # the lab's command to re-wire receivers / re-profile APs


def configure_nodes(topo: Topology, agents: AgentPool, run_settings: RunSettings, radios: Radios | None = None,
                    senders: bool = True) -> RunContext:
    """Every node cleared of traffic programs no agent owns, and its routing plan for the setup
    (senders dual-homed). senders=False: the receivers' plans only; each run's configure gives the senders the plan of its homing (rig.run.execute), so a
    campaign does not apply a sender's plan twice when a block's first run is not dual-homed."""
    ctx = RunContext(topo=topo, agents=agents, settings=run_settings, radios=radios or NoRadios(),
                     shared_clock=isinstance(radios, EmulatedRadios))
    hosts = topo.nodes if senders else [h for h in topo.nodes if h not in {p.sender for p in topo.pairs}]

    def node(a) -> None:
        # What a killed campaign or agent left running (a sink holding its port): stopped first.
        a.request("stop_strays")
        if a.host in hosts:
            ctx.apply(a, "paths", plan=node_plan(topo, a.host, manager=run_settings.manager))
    agents.each(topo.nodes, node)
    return ctx


def configure_setup(rig: EmulatedRig, agents: AgentPool, settings: BlockSettings, run_settings: RunSettings,
                    senders: bool = True) -> RunContext:
    """Radios for the block's setup and WiFi standard, then the nodes (senders: configure_nodes)."""
    rig.attach_radios(settings)
    assert rig.topo is not None
    return configure_nodes(rig.topo, agents, run_settings, EmulatedRadios(rig.radios, rig.stations, rig.hops), senders)


def require_running(rig: EmulatedRig, ssh: bool, pairs: int) -> None:
    """--use-running: the rig must already be up (with its management network for SSH) and big enough."""
    st = rig.status()
    if not st["up"] or not st["settings"]:
        raise RigError(f"emulated rig '{rig.prefix}' is not up (rig emu up --prefix {rig.prefix})")
    if ssh and not st["ssh"]:
        raise RigError(f"emulated rig '{rig.prefix}' is up without --ssh: its nodes have no SSH server")
    if st["settings"]["pairs"] < pairs:
        raise RigError(f"emulated rig '{rig.prefix}' has {st['settings']['pairs']} pairs, the campaign needs {pairs}")


def check_host_ccs(campaign: Campaign, source: str) -> None:
    """Every congestion control the campaign names must run on this host, whose kernel the emulated
    nodes share: the rig's own (coupled ones, rig_reno) are registered here."""
    wanted = campaign.factors.cc
    coupled = [c for c in wanted if c in congestion.RIG_CCS]
    if coupled:
        congestion.ensure_registered(coupled)
    available = congestion.available()
    for i, cc in enumerate(wanted):
        if cc not in available:
            raise InputError(source, f"factors.cc[{i}]", f"{cc!r} cannot run on this host: {congestion.explain(cc)}")


class EmulatedBackend:
    """transport: `netns` (ip netns exec) or `ssh` (over the rig's management network).
    use_running: the rig already up under `prefix` (e.g. provisioned with ansible/nodes.yml),
    left up afterwards so its nodes keep what was installed on them."""

    def __init__(self, prefix: str = "rig", transport: str = "netns", agent_path: str | None = None,
                 use_running: bool = False, keep_up: bool = False):
        self.rig = EmulatedRig(prefix)
        self.transport, self.agent_path = transport, agent_path
        self.use_running, self.keep_up = use_running, keep_up
        self.agents: AgentPool | None = None
        self.path_managers = PathManagers(self.rig.state_dir / "mptcpd")
        self.name = "emulated"

    def check(self, campaign: Campaign, source: str) -> None:
        self.rig.claim()
        if self.use_running:
            require_running(self.rig, self.transport == "ssh", campaign.pairs)
        check_host_ccs(campaign, source)
        if campaign.paths.manager == "userspace":
            mptcpd.plugin_built()  # before anything is written


    def block(self, settings: BlockSettings, run_settings: RunSettings) -> RunContext:
        if self.agents is None and self.transport == "ssh":
            self.rig.up(settings, ssh=True)
            self.agents = AgentPool(self.rig.ssh_transport(self.agent_path), self.rig.topo.nodes)
        elif self.agents is None:  # the agents start (Python) while the core and the radios are wired
            with ThreadPoolExecutor(max_workers=1) as pool:
                starting = []
                via = NetnsTransport(self.rig.prefix, self.rig.state_dir / "agent-logs", self.rig.node_dir)
                try:
                    self.rig.up(settings, namespaces_ready=lambda: starting.append(pool.submit(AgentPool, via, self.rig.topo.nodes)))
                except BaseException:
                    if starting and starting[0].exception() is None:
                        starting[0].result().close()
                    raise
                self.agents = starting[0].result()
        # The campaign's runs route the senders themselves (each run's homing).
        ctx = configure_setup(self.rig, self.agents, settings, run_settings, senders=False)
        # userspace: mptcpd with the rig's plugin in each sender's namespace (rig.rigs.mptcpd)
        self.path_managers.ensure([self.rig.ns(p.sender) for p in ctx.topo.pairs]
                                  if run_settings.manager == "userspace" else [])
        return ctx

    # After a lost component: what died (cheap, checked before every run), and the block rebuilt.
    restore_delays_s = (0.5, 1.0, 2.0)  # waits before the tries (a namespace is there or not)

    def lost(self) -> list[str]:
        agents = self.agents.lost() if self.agents is not None else []
        return ([f"node agent on {h}" for h in agents] + [f"radio emulator {n}" for n in self.rig.dead_radios()]
                + [f"mptcpd in {ns}" for ns in self.path_managers.dead()])

    def restore(self, settings: BlockSettings, run_settings: RunSettings) -> RunContext:
        """Restart lost agents, then the block afresh: radios (new TAPs; after a lost node every
        radio, else those that died or that the block changes), nodes' configuration, servers."""
        if self.agents is not None and self.agents.restart_lost():
            self.rig.stop_radios()  # the lost node's TAPs are made anew, as at bring-up
        return self.block(settings, run_settings)

    def close(self) -> None:
        if self.agents is not None:
            self.agents.close()
        self.path_managers.stop()
        if not (self.keep_up or self.use_running):
            self.rig.down()


class LabBackend:
    """The physical lab: nodes over SSH as in the inventory, radios real. Re-wiring receivers for
    another setup (or re-profiling the APs) is Ansible's job: between blocks the command in
    $RIG_RECONFIGURE runs, with {inventory}, {setup} and {wifi_standard} filled in, e.g.
    `ansible-playbook -i {inventory} ansible/setup.yml -e rig_setup={setup}`."""

    def __init__(self, inventory: Path, state_dir: Path | None = None):

        self.inventory = Path(inventory)
        self.lab = load_lab(self.inventory)
        self.name = str(self.inventory)
        self.state_dir = state_dir or CONTROL_DIR
        self.agents: AgentPool | None = None
        self.current: tuple | None = None

    def check(self, campaign: Campaign, source: str) -> None:

        check_for_lab(campaign.events, source)
        # every needed host variable is there, for each setup
        topos = [lab_topology(self.lab, setup, campaign.pairs, tuple(campaign.paths.radios), campaign.paths.mode)
                 for setup in campaign.setups]
        several = len(campaign.setups) > 1 or len(campaign.factors.wifi_standard) > 1
        if several and not os.environ.get(RECONFIGURE_ENV):
            raise InputError(source, "setups", f"the lab is wired for one setup and one WiFi standard at a time: "
                                               f"run one per campaign, or set ${RECONFIGURE_ENV} (docs/provisioning.md)")
        # The senders' kernels run the CC (the receivers' does not matter for an upload), and the
        # lab's CCs are the boards' own: registered by the node role, not by this controller.
        senders = sorted({p.sender for topo in topos for p in topo.pairs})
        facts = node_cc_facts(self.lab, senders, self.state_dir)
        for i, cc in enumerate(campaign.factors.cc):
            for host in senders:
                why = congestion.why_not(cc, facts[host], NODE_CC_FIX)
                if why:
                    raise InputError(source, f"factors.cc[{i}]", f"{cc!r} cannot run on {host}: {why}")
        check_clocks(self.lab, sorted({h for topo in topos for h in topo.nodes}), self.state_dir)

    def _reconfigure(self, settings: BlockSettings) -> None:
        template = os.environ.get(RECONFIGURE_ENV)
        if not template:
            return
        cmd = template.format(inventory=shlex.quote(str(self.inventory)), setup=settings.setup,
                              wifi_standard=settings.wifi_standard)
        p = subprocess.run(cmd, shell=True, capture_output=True, text=True)
        if p.returncode != 0:
            raise RigError(f"${RECONFIGURE_ENV} failed for Setup {settings.setup}: {(p.stderr or p.stdout).strip()[-400:]}")

    def block(self, settings: BlockSettings, run_settings: RunSettings) -> RunContext:

        key = (settings.setup, settings.wifi_standard)
        if key != self.current:  # the first block too: the lab may be wired for something else
            self._reconfigure(settings)
        self.current = key
        topo = lab_topology(self.lab, settings.setup, settings.pairs, settings.radios, settings.mode)
        if self.agents is None:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            self.agents = AgentPool(lab_transport(self.lab, topo.nodes, self.state_dir), topo.nodes)
        return configure_nodes(topo, self.agents, run_settings)

    # A rebooting board takes a minute or two before its SSH server answers again.
    restore_delays_s = (5.0, 10.0, 20.0, 40.0, 60.0)

    def lost(self) -> list[str]:
        return [f"node agent on {h}" for h in (self.agents.lost() if self.agents is not None else [])]

    def restore(self, settings: BlockSettings, run_settings: RunSettings) -> RunContext:
        """New SSH sessions and agents for lost nodes, then every node's configuration re-applied."""
        if self.agents is not None:
            self.agents.restart_lost()
        return self.block(settings, run_settings)

    def close(self) -> None:
        if self.agents is not None:
            self.agents.close()
