"""The controller and the node agent speak one protocol version: the agent says its version in
`hello` and the controller refuses an agent of another one (a lab node provisioned from another
checkout) with one line, before it sends it anything else."""

from __future__ import annotations

import json
import sys

import pytest

from rig.agents.client import AgentClient, AgentMismatch
from rig.agents.local import LocalTransport
from rig.agents.transport import popen_agent
from rig_node import PROTOCOL

# An agent that answers `hello` with HELLO and `quit` with {}, as an older agent on a node would.
OLD_AGENT = """
import json, sys
HELLO = json.loads(sys.argv[1])
for line in sys.stdin:
    op = json.loads(line)["op"]
    print(json.dumps(HELLO if op == "hello" else {}), flush=True)
    if op == "quit":
        break
"""


class OldAgents:
    name = "local"

    def __init__(self, hello: dict):
        self.hello, self.procs = hello, []

    def argv(self, host: str, argv: list[str]) -> list[str]:
        return argv

    def start_agent(self, host: str):
        self.procs.append(popen_agent([sys.executable, "-c", OLD_AGENT, json.dumps(self.hello)]))
        return self.procs[-1]


def test_an_agent_of_this_checkout_is_taken():
    agent = AgentClient(LocalTransport(), "here")
    try:
        assert agent.request("hello")["protocol"] == PROTOCOL
    finally:
        agent.close()


@pytest.mark.parametrize("hello, theirs", [({"host": "n1", "python": "3.11.2"}, 1),
                                           ({"host": "n1", "python": "3.13.5", "protocol": PROTOCOL + 1}, PROTOCOL + 1)])
def test_an_agent_of_another_version_is_refused_in_one_line(hello, theirs):
    transport = OldAgents(hello)
    with pytest.raises(AgentMismatch) as e:
        AgentClient(transport, "s1")
    assert str(e.value) == (f"s1: its node agent speaks protocol {theirs}, this controller {PROTOCOL}: "
                            "provision the node from this checkout (the node role) and start again")
    assert transport.procs[0].wait(5) == 0  # asked to quit, and it did
