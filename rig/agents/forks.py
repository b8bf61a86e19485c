"""The emulated rig's node agents, forked into their hosts' namespaces by one Python.

Run by rig.agents.netns (`python -I -S forks.py FD`), not imported: standard library and
the node agent's own modules only. A new interpreter per agent costs ~45 ms of CPU in imports,
ten of them side by side at every bring-up; this one imports the agent once and forks it per
host (~1 ms each), into the host's network namespace the way `ip netns exec` enters it.

FD is a Unix SOCK_SEQPACKET socket to the controller. Each request there is a message of JSON
with three descriptors attached (the agent's stdin, stdout and stderr):
    {"netns": NAME, "log": PATH or null, "node": PATH or null}  ->  {"pid": PID}  or  {"error": "..."}
(node: the node's configuration, its radios: nodes/agent/rig_node/radios.py; null: none, the
agent then refuses every request that would change routing)
and each agent's end is reported on it as {"exited": PID, "status": CODE} (CODE as subprocess's
returncode). It exits once the controller has closed the socket and every agent has ended, or,
when it has forked agents, once they have all ended: the controller starts another for the next.
"""

from __future__ import annotations

import ctypes
import json
import os
import selectors
import signal
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "nodes", "agent"))

import rig_agent  # noqa: E402 - once, here: what every agent's interpreter imported again
from rig_node import forked, radios  # noqa: E402

CLONE_NEWNS, CLONE_NEWNET = 0x00020000, 0x40000000
MS_RDONLY, MS_SLAVE, MS_REC, MNT_DETACH = 0x1, 0x80000, 0x4000, 0x2


def enter_netns(name: str) -> None:
    """This process into /run/netns/NAME, with a mount namespace of its own whose /sys is that
    network namespace's (its interfaces' counters): what `ip netns exec` does."""
    libc = ctypes.CDLL(None, use_errno=True)

    def check(rc: int, what: str) -> None:
        if rc != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"{what}: {os.strerror(err)}")

    fd = os.open(os.path.join("/run/netns", name), os.O_RDONLY | os.O_CLOEXEC)
    try:
        check(libc.setns(fd, CLONE_NEWNET), f"setns {name}")
    finally:
        os.close(fd)
    check(libc.unshare(CLONE_NEWNS), "unshare the mount namespace")
    check(libc.mount(b"none", b"/", None, MS_REC | MS_SLAVE, None), "mount --make-rslave /")  # nothing leaks back
    flags = MS_RDONLY if os.statvfs("/sys").f_flag & os.ST_RDONLY else 0
    libc.umount2(b"/sys", MNT_DETACH)  # fails only where no sysfs was mounted: fine
    check(libc.mount(name.encode(), b"/sys", b"sysfs", flags, None), "mount /sys")


def agent(netns: str, log: str | None, node: str | None, fds: list[int]) -> None:
    """The forked child: an agent in `netns` serving on the three descriptors. Does not return."""
    def serve() -> int:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as a started agent has it
        # The interpreter's own stdio (-u: stdout and stderr unbuffered) on the agent's pipes, as
        # a started agent has it. Not new objects: a transfer the agent forks replaces its
        # sys.stdin, and the last reference to an agent's own would go then, its close waiting for
        # the lock a read in the agent's main thread held when it forked.
        for i, fd in enumerate(fds):
            os.dup2(fd, i)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # the controller's socket, other agents' pipes
        enter_netns(netns)
        return rig_agent.serve(rig_agent.RefusalLog(log), node or radios.Unknown("the agent was started without its node's configuration"))

    forked.run_forked(serve)


class Forks:
    def __init__(self, control: socket.socket):
        self.control, self.open = control, True
        self.children: dict[int, int] = {}  # pidfd -> pid
        self.forked = False
        self.sel = selectors.DefaultSelector()
        self.sel.register(control, selectors.EVENT_READ)

    def send(self, doc: dict) -> None:
        try:
            self.control.send(json.dumps(doc).encode())
        except OSError:  # the controller is gone: its agents end with their stdin
            pass

    def request(self) -> None:
        try:  # a SOCK_SEQPACKET socket: one request a message
            data, fds, _, _ = socket.recv_fds(self.control, 65536, 3)
        except OSError:
            data, fds = b"", []
        if not data:
            self.sel.unregister(self.control)
            self.open = False
            return
        try:
            req = json.loads(data)
            if len(fds) != 3:
                raise ValueError(f"{len(fds)} descriptors with the request, not 3")
            pid = os.fork()
            if pid == 0:
                agent(req["netns"], req.get("log"), req.get("node"), fds)
            pidfd = os.pidfd_open(pid)  # readable once the agent has ended
            self.children[pidfd] = pid
            self.sel.register(pidfd, selectors.EVENT_READ)
            self.forked = True
            self.send({"pid": pid})
        except Exception as e:  # noqa: BLE001 - said to the controller, which gives up on that agent
            self.send({"error": f"{type(e).__name__}: {e}"})
        finally:
            for fd in fds:
                os.close(fd)

    def reap(self, pidfd: int) -> None:
        pid = self.children.pop(pidfd)
        self.sel.unregister(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(pid, 0)
        self.send({"exited": pid, "status": os.waitstatus_to_exitcode(status)})

    def run(self) -> None:
        while self.open or self.children:
            if self.forked and not self.children:
                return  # its agents ended: a restarted one comes from a new spawner
            for key, _ in self.sel.select():
                if key.fileobj is self.control:
                    self.request()
                else:
                    self.reap(key.fd)


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C for the campaign: its agents still get reaped
    Forks(socket.socket(fileno=int(sys.argv[1]))).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
