"""The rig's hosts, radio networks and addresses, for each of seed 002's three setups.

Pure description, no side effects: `rig.rigs.emulated.emulated_rig` turns it into namespaces and the node
configuration turns it into routes. The same shapes describe a physical lab (inventory.ini).

A sender has a list of radios (the campaign's paths.radios; by default WiFi -> AP1 and LTE ->
the cell; a second LTE modem in the same cell is `lte2`). Each receiver has two interfaces, side
A and side B. How a sender's connections make subflows is the topology's `mode`:
  paired:   the sender's i-th radio to its receiver's i-th side (WiFi -> A, LTE -> B by default);
  fullmesh: every radio in use to every side.
The setups differ exactly where the seed's figures differ:
  Setup I:   A = WiFi on AP2, B = LTE in the same cell as the senders
  Setup II:  A = WiFi on AP2, B = WiFi on AP3 (AP3 stands for DSL/WiMAX)
  Setup III: A = WiFi on AP2, B = a second WiFi on AP2 (one bottleneck for all subflows)
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path
from typing import Literal

import yaml
from rig.core.repo import RADIO_CONFIGS

Setup = Literal["I", "II", "III"]
SETUPS: tuple[Setup, ...] = ("I", "II", "III")
PathKind = Literal["wifi", "lte"]

ADDRESS_PLAN = RADIO_CONFIGS / "address-plan.yml"
_PLAN = yaml.safe_load(ADDRESS_PLAN.read_text())  # the lab's too: Ansible reads the same file


def _subnet(a: dict) -> str:
    return a.get("subnet") or f"{a['prefix']}.0/{a['prefixlen']}"


ATTACHMENTS: dict[str, tuple[str, str]] = {  # attachment -> (subnet, radio network)
    name: (_subnet(a), a["network"]) for name, a in _PLAN["rig_attachments"].items()}
# attachment -> the address a host part counts from (the prefix's .0)
HOST_BASE: dict[str, IPv4Address] = {name: IPv4Address(f"{a['prefix']}.0") for name, a in _PLAN["rig_attachments"].items()}
# Radio networks (one emulator process each): name -> kind.
RADIO_NETWORKS: dict[str, PathKind] = dict(_PLAN["rig_radio_networks"])
# Which host owns each radio network's gateway side: the AP of a BSS, the EPC of the cell.
GATEWAY_HOST = {n: ("epc" if kind == "lte" else n) for n, kind in RADIO_NETWORKS.items()}
SENDER_HOST_ID, RECEIVER_HOST_ID = _PLAN["rig_host_id_base"]["sender"], _PLAN["rig_host_id_base"]["receiver"]
# Wired links between the core router and the AP / EPC hosts: host -> core-side /24.
CORE_LINKS: dict[str, str] = dict(_PLAN["rig_core_links"])
# Routing table of each node interface by its role (policy routing: one table per interface).
TABLES: dict[str, int] = dict(_PLAN["rig_tables"])


@dataclass(frozen=True)
class RadioInterface:
    """One node interface attached to a radio network."""

    host: str
    ifname: str  # name inside the node (emulated: wlan0, lte0, lte1, wlan1; the lab's from its inventory)
    role: str  # the address plan's: wifi, lte, lte2 (a sender's radios, naming its paths) or wifi2
    attachment: str  # ap1 | ap2 | ap2b | ap3 | cell | cell2: the subnet
    address: IPv4Address
    path: PathKind
    table: int  # its routing table
    gateway: IPv4Address | None  # next hop; None on a point-to-point link (a raw-IP LTE modem)

    @property
    def network(self) -> str:
        """The radio network (BSS or cell) the interface is attached to."""
        return ATTACHMENTS[self.attachment][1]

    @property
    def prefixlen(self) -> int:
        return IPv4Network(ATTACHMENTS[self.attachment][0]).prefixlen


MODES = ("paired", "fullmesh")
SIDES = ("a", "b")


@dataclass(frozen=True)
class Subflow:
    """A subflow every connection of a sender must have: from one of its radios to one of its
    receiver's sides. Its name is the path's: the radio's role (paired), or role-side (fullmesh)."""
    name: str
    local: RadioInterface
    remote: RadioInterface


@dataclass(frozen=True)
class Pair:
    index: int  # 1-based
    sender: str
    receiver: str
    radios: tuple[RadioInterface, ...]  # the sender's, in the campaign's order
    sides: tuple[RadioInterface, ...]  # the receiver's side A and side B

    @property
    def receiver_a(self) -> RadioInterface:
        return self.sides[0]

    @property
    def receiver_b(self) -> RadioInterface:
        return self.sides[1]

    def radio(self, role: str) -> RadioInterface:
        """The sender's radio in `role` (wifi, lte, lte2); KeyError if it has none."""
        for r in self.radios:
            if r.role == role:
                return r
        raise KeyError(f"{self.sender} has no {role} radio")

    def used(self, homing: str) -> tuple[RadioInterface, ...]:
        """The radios a homing uses: dual, every radio; wifi or lte, that one radio (single-homed)."""
        return self.radios if homing == "dual" else (self.radio(homing),)

    def subflows(self, homing: str, mode: str) -> tuple[Subflow, ...]:
        """The subflows each connection must have under `homing`: paired, each radio in use to
        the side of its own index; fullmesh, each radio in use to each side. A single-homed
        connection has one subflow, paired, whatever the mode (a single-path baseline)."""
        used = self.used(homing)
        if mode == "paired" or len(used) == 1:
            return tuple(Subflow(r.role, r, self.sides[self.radios.index(r)]) for r in used)
        return tuple(Subflow(f"{r.role}-{side}", r, s) for r in used for side, s in zip(SIDES, self.sides))


