"""`rig emu up|down|status`: the emulated rig by hand (campaigns bring it up themselves)."""

from __future__ import annotations

import json

import click

from rig.model.topology import SETUPS


def check_prefix(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """--prefix: the rule is EmulatedRig's (namespace and TAP names are built from it)."""
    from rig.rigs.emulated.emulated_rig import EmulatedRig
    from rig.core.errors import RigError

    try:
        EmulatedRig(value)
    except RigError as e:
        raise click.BadParameter(str(e), ctx, param) from None
    return value


def _profile(kind: str):
    """--wifi / --lte: a profile of radio-configs/<kind> that loads (checked before anything is built)."""
    def check(ctx: click.Context, param: click.Parameter, value: str) -> str:
        from rig.model import profiles

        known = profiles.wifi_profiles() if kind == "wifi" else profiles.lte_profiles()
        if value not in known:
            raise click.BadParameter(f"unknown {kind} profile {value!r} (known: {', '.join(known)})", ctx, param)
        (profiles.wifi_profile if kind == "wifi" else profiles.lte_profile)(value)
        return value
    return check


prefix_option = click.option("--prefix", default="rig", show_default=True, callback=check_prefix,
                             help="Name prefix of the rig's namespaces (alphanumeric, at most 8 characters).")


@click.group()
def emu() -> None:
    """Bring the emulated rig up, tear it down, or show it."""


@emu.command()
@click.option("--setup", type=click.Choice(SETUPS), default="I", show_default=True)
@click.option("--wifi", "wifi_standard", default="n5", show_default=True, callback=_profile("wifi"),
              help="WiFi profile (radio-configs/wifi).")
@click.option("--lte", "lte_profile", default="band7-10mhz", show_default=True, callback=_profile("lte"),
              help="LTE profile (radio-configs/lte).")
@click.option("--pairs", type=click.IntRange(1, 9), default=5, show_default=True)
@prefix_option
@click.option("--ssh", is_flag=True, help="Also a management network and an sshd per node (Ansible, SSH transport).")
@click.option("--radios", type=click.Choice(["links", "simulated", "models"]), default="models", show_default=True,
              help="The rig's radio models (a campaign's default), per-path links with a shared medium, or "
                   "ns-3's LTE cell and WiFi BSSs.")
def up(setup: str, wifi_standard: str, lte_profile: str, pairs: int, prefix: str, ssh: bool, radios: str) -> None:
    """Create the namespaces, the core and the radios, and address the nodes."""
    from rig.rigs.emulated.emulated_rig import EmulatedRig
    from rig.model.block import BlockSettings
    from rig.model.routing import node_plan
    from rig.agents.client import AgentPool
    from rig.agents.netns import NetnsTransport
    from rig.model.profiles import lte_profile as load_lte, wifi_profile

    wifi_profile(wifi_standard), load_lte(lte_profile)  # bad names: one line, exit 2, before anything is built
    rig = EmulatedRig(prefix)
    rig.claim()
    topo = rig.up(BlockSettings(setup, wifi_standard, lte_profile, pairs, {}, radios), ssh=ssh)
    with AgentPool(NetnsTransport(prefix, rig.state_dir / "agent-logs", rig.node_dir), topo.nodes) as agents:  # as a campaign configures them
        agents.each(topo.nodes, lambda a: a.request("paths", plan=node_plan(topo, a.host)))
    click.echo(f"emulated rig '{prefix}' up: Setup {setup}, WiFi {wifi_standard}, LTE {lte_profile}, {pairs} pairs, {radios} radios")
    click.echo(_register_coupled_ccs())
    click.echo(f"try: ip netns exec {prefix}-s1 ping -c3 {topo.pairs[0].receiver_a.address}")
    if ssh:
        click.echo(f"     rig emu inventory --prefix {prefix} > emu.ini && "
                   f"ip netns exec {prefix}-mgmt ansible-playbook -i emu.ini ansible/nodes.yml")


@emu.command()
@prefix_option
def inventory(prefix: str) -> None:
    """Print an Ansible inventory of the running emulated rig's nodes (reach them from <prefix>-mgmt)."""
    from rig.rigs.emulated.inventory import emulated_inventory
    from rig.rigs.emulated.emulated_rig import EmulatedRig
    from rig.core.errors import RigError

    rig = EmulatedRig(prefix)
    st = rig.status()
    if not st["ssh"] or not st["settings"]:
        raise RigError(f"emulated rig '{prefix}' is not up with --ssh")
    click.echo(emulated_inventory(rig, st["settings"]["setup"], st["settings"]["pairs"]), nl=False)


@emu.command()
@prefix_option
def down(prefix: str) -> None:
    """Remove every namespace, process and TAP of the rig (safe to repeat, also after a crash)."""
    from rig.rigs.emulated.emulated_rig import EmulatedRig

    rig = EmulatedRig(prefix)
    rig.claim()
    gone = rig.down()
    click.echo(f"removed {len(gone)} namespaces" if gone else "nothing to remove")


@emu.command()
@prefix_option
@click.option("--json", "as_json", is_flag=True)
def status(prefix: str, as_json: bool) -> None:
    """Show whether the rig is up, its setup and its radio processes."""
    from rig.rigs.emulated.emulated_rig import EmulatedRig

    st = EmulatedRig(prefix).status()
    if as_json:
        click.echo(json.dumps(st, indent=2))
        return
    if not st["up"]:
        click.echo(f"emulated rig '{prefix}' is down" + (f" (stray namespaces: {' '.join(st['namespaces'])})" if st["namespaces"] else ""))
        return
    s = st["settings"] or {}
    click.echo(f"emulated rig '{prefix}' is up: Setup {s.get('setup')}, WiFi {s.get('wifi_standard')}, "
               f"LTE {s.get('lte_profile')}, {len(st['namespaces'])} namespaces, radio processes {st['radio_processes']}")


def _register_coupled_ccs() -> str:
    """The nodes share this host's kernel: make lia/olia/balia runnable on it, so that by-hand runs
    (iperf3 -C olia in a node) work as campaigns do. A host that cannot is still a usable rig."""
    from rig import congestion
    from rig.core.errors import RigError

    try:
        congestion.ensure_registered(congestion.RIG_CCS)
    except RigError as e:
        return f"coupled CCs not available ({e}); the kernel's own CCs still run"
    return "coupled CCs runnable on this host's kernel (the nodes'): " + " ".join(congestion.RIG_CCS)
