"""The emulated rig: one network namespace per host, a wired core, ns-3 radio networks.

    s1..sN (wlan0 -> AP1, lte0 -> cell)          r1..rN (wlan0 -> AP2, B side per setup)
          \\                                     /
    [ap1 BSS]  [cell]          [ap2 BSS]  [ap3 BSS]      radio networks: ns-3 processes
        ap1     epc              ap2        ap3          gateway hosts (namespaces)
          \\______\\___ core ___/__________/              veth, no impairment

The ns-3 processes run in the `<prefix>-radio` namespace and own their TAP devices, which they
open in the hosts' namespaces under the hosts' interface names (wlan0, lte0, radio0). A TAP
disappears with the process that opened it, so killing the rig's processes and deleting its
namespaces leaves nothing behind.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from dataclasses import dataclass
from ipaddress import IPv4Network
from pathlib import Path
from typing import Callable

from rig.rigs.emulated import impairments, netns
from rig.model.topology import (ATTACHMENTS, CORE_LINKS, GATEWAY_HOST, INFRA_HOSTS, RADIO_NETWORKS, RadioInterface, Topology,
                              attachments_of, gateway_address, topology)
from rig.rigs.emulated import mgmt, node_configs
from rig.rigs.emulated.radio import RadioProcess, stop_all
from rig.rigs.emulated.radiospec import LteCell, LteTtiCell, Pipe, RadioNetworkSpec, Station, WifiBss
from rig.core.errors import RigError
from rig.model.block import BlockSettings
from rig.model.profiles import lte_profile, wifi_profile
from rig.agents.netns import AGENT
from rig.agents.ssh import SshTransport

DEFAULT_PREFIX = "rig"
STATE_ROOT = Path("/run/rig")


def _profile_pipe(kind: str, settings: BlockSettings):
    """A station link of the `links` radios as the profile describes it, and the medium's rate
    (raised to the fastest hop a campaign's impairments ask for)."""

    emu = (wifi_profile(settings.wifi_standard) if kind == "wifi" else lte_profile(settings.lte_profile)).emulation
    pipe = Pipe(rate_bps=emu.rate_bps, delay_s=emu.delay_ms / 1000, jitter_s=emu.jitter_ms / 1000, loss=emu.loss_pct / 100)
    return pipe, emu.medium_rate_bps


# The simulated cell's PGW and the EPC namespace meet on a /30 of their own (the SGi link).
SGI_ADDRESS, SGI_GATEWAY = "10.46.0.2/30", "10.46.0.1"


def _radio_spec(network: str, kind: str, stations: list[RadioInterface], pipes: list[tuple], settings: BlockSettings,
                ns: Callable[[str], str]):
    """The emulator's spec for one radio network under the settings' radio model; `pipes` are the
    stations' (up, down) links: the whole link on `links` radios, impairments on top of ns-3's.
    Every TAP is opened in its host's namespace `ns(host)` under its interface's name there
    (radio0 on the gateway host)."""

    gateway_tap = _tap_name(network, None)
    gateway = {"gateway_tap": gateway_tap, "gateway_netns": ns(GATEWAY_HOST[network]), "gateway_ifname": "radio0"}
    if settings.model == "links":
        medium = (max([_profile_pipe(kind, settings)[1]] + [p.rate_bps for pair in pipes for p in pair])
                  if settings.shared_medium else 0.0)
        return RadioNetworkSpec(name=network, **gateway, medium_rate_bps=medium,
                                stations=tuple(Station(tap=_tap_name(network, s), up=up, down=down, netns=ns(s.host), ifname=s.ifname)
                                               for s, (up, down) in zip(stations, pipes)))
    if kind == "wifi":
        w = wifi_profile(settings.wifi_standard)
        return RadioNetworkSpec(name=network, **gateway, kind="dcf" if settings.model == "models" else "wifi",
                                wifi=WifiBss(standard=w.standard, band_ghz=w.band_ghz, width_mhz=w.width_mhz, channel=w.channel),
                                stations=tuple(Station(tap=_tap_name(network, s), up=up, down=down, netns=ns(s.host), ifname=s.ifname)
                                               for s, (up, down) in zip(stations, pipes)))
    lte = lte_profile(settings.lte_profile)
    if settings.model == "models":  # a cell at layer 2, like the links radios: no PGW, nodes addressed as there
        return RadioNetworkSpec(name=network, **gateway, kind="lte_tti", lte_tti=LteTtiCell(prb=lte.prb),
                                stations=tuple(Station(tap=_tap_name(network, s), up=up, down=down, netns=ns(s.host), ifname=s.ifname)
                                               for s, (up, down) in zip(stations, pipes)))
    return RadioNetworkSpec(name=network, **gateway, kind="lte",
                            lte=LteCell(prb=lte.prb, sgi_address=SGI_ADDRESS, sgi_gateway=SGI_GATEWAY, dl_earfcn=lte.dl_earfcn,
                                          cqi_period_ms=lte.cqi_period_ms),
                            stations=tuple(Station(tap=_tap_name(network, s), up=up, down=down, address=f"{s.address}/{s.prefixlen}",
                                                   netns=ns(s.host), ifname=s.ifname)
                                           for s, (up, down) in zip(stations, pipes)))


def _station_pipes(network: str, kind: str, stations: list[RadioInterface], settings: BlockSettings,
                   hop_of: dict) -> tuple[list[tuple], list[dict]]:
    """Each station's (up, down) pipes, and the rows that record what is in force on each hop."""

    base = _profile_pipe(kind, settings)[0] if settings.model == "links" else Pipe(rate_bps=0, delay_s=0)
    pipes = [impairments.station_pipes(base, hop_of.get((s.host, s.ifname)), settings.impairments) for s in stations]
    return pipes, impairments.hop_rows(network, stations, pipes, hop_of, settings.impairments)


def _tap_name(network: str, station: RadioInterface | None) -> str:
    return f"{network}g" if station is None else f"{network}{station.host}{station.ifname[-1]}"


def station_tap(radios: dict, stations: dict, host: str, interface: str, where: str) -> tuple[str, str]:
    """(radio network, station TAP) of `host`'s `interface` among running `radios` (network ->
    RadioProcess), `stations` mapping each TAP to its (host, interface)."""
    for tap, node in stations.items():
        if node != (host, interface):
            continue
        for network, proc in radios.items():
            if any(s.tap == tap for s in proc.spec.stations):
                return network, tap
    raise RigError(f"no radio station for {host} {interface} on {where}")


class EmulatedRig:
    def __init__(self, prefix: str = DEFAULT_PREFIX):
        if not prefix.replace("_", "").isalnum() or len(prefix) > 8:
            raise RigError(f"rig prefix {prefix!r} must be alphanumeric and at most 8 characters")
        self.prefix = prefix
        self.state_dir = STATE_ROOT / prefix
        self.node_dir = self.state_dir / "nodes"  # each node's own configuration: its radios (node_configs)
        self.radios: dict[str, object] = {}  # network -> RadioProcess
        self.hops: list[dict] = []  # what is in force on each station hop (rig.rigs.emulated.impairments)
        self.stations: dict[str, tuple[str, str]] = {}  # station TAP -> (host, interface)
        self.topo: Topology | None = None
        self.settings: BlockSettings | None = None

    def ns(self, host: str) -> str:
        return f"{self.prefix}-{host}"

    def claim(self) -> None:
        """One process at a time drives a rig: another campaign (or `rig emu up/down`) on the same
        prefix would rebuild or remove the namespaces under it. The lock goes with the process."""
        try:
            STATE_ROOT.mkdir(parents=True, exist_ok=True)
            fd = os.open(STATE_ROOT / f"{self.prefix}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as e:
            raise RigError(f"emulated rig '{self.prefix}': cannot take its lock in {STATE_ROOT} ({e.strerror}): "
                           f"the emulated rig needs root") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.read(fd, 32).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise RigError(f"emulated rig '{self.prefix}' is in use by another process (pid {owner}): wait for it "
                           f"to finish, or give this one its own --prefix") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._lock_fd = fd

    # -- bring-up ------------------------------------------------------------------------

    def up(self, settings: BlockSettings, ssh: bool = False, namespaces_ready: Callable[[], None] | None = None) -> Topology:
        """Namespaces and core (once), then radios and node addresses for `settings`.

        ssh: also a management network and an SSH server on every node (docs/design.md).
        namespaces_ready: called once every namespace exists, before the core and the radios are
        wired (e.g. to start the node agents meanwhile: they need no interface to start).
        """
        self.topo = topology(settings.setup, settings.pairs, settings.radios, settings.mode)  # type: ignore[arg-type]
        self.state_dir.mkdir(parents=True, exist_ok=True)
        node_configs.write(self.node_dir, self.topo.nodes)  # before any agent starts
        hosts = [*self.topo.nodes, *INFRA_HOSTS, "radio"]
        fresh, strays = not netns.exists(self.ns("core")), netns.exists(self.ns("radio"))
        netns.add_all([self.ns(h) for h in hosts])
        if namespaces_ready is not None:
            namespaces_ready()
        if fresh:
            self._set_up_routers()
        starting = self._start_radios(settings, strays)  # the emulators start up while the core is wired
        try:
            if fresh:
                self._wire_core()
            if ssh and not netns.exists(self.ns("mgmt")):
                self._start_ssh([*self.topo.nodes, *INFRA_HOSTS])
        except BaseException:
            self._stop(list(starting[0].values()))
            raise
        self._finish_radios(settings, *starting)
        return self.topo

    def _start_ssh(self, hosts: list[str]) -> None:

        mgmt.wire_management(self.prefix, hosts)
        keys = mgmt.SshKeys(self.state_dir)
        keys.ensure()
        nodes = self.topo.nodes if self.topo else []
        # Each node gets its own host key, recorded before its sshd starts: the rig knows its nodes.
        mgmt.record_host_keys(keys, [mgmt.prepare_layer(self.state_dir, host, keys, str(AGENT), self.node_dir) for host in nodes])
        for host in nodes:
            mgmt.start_sshd(self.prefix, self.state_dir, host)
        mgmt.wait_for_ssh(self.prefix, nodes)

    def ssh_transport(self, agent_path: str | None = None, provisioning: bool = False):
        """The SSH transport to this rig's nodes, over its management network.

        With the runner's key (the default) the runner's account runs the agent its authorized_keys
        names, whatever is asked; provisioning=True logs in as root with the key that gets a shell
        (Ansible, tests)."""

        assert self.topo is not None
        keys = mgmt.SshKeys(self.state_dir)
        return SshTransport(
            {h: str(mgmt.mgmt_address(h)) for h in self.topo.nodes}, known_hosts=keys.known_hosts,
            control_dir=self.state_dir / "ssh", key=keys.provisioning if provisioning else keys.runner,
            user="root" if provisioning else mgmt.RUNNER_USER,
            agent_path=agent_path or str(AGENT), via=["ip", "netns", "exec", self.ns("mgmt")],
            retrust=f"the emulated rig records its nodes' keys when it comes up: rig emu down --prefix {self.prefix}, "
                    f"then rig emu up --ssh",
        )

    def _wire_core(self) -> None:
        """A veth from the core to each gateway host, addressed, and the core's routes to the
        radio subnets: one `ip -batch` for the core, one per host."""
        core_cmds = []
        for host, subnet in CORE_LINKS.items():
            net = IPv4Network(subnet)
            core_cmds += [f"link add {host} type veth peer name eth0 netns {self.ns(host)}",
                          f"addr add {net.network_address + 1}/{net.prefixlen} dev {host}", f"link set {host} up"]
        for subnet, network in sorted(set(ATTACHMENTS.values())):  # the cell's two attachments share its pool
            via = IPv4Network(CORE_LINKS[GATEWAY_HOST[network]]).network_address + 2
            core_cmds.append(f"route add {subnet} via {via}")
        netns.ip_batch(self.ns("core"), core_cmds)
        hosts = {}
        for host, subnet in CORE_LINKS.items():
            net = IPv4Network(subnet)
            hosts[self.ns(host)] = [f"addr add {net.network_address + 2}/{net.prefixlen} dev eth0", "link set eth0 up",
                                    f"route add default via {net.network_address + 1}"]
        netns.ip_batches(hosts)

    def _set_up_routers(self) -> None:
        """Routers: forward, and never redirect a hairpinned packet. Before the emulators start:
        the radio0 TAPs they open in the gateway hosts take `default`'s send_redirects when created."""
        netns.sh_each([self.ns(h) for h in INFRA_HOSTS], "sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.send_redirects=0 "
                                                         "net.ipv4.conf.default.send_redirects=0 net.ipv4.conf.all.rp_filter=0")

    def attach_radios(self, settings: BlockSettings) -> None:
        """One ns-3 process per radio network, its TAPs in their hosts. An emulator already
        running with the same spec (same stations, same pipes) is kept with its TAPs, the others
        are (re)started side by side: a setup change rebuilds only the networks it changes."""
        self._finish_radios(settings, *self._start_radios(settings))

    def _start_radios(self, settings: BlockSettings, strays: bool = True) -> tuple[dict, dict]:
        """attach_radios' first half: the replaced emulators stopped (side by side: a replacement
        shares their files, and its TAPs their hosts' interface names), then those the settings
        need and the running ones do not have spawned, not waited for. Returns (spawned: network
        -> RadioProcess, wanted: network -> (spec, stations)) for _finish_radios. strays=False:
        the radio namespace is new, no earlier emulator can run in it."""

        self.topo = topology(settings.setup, settings.pairs, settings.radios, settings.mode)  # type: ignore[arg-type]
        hop_of = impairments.hop_names(self.topo)
        wanted, hops = {}, []
        for network, kind in RADIO_NETWORKS.items():
            stations = self.topo.stations(network)
            if stations:
                pipes, rows = _station_pipes(network, kind, stations, settings, hop_of)
                hops += rows
                wanted[network] = (_radio_spec(network, kind, stations, pipes, settings, self.ns), stations)
        kept = {n for n, p in self.radios.items() if n in wanted and p.spec == wanted[n][0] and p.alive()}  # type: ignore[attr-defined]
        self._stop([self.radios.pop(n) for n in [n for n in self.radios if n not in kept]])
        if strays and not kept and netns.exists(self.ns("radio")):  # an earlier `rig emu up`'s, found by namespace
            netns.kill_all([self.ns("radio")])
        self.hops = hops
        self.stations = {_tap_name(n, s): (s.host, s.ifname) for n, (_, stations) in wanted.items() for s in stations}
        workdir = self.state_dir / "radios"
        workdir.mkdir(parents=True, exist_ok=True)
        fresh = {n: RadioProcess(spec, self.ns("radio"), workdir) for n, (spec, _) in wanted.items() if n not in kept}
        try:
            for proc in fresh.values():  # their start-ups overlap
                proc.spawn()
        except BaseException:
            self._stop(list(fresh.values()))
            raise
        return fresh, wanted

    def _finish_radios(self, settings: BlockSettings, fresh: dict, wanted: dict) -> None:
        """attach_radios' second half: the spawned emulators ready, their TAPs wired into their hosts."""
        try:
            for proc in fresh.values():
                proc.wait_ready()
            self._wire_radios({n: wanted[n] for n in fresh})
        except BaseException:  # none is kept half-wired: the next try starts them anew
            self._stop(list(fresh.values()))
            raise
        self.radios.update(fresh)
        self.settings = settings
        self._save_state()

    @staticmethod
    def _stop(procs: list) -> None:

        stop_all(procs)

    def _wire_radios(self, started: dict) -> None:
        """The gateway side of freshly started emulators, whose TAPs they opened in their hosts'
        namespaces already: radio0 addressed and up (one `ip -batch` per gateway host). The
        stations' interfaces are left down and unaddressed, as the nodes' agents expect them."""
        in_ns = {}
        for network, (spec, _) in started.items():
            if spec.kind == "lte":  # a routed cell: the PGW sits behind radio0, the UE pool behind it
                cmds = [f"addr add {SGI_GATEWAY}/30 dev radio0", "link set radio0 up",
                        f"route add {ATTACHMENTS['cell'][0]} via {SGI_ADDRESS.split('/')[0]}"]
            else:
                gateways = dict.fromkeys(f"{gateway_address(a)}/{IPv4Network(ATTACHMENTS[a][0]).prefixlen}"
                                         for a in attachments_of(network))  # one per subnet (the cell's modems share it)
                cmds = [f"addr add {g} dev radio0" for g in gateways] + ["link set radio0 up"]
            in_ns.setdefault(spec.gateway_netns, []).extend(cmds)
        netns.ip_batches(in_ns)

    def station_tap(self, host: str, interface: str) -> tuple[str, str]:
        """(radio network, station TAP) of a node's radio interface: where a change during a run
        goes (self.radios[network].schedule, docs/emulator.md). RigError if the running radios
        have no such station."""
        return station_tap(self.radios, self.stations, host, interface, f"emulated rig {self.prefix}")

    def dead_radios(self) -> list[str]:
        """Radio networks whose emulator has exited (a poll each: cheap enough before every run).
        attach_radios() with the same settings restarts them, with new TAPs."""
        return [n for n, p in self.radios.items() if not p.alive()]  # type: ignore[attr-defined]

    def stop_radios(self) -> None:
        self._stop(list(self.radios.values()))
        self.radios.clear()
        # Processes of an earlier `rig emu up` (another Python process) are found by namespace.
        if netns.exists(self.ns("radio")):
            netns.kill_all([self.ns("radio")])

    # -- state ---------------------------------------------------------------------------

    def _save_state(self) -> None:
        s = self.settings
        state = {"prefix": self.prefix, "settings": s.__dict__ if s else None,
                 "radios": {n: getattr(p, "pid", None) for n, p in self.radios.items()}}
        (self.state_dir / "state.json").write_text(json.dumps(state, indent=2))

    def status(self) -> dict:
        names = netns.with_prefix(self.prefix)
        state_file = self.state_dir / "state.json"
        state = json.loads(state_file.read_text()) if state_file.exists() else {}
        radio_pids = netns.pids(self.ns("radio")) if self.ns("radio") in names else []
        return {
            "prefix": self.prefix,
            "up": self.ns("core") in names,
            "ssh": self.ns("mgmt") in names,
            "namespaces": names,
            "settings": state.get("settings"),
            "radio_processes": radio_pids,
        }

    def down(self) -> list[str]:
        """Remove every namespace of this rig and everything in it; safe to call at any time.

        The hosts' namespaces go first, with what runs in them, then the emulators, which
        close their TAPs side by side as they exit (~30 ms each). A TAP's open file holds the
        host namespace it was opened in: the kernel frees that namespace once the TAPs close."""
        names = netns.with_prefix(self.prefix)
        netns.delete([n for n in names if n != self.ns("radio")])
        self._stop(list(self.radios.values()))  # each waited for as it exits, not polled for
        self.radios.clear()
        netns.delete([n for n in names if n == self.ns("radio")])
        # The nodes' private filesystem layers die with their sshd's mount namespaces; drop them.
        shutil.rmtree(self.state_dir, ignore_errors=True)
        return names