@dataclass(frozen=True)
class Topology:
    setup: Setup
    pairs: tuple[Pair, ...]
    mode: str = "paired"  # how subflows are made (MODES)

    @property
    def nodes(self) -> list[str]:
        return [p.sender for p in self.pairs] + [p.receiver for p in self.pairs]

    @property
    def interfaces(self) -> list[RadioInterface]:
        out: list[RadioInterface] = []
        for p in self.pairs:
            out += [*p.radios, *p.sides]
        return out

    def stations(self, network: str) -> list[RadioInterface]:
        """Node interfaces attached to `network`, in a stable order."""
        return [i for i in self.interfaces if i.network == network]

    def interfaces_of(self, host: str) -> list[RadioInterface]:
        return [i for i in self.interfaces if i.host == host]

    def networks_crossed(self, homing: str) -> set[str]:
        """The radio networks a run's traffic crosses: both ends of each subflow its connections
        make, for data and ACKs alike."""
        return {end.network for p in self.pairs for s in p.subflows(homing, self.mode) for end in (s.local, s.remote)}


INFRA_HOSTS = ("ap1", "ap2", "ap3", "epc", "core")


def gateway_address(attachment: str) -> IPv4Address:
    return IPv4Network(ATTACHMENTS[attachment][0]).network_address + 1


def attachments_of(network: str) -> list[str]:
    return [a for a, (_, n) in ATTACHMENTS.items() if n == network]


def station(host: str, ifname: str, role: str, attachment: str, address: IPv4Address | None = None,
            host_id: int | None = None, gateway: bool = True) -> RadioInterface:
    """A node interface in `role` (wifi, lte, lte2, wifi2) on `attachment`, at `address` or at the
    attachment's prefix + `host_id` (the lab's numbering)."""
    network = ATTACHMENTS[attachment][1]
    if address is None:
        assert host_id is not None
        address = HOST_BASE[attachment] + host_id
    return RadioInterface(host, ifname, role, attachment, IPv4Address(address), RADIO_NETWORKS[network], TABLES[role],
                          gateway_address(attachment) if gateway else None)


# Senders' sides, and receivers' A and B sides per setup: (role, attachment).
SENDER_SIDES = {side: (d["role"], d["attachment"]) for side, d in _PLAN["rig_sender_sides"].items()}
A_SIDE = {setup: (sides["a"]["role"], sides["a"]["attachment"]) for setup, sides in _PLAN["rig_receiver_sides"].items()}
B_SIDE = {setup: (sides["b"]["role"], sides["b"]["attachment"]) for setup, sides in _PLAN["rig_receiver_sides"].items()}


RADIOS = tuple(SENDER_SIDES)  # the radios a sender can have, by role
DEFAULT_RADIOS = ("wifi", "lte")
# The emulated nodes' interface names, by role (the lab's come from its inventory).
EMULATED_IFNAMES = {"wifi": "wlan0", "lte": "lte0", "lte2": "lte1", "wifi2": "wlan1"}


def radio_kind(role: str) -> PathKind:
    """wifi or lte: the kind of radio network a sender radio attaches to."""
    return RADIO_NETWORKS[ATTACHMENTS[SENDER_SIDES[role][1]][1]]


def check_paths(radios: tuple[str, ...], mode: str | None = None) -> None:
    """ValueError naming what is wrong with a choice of senders' radios (and with `mode`, their subflow mode)."""
    unknown = [r for r in radios if r not in RADIOS]
    if unknown:
        raise ValueError(f"{unknown[0]!r} is no sender radio of the address plan (one of {', '.join(RADIOS)})")
    if not radios or len(set(radios)) != len(radios):
        raise ValueError("list each radio once, at least one")
    if mode is None:
        return
    if mode not in MODES:
        raise ValueError(f"mode {mode!r} is not one of {', '.join(MODES)}")
    if mode == "fullmesh" and len(radios) < 2:
        raise ValueError("a full mesh needs senders with two radios or more: a single-homed sender has one path")
    if mode == "paired" and len(radios) > len(SIDES):
        raise ValueError(f"paired mode pairs each radio with one of the receivers' {len(SIDES)} sides: "
                         f"{len(radios)} radios need mode fullmesh")


def topology(setup: Setup, pairs: int = 5, radios: tuple[str, ...] = DEFAULT_RADIOS, mode: str = "paired") -> Topology:
    """Senders s1..sN with `radios` and receivers r1..rN wired as seed 002's Setup I, II or III."""
    if setup not in SETUPS:
        raise ValueError(f"unknown setup {setup!r}")
    if not 1 <= pairs <= 9:
        raise ValueError("pairs must be 1..9")
    check_paths(tuple(radios), mode)
    out = []
    for i in range(1, pairs + 1):
        s, r = f"s{i}", f"r{i}"
        senders = tuple(station(s, EMULATED_IFNAMES[role], *SENDER_SIDES[role], host_id=SENDER_HOST_ID + i)
                        for role in radios)
        sides = tuple(station(r, EMULATED_IFNAMES[role], role, attachment, host_id=RECEIVER_HOST_ID + i)
                      for role, attachment in (A_SIDE[setup], B_SIDE[setup]))
        out.append(Pair(index=i, sender=s, receiver=r, radios=senders, sides=sides))
    return Topology(setup, tuple(out), mode)
