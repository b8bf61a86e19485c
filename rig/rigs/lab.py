"""The physical lab, described by its Ansible inventory: who pairs with whom, interface names,
addresses, and how to reach each node (SSH). Used by `rig campaign run FILE --rig INVENTORY`.

Host variables read (inventory.ini documents them): pair, node_host_id, wifi_if, lte_if,
wifi2_if (receivers), lte_ip, and optionally lte_gateway (a modem whose interface needs a next
hop; raw-IP modems have none), ansible_host, rig_runner_user, ansible_python_interpreter,
node_agent_path, and rig_runner_key / rig_known_hosts (the runner's SSH key and the nodes' host
keys; /etc/rig/ssh/runner_ed25519 and /etc/rig/known_hosts, docs/security.md). Radio addresses
follow the lab's plan (ansible/group_vars/all/network.yml, rig/model/topology.py):
<attachment subnet>.<node_host_id>.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, replace
from ipaddress import IPv4Address
from pathlib import Path

from rig import congestion
from rig.model.topology import B_SIDE, DEFAULT_RADIOS, SENDER_SIDES, Pair, RadioInterface, Topology, radio_kind, station
from rig.core.errors import InputError, RigError
from rig.agents.client import AgentPool
from rig.agents.ssh import DEFAULT_AGENT, SshTransport


@dataclass(frozen=True)
class Lab:
    inventory: Path
    hostvars: dict[str, dict]
    senders: list[str]
    receivers: list[str]

    def var(self, host: str, name: str, default: object = ...) -> object:
        value = self.hostvars.get(host, {}).get(name, default)
        if value is ...:
            raise InputError(str(self.inventory), f"{host}.{name}", "missing (see inventory.ini)")
        return value


def load_lab(inventory: Path) -> Lab:
    if not Path(inventory).is_file():
        raise InputError("--rig", "rig", f"{inventory} is neither 'emulated' nor an inventory file")
    try:
        p = subprocess.run(["ansible-inventory", "-i", str(inventory), "--list"], capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise InputError(str(inventory), "(file)", "ansible-inventory is not installed (apt-get install ansible)") from None
    if p.returncode != 0:
        first = next((ln for ln in p.stderr.splitlines() if ln.strip()), "cannot be parsed")
        raise InputError(str(inventory), "(file)", first.strip())
    data = json.loads(p.stdout)
    groups = {name: g.get("hosts", []) for name, g in data.items() if isinstance(g, dict)}
    for group in ("senders", "receivers"):
        if not groups.get(group):
            raise InputError(str(inventory), group, "the group has no hosts")
    return Lab(Path(inventory), data.get("_meta", {}).get("hostvars", {}), groups["senders"], groups["receivers"])


def _whole(lab: Lab, host: str, name: str) -> int:
    try:
        return int(lab.var(host, name))
    except (TypeError, ValueError):
        raise InputError(str(lab.inventory), f"{host}.{name}", "must be a whole number") from None


def _address(lab: Lab, host: str, name: str) -> IPv4Address:
    try:
        return IPv4Address(str(lab.var(host, name)))
    except ValueError:
        raise InputError(str(lab.inventory), f"{host}.{name}", "must be an IPv4 address") from None


def _pair_index(lab: Lab, host: str) -> int:
    return _whole(lab, host, "pair")


def check_hosts(lab: Lab) -> None:
    """The variables every setup needs (rig doctor --rig; lab_topology checks the rest per setup)."""
    for host in lab.senders + lab.receivers:
        _pair_index(lab, host), _whole(lab, host, "node_host_id"), lab.var(host, "wifi_if")
    for host in lab.senders:
        _address(lab, host, "lte_ip"), lab.var(host, "lte_if")
    for host in lab.senders + lab.receivers:
        if lab.var(host, "lte_gateway", None) is not None:
            _address(lab, host, "lte_gateway")
    if not {_pair_index(lab, h) for h in lab.senders} & {_pair_index(lab, h) for h in lab.receivers}:
        raise InputError(str(lab.inventory), "senders/receivers", "no sender and receiver share a pair number")


def _lte(lab: Lab, host: str, role: str = "lte") -> RadioInterface:
    """A modem (role lte, or lte2: a node's second modem) at its `<role>_ip`, named `<role>_if`."""
    role_attachment = SENDER_SIDES[role][1]
    gw = lab.var(host, f"{role}_gateway", None)
    iface = station(host, str(lab.var(host, f"{role}_if")), role, role_attachment,
                    address=_address(lab, host, f"{role}_ip"), gateway=False)
    return iface if gw is None else replace(iface, gateway=_address(lab, host, f"{role}_gateway"))


def _radio(lab: Lab, host: str, role: str, host_id: int) -> RadioInterface:
    if radio_kind(role) == "lte":
        return _lte(lab, host, role)
    return station(host, str(lab.var(host, f"{role}_if")), role, SENDER_SIDES[role][1], host_id=host_id)


def lab_topology(lab: Lab, setup: str, pairs: int, radios: tuple[str, ...] = DEFAULT_RADIOS,
                 mode: str = "paired") -> Topology:
    """The lab's first `pairs` sender/receiver pairs (by their `pair` variable), wired for `setup`,
    the senders with `radios` (a second modem, lte2: the host's lte2_if and lte2_ip)."""
    senders = {_pair_index(lab, h): h for h in lab.senders}
    receivers = {_pair_index(lab, h): h for h in lab.receivers}
    common = sorted(set(senders) & set(receivers))
    if len(common) < pairs:
        raise InputError(str(lab.inventory), "senders/receivers", f"{len(common)} complete pairs, the campaign needs {pairs}")
    b_role, b_attachment = B_SIDE[setup]
    out = []
    for index in common[:pairs]:
        s, r = senders[index], receivers[index]
        s_id, r_id = _whole(lab, s, "node_host_id"), _whole(lab, r, "node_host_id")
        b = (_lte(lab, r) if b_role == "lte"
             else station(r, str(lab.var(r, "wifi2_if")), b_role, b_attachment, host_id=r_id))
        out.append(Pair(
            index=index, sender=s, receiver=r, radios=tuple(_radio(lab, s, role, s_id) for role in radios),
            sides=(station(r, str(lab.var(r, "wifi_if")), "wifi", "ap2", host_id=r_id), b),
        ))
    return Topology(setup, tuple(out), mode)  # type: ignore[arg-type]


RUNNER_KEY = Path("/etc/rig/ssh/runner_ed25519")  # the controller role's controller_runner_key
RUNNER_USER = "rig-runner"  # the runner's own account on the nodes (the node role's node_runner_user)
KNOWN_HOSTS = Path("/etc/rig/known_hosts")  # the nodes' host keys, recorded by the node role
RETRUST = ("remove the old key (ssh-keygen -R {host} -f {known_hosts}), then record the new one with "
           "ansible-playbook nodes.yml --limit {host} (Ansible checks it against your own known_hosts)")


def lab_transport(lab: Lab, hosts: list[str], control_dir: Path) -> SshTransport:
    """SSH to the lab's nodes with the runner's key (restricted to the agent on the nodes), checking
    each node's host key against the rig's known_hosts; the agent is where the node role put it."""
    first = hosts[0]
    return SshTransport(
        {h: str(lab.var(h, "ansible_host", h)) for h in hosts},
        known_hosts=Path(str(lab.var(first, "rig_known_hosts", KNOWN_HOSTS))),
        control_dir=control_dir,
        user=str(lab.var(first, "rig_runner_user", RUNNER_USER)),
        key=Path(str(lab.var(first, "rig_runner_key", RUNNER_KEY))),
        agent_path=str(lab.var(first, "node_agent_path", DEFAULT_AGENT)),
        python=str(lab.var(first, "ansible_python_interpreter", "python3")),
        retrust=RETRUST,
    )


CONTROL_DIR = Path("/run/rig/lab")  # the SSH control sockets of the lab's nodes (a 0700 directory)
# How the coupled CCs get onto a board (the node role, docs/provisioning.md).
NODE_CC_FIX = "run ansible-playbook ansible/nodes.yml"


def node_cc_facts(lab: Lab, hosts: list[str], control_dir: Path) -> dict[str, congestion.KernelFacts]:
    """What each node's kernel can run, asked through its agent (rig doctor --rig, LabBackend.check)."""
    control_dir.mkdir(parents=True, exist_ok=True)
    with AgentPool(lab_transport(lab, hosts, control_dir), hosts) as agents:
        return agents.each(hosts, lambda a: congestion.facts_from(a.request("facts")))


def _emulated(lab: Lab, host: str) -> bool:
    return str(lab.var(host, "node_emulated", False)).lower() in ("true", "yes", "1")


def clock_problems(clocks: dict[str, dict]) -> list[str]:
    """Nodes whose clock chrony does not keep, from their agents' `clock` replies."""
    return [f"{h}: {c.get('source') or 'no offset'}" for h, c in sorted(clocks.items()) if c.get("offset_s") is None]


def check_clocks(lab: Lab, hosts: list[str], control_dir: Path) -> None:
    """Each node times its runs on its own clock (T0, the first and last byte): a node that chrony
    does not keep synchronised to the controller is refused before a campaign writes anything.
    Emulated nodes (node_emulated) share the host's clock: there is nothing to keep."""
    hosts = [h for h in hosts if not _emulated(lab, h)]
    if not hosts:
        return
    control_dir.mkdir(parents=True, exist_ok=True)
    with AgentPool(lab_transport(lab, hosts, control_dir), hosts) as agents:
        problems = clock_problems(agents.each(hosts, lambda a: a.request("clock")))
    if problems:
        raise RigError(f"clock not synchronised by chrony on {'; '.join(problems)} (the node role runs chrony following "
                       f"the controller; chronyc tracking on the node says why)")
