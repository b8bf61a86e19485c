"""The rig's hosts, radio networks and addresses, for each of seed 002's three setups.

Pure description, no side effects: `rig.rigs.emulated.emulated_rig` turns it into namespaces and the node
configuration turns it into routes. The same shapes describe a physical lab (inventory.ini).

Senders always: WiFi -> AP1, LTE -> the cell. Each receiver has two interfaces, side A and
side B; a sender's WiFi subflow goes to its receiver's A address and its LTE subflow to the
B address ("paired" paths), so the setups differ exactly where the seed's figures differ:
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
    ifname: str  # name inside the node (emulated: wlan0, lte0, wlan1; the lab's from its inventory)
    attachment: str  # ap1 | ap2 | ap2b | ap3 | cell: the subnet
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


@dataclass(frozen=True)
class Pair:
    index: int  # 1-based
    sender: str
    receiver: str
    sender_wifi: RadioInterface
    sender_lte: RadioInterface
    receiver_a: RadioInterface  # paired with the sender's WiFi
    receiver_b: RadioInterface  # paired with the sender's LTE


@dataclass(frozen=True)
class Topology:
    setup: Setup
    pairs: tuple[Pair, ...]

    @property
    def nodes(self) -> list[str]:
        return [p.sender for p in self.pairs] + [p.receiver for p in self.pairs]

    @property
    def interfaces(self) -> list[RadioInterface]:
        out: list[RadioInterface] = []
        for p in self.pairs:
            out += [p.sender_wifi, p.sender_lte, p.receiver_a, p.receiver_b]
        return out

    def stations(self, network: str) -> list[RadioInterface]:
        """Node interfaces attached to `network`, in a stable order."""
        return [i for i in self.interfaces if i.network == network]

    def interfaces_of(self, host: str) -> list[RadioInterface]:
        return [i for i in self.interfaces if i.host == host]

    def networks_crossed(self, homing: str) -> set[str]:
        """The radio networks a run's traffic crosses: each used path's sender side and the
        receiver side it is paired with (WiFi -> A, LTE -> B), for data and ACKs alike."""
        ends = {"wifi": ("sender_wifi", "receiver_a"), "lte": ("sender_lte", "receiver_b")}
        used = ("wifi", "lte") if homing == "dual" else (homing,)
        return {getattr(p, side).network for p in self.pairs for path in used for side in ends[path]}


INFRA_HOSTS = ("ap1", "ap2", "ap3", "epc", "core")


def gateway_address(attachment: str) -> IPv4Address:
    return IPv4Network(ATTACHMENTS[attachment][0]).network_address + 1


def attachments_of(network: str) -> list[str]:
    return [a for a, (_, n) in ATTACHMENTS.items() if n == network]


def station(host: str, ifname: str, role: str, attachment: str, address: IPv4Address | None = None,
            host_id: int | None = None, gateway: bool = True) -> RadioInterface:
    """A node interface in `role` (wifi, lte, wifi2) on `attachment`, at `address` or at the
    attachment's subnet + `host_id` (the lab's numbering)."""
    subnet, network = ATTACHMENTS[attachment]
    if address is None:
        assert host_id is not None
        address = IPv4Network(subnet).network_address + host_id
    return RadioInterface(host, ifname, attachment, IPv4Address(address), RADIO_NETWORKS[network], TABLES[role],
                          gateway_address(attachment) if gateway else None)


# Senders' sides, and receivers' A and B sides per setup: (role, attachment).
SENDER_SIDES = {side: (d["role"], d["attachment"]) for side, d in _PLAN["rig_sender_sides"].items()}
A_SIDE = {setup: (sides["a"]["role"], sides["a"]["attachment"]) for setup, sides in _PLAN["rig_receiver_sides"].items()}
B_SIDE = {setup: (sides["b"]["role"], sides["b"]["attachment"]) for setup, sides in _PLAN["rig_receiver_sides"].items()}


def topology(setup: Setup, pairs: int = 5) -> Topology:
    """Senders s1..sN and receivers r1..rN wired as seed 002's Setup I, II or III."""
    if setup not in SETUPS:
        raise ValueError(f"unknown setup {setup!r}")
    if not 1 <= pairs <= 9:
        raise ValueError("pairs must be 1..9")
    # The emulated nodes' interface names, by role (the lab's come from its inventory).
    ifnames = {"wifi": "wlan0", "lte": "lte0", "wifi2": "wlan1"}
    sides = {"sw": SENDER_SIDES["wifi"], "sl": SENDER_SIDES["lte"], "ra": A_SIDE[setup], "rb": B_SIDE[setup]}
    out = []
    for i in range(1, pairs + 1):
        s, r = f"s{i}", f"r{i}"
        out.append(
            Pair(
                index=i,
                sender=s,
                receiver=r,
                sender_wifi=station(s, ifnames[sides["sw"][0]], *sides["sw"], host_id=SENDER_HOST_ID + i),
                sender_lte=station(s, ifnames[sides["sl"][0]], *sides["sl"], host_id=SENDER_HOST_ID + i),
                receiver_a=station(r, ifnames[sides["ra"][0]], *sides["ra"], host_id=RECEIVER_HOST_ID + i),
                receiver_b=station(r, ifnames[sides["rb"][0]], *sides["rb"], host_id=RECEIVER_HOST_ID + i),
            )
        )
    return Topology(setup, tuple(out))
