"""The emulated rig's node agents, forked into their namespaces by one Python
(rig/agents/forks.py): each is in its own host's network namespace with that namespace's
/sys, answers like a started agent, and how it ended reaches the controller. The spawner ends
with its last agent; a restarted agent comes from a new one."""

from __future__ import annotations

import os
import signal
import time

from rig.agents.client import AgentLost, AgentPool
from rig.agents.netns import NetnsTransport


def _counters(agents: AgentPool, host: str, iface: str) -> list:
    agents[host].request("sample", ifaces=[iface], hz=100)
    time.sleep(0.03)
    return agents[host].request("unsample")["samples"]


def test_forked_agents_live_in_their_own_namespaces(netns):
    a, b = netns("a"), netns("b")
    netns.veth(a, "va", b, "vb")
    with AgentPool(NetnsTransport(netns.prefix), ["a", "b"]) as agents:
        assert {h: agents[h].request("hello")["host"] for h in ("a", "b")} == {"a": os.uname().nodename, "b": os.uname().nodename}
        # /sys is the namespace's: its own veth end has counters, the other's does not exist there
        assert all(tx >= 0 for _, _, tx, _ in _counters(agents, "a", "va"))
        assert all(tx == -1 for _, _, tx, _ in _counters(agents, "a", "vb"))
        assert all(tx >= 0 for _, _, tx, _ in _counters(agents, "b", "vb"))
        # the forks' network namespaces are the hosts', not the controller's
        pids = {h: agents[h]._proc.pid for h in ("a", "b")}
        assert os.stat(f"/proc/{pids['a']}/ns/net").st_ino == os.stat(f"/run/netns/{a}").st_ino
        assert os.stat(f"/proc/{pids['b']}/ns/net").st_ino == os.stat(f"/run/netns/{b}").st_ino
        spawner = agents.transport._spawner
    # every agent asked to quit: the spawner reaped them and exits
    assert spawner._proc.wait(timeout=5) == 0


def test_a_killed_forked_agent_is_reported_and_restarted(netns):
    netns("a"), netns("b")
    with AgentPool(NetnsTransport(netns.prefix), ["a", "b"]) as agents:
        os.kill(agents["a"]._proc.pid, signal.SIGKILL)
        try:
            agents["a"].request("hello")
        except AgentLost as e:
            assert "killed by SIGKILL" in str(e), e
        else:
            raise AssertionError("a killed agent answered")
        assert agents.lost() == ["a"]
        assert agents.restart_lost() == ["a"]
        assert agents["a"].request("hello")["host"] and agents["b"].request("hello")["host"]
        # all agents of the first spawner gone (b too, then): the next one starts a new spawner
        first = agents.transport._spawner
        os.kill(agents["b"]._proc.pid, signal.SIGKILL)
        agents["b"]._proc.wait(timeout=5)
        os.kill(agents["a"]._proc.pid, signal.SIGKILL)
        agents["a"]._proc.wait(timeout=5)
        assert agents.restart_lost() == ["a", "b"]
        assert agents.transport._spawner is not first
        assert all(agents[h].request("hello")["host"] for h in ("a", "b"))
