#!/usr/bin/env python3
"""The node agent: the rig's only hand on a node, physical or emulated.

Started once per node through the rig's transport (over SSH on the lab, where the controller's
key can start nothing else; `ip netns exec <ns>` on the emulated rig), it answers requests, one
JSON object per line on stdin, one JSON reply per line on stdout, for a whole campaign: no
process start-up and no new SSH session per command.

The requests are a closed set (rig_node/ops.py); every field is checked (rig_node/validate.py):
  hello                          -> {"host", "time", "python", "protocol"}   protocol: rig_node.PROTOCOL
  paths      plan                -> {}   the node's routing plan (rig_node/plan.py), applied (routing.py)
  sysctl     values              -> {}   sysctls from the allowlist (rig_node/sysctls.py)
  facts                          -> what the kernel can run (rig_node/facts.py)
  clock                          -> {"offset_s", "bound_s", "source"}   the clock's offset and
                                            chrony's bound on its error (none: not synchronised)
  launch     key, program, args, at  -> {}   a traffic program (rig_node/programs.py: the rig's
                                            transfer, iperf3) at `at`
  release    key, at             -> {}   a transfer launched with `hold` starts at `at`
  wait       key, timeout, stop, port -> {"started_at", "ended_at", "rc", "stdout", "stderr"[, "timed_out"]}
                                            at its end, or stopped at `timeout`; with stop false,
                                            {"running": true} at `timeout` and it runs on (with
                                            port: and its connections' "received", "rto_ms")
  evidence   keys                -> {"ss", "mib", "programs"}   a stalled transfer's (rig_node/stall.py)
  kill_sockets port              -> {"left"}   every socket of the port destroyed (ss -K)
  alive      key                 -> {"alive"}
  stop       key                 -> {}   stop what `launch` started under key (TERM, then KILL)
  stop_strays                    -> {"stopped": [pid, ...]}   traffic programs a lost agent left
  listening  port                -> {"listening"}
  sample     ifaces, hz, ss_hz   -> {}   start sampling interface counters and TCP sockets
  unsample                       -> {"samples": [[t, ifname, tx, rx], ...], "ss": [[t, text], ...]}
  mib                            -> {"MPTcpExt...": n, "TcpExt...": n, "Tcp...": n}
  batch      requests            -> {"replies": [...]}   up to 16 of the above in order, one exchange
  quit                           -> {} and exit
A refused request gets {"error": "refused: ..."} and is logged on the node (syslog's auth
facility where /dev/log exists, and --log FILE); any other failure {"error": "..."}. A line that
is not UTF-8, longer than MOST_LINE bytes or nested deeper than MOST_DEPTH is refused the same
way; the agent goes on serving.

The node's radios come from its own configuration (rig_node/radios.py: /etc/rig/node.json, or
--node FILE), read once at start: a request that names, routes through or changes anything else
(the management interface, loopback, the routes that reach the controller) is refused.

`rig_agent.py apply PLAN.json [IFACE]` applies a stored plan (the node role's interface-up hook).

Standard library only: this directory is copied as is onto the lab's nodes.
"""

from __future__ import annotations

import json
import os
import sys

# -I (isolated mode) leaves the script's directory off sys.path: put back exactly that one.
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))

from rig_node import plan as plans, radios, routing  # noqa: E402
from rig_node.ops import Agent  # noqa: E402
from rig_node.validate import Refused  # noqa: E402

class RefusalLog:
    """Where refused requests are logged: syslog's auth facility where /dev/log exists, and the
    --log file. Set up at the first refusal: an agent that refuses nothing never imports logging
    (the agents of a campaign start side by side, each a new Python; docs/emulator.md)."""

    def __init__(self, path: str | None) -> None:
        self.path, self.log = path, None

    def warning(self, *args) -> None:
        if self.log is None:
            self.log = self._setup()
        self.log.warning(*args)

    def _setup(self):
        import logging
        import logging.handlers

        log = logging.getLogger("rig-agent")
        log.setLevel(logging.INFO)
        if os.path.exists("/dev/log"):
            handler = logging.handlers.SysLogHandler("/dev/log", facility=logging.handlers.SysLogHandler.LOG_AUTH)
            handler.setFormatter(logging.Formatter("rig-agent[%(process)d]: %(message)s"))
            log.addHandler(handler)
        if self.path:
            handler = logging.FileHandler(self.path)
            handler.setFormatter(logging.Formatter("%(asctime)s rig-agent[%(process)d]: %(message)s"))
            log.addHandler(handler)
        return log


MOST_LINE = 1 << 16  # bytes in a request's line: a batch of 16 plans is ~32 KiB
MOST_DEPTH = 12  # nesting of a request's JSON: a batch of plans is 7 deep
_TOO_DEEP = object()


def _depth(value: object, most: int) -> bool:
    """Whether `value` nests no deeper than `most` (lists and objects)."""
    if isinstance(value, (list, dict)):
        if most == 0:
            return False
        return all(_depth(x, most - 1) for x in (value.values() if isinstance(value, dict) else value))
    return True


def _request(raw: bytes) -> object:
    """A request from its line's bytes: UTF-8 JSON, nested at most MOST_DEPTH (Refused otherwise)."""
    try:
        req = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise Refused(f"a request is UTF-8: byte {e.start} is not") from None
    except ValueError as e:
        raise Refused(f"a request is one JSON object per line: {e}") from None
    except RecursionError:  # deeper than the parser goes
        req = _TOO_DEEP
    if req is _TOO_DEEP or not _depth(req, MOST_DEPTH):
        raise Refused(f"a request nests at most {MOST_DEPTH} deep")
    return req


def _lines(stream):
    """The request lines of `stream` (bytes), each at most MOST_LINE bytes; a longer one is
    given as None (read to its end and dropped), so it is refused without being held."""
    while True:
        line = stream.readline(MOST_LINE + 1)
        if not line:
            return
        if len(line) > MOST_LINE and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                line = stream.readline(MOST_LINE)
            yield None
        else:
            yield line


def serve(log: RefusalLog, node: str | radios.Unknown | None = None) -> int:
    """Answer requests on stdin until it ends; `node`: the path of the node's configuration
    (None: radios.NODE_CONFIG), or Unknown when there is none."""
    agent = Agent(node if isinstance(node, radios.Unknown) else radios.load(node or radios.NODE_CONFIG))
    try:
        for raw in _lines(sys.stdin.buffer):  # bytes: no byte sequence can stop the loop
            if raw is not None and not raw.strip():
                continue
            try:
                if raw is None:
                    raise Refused(f"a request is one line of at most {MOST_LINE} bytes")
                req = _request(raw)
                if isinstance(req, dict) and req.get("op") == "quit":
                    agent.shutdown()
                    print("{}", flush=True)
                    # Nothing is left to tidy: skip the interpreter's teardown (tens of ms), which
                    # the controller's close (and with it a campaign's end) would wait for.
                    os._exit(0)
                reply = agent.handle(req)
            except Refused as e:
                # As escaped text: a log line holds whatever bytes the request had.
                shown = (raw or b"(over-long line)").strip()[:300].decode("utf-8", "backslashreplace")
                log.warning("refused: %s (request: %s)", e, shown)
                reply = {"error": f"refused: {e}"}
            except Exception as e:  # noqa: BLE001 - every other failure goes back to the controller
                reply = {"error": f"{type(e).__name__}: {e}"}
            print(json.dumps(reply), flush=True)
    finally:
        agent.shutdown()
    return 0


def apply_stored(path: str, iface: str | None) -> int:
    """The interface-up hook: apply the plan the node role stored, for one interface or all."""
    try:
        with open(path) as f:
            plan = plans.parse(json.load(f))
    except FileNotFoundError:
        return 0  # not provisioned for a setup yet: nothing is the rig's
    except (ValueError, Refused) as e:
        print(f"rig-if-up: {path}: {e}", file=sys.stderr)
        return 2
    if iface is not None and iface not in {i.name for i in plan.interfaces}:
        return 0  # not one of the rig's interfaces
    before = routing.state()
    routing.apply(plan, only=iface)
    what = iface or "node"
    print(f"rig-if-up: {what} {'changed' if routing.state() != before else 'unchanged'}")
    return 0


def main() -> int:
    args = sys.argv[1:]
    # How the controller starts it (--log FILE, --node FILE, or nothing): no argparse to import.
    flags = dict(zip(args[::2], args[1::2])) if len(args) % 2 == 0 else {}
    if set(flags) <= {"--log", "--node"} and len(flags) * 2 == len(args):
        return serve(RefusalLog(flags.get("--log")), flags.get("--node"))
    import argparse

    parser = argparse.ArgumentParser(description="The rig's node agent.")
    parser.add_argument("--log", help="also log refused requests to this file")
    parser.add_argument("--node", help=f"the node's configuration: its radios (default {radios.NODE_CONFIG})")
    sub = parser.add_subparsers(dest="command")
    apply = sub.add_parser("apply", help="apply a stored routing plan (for one interface)")
    apply.add_argument("plan")
    apply.add_argument("iface", nargs="?")
    parsed = parser.parse_args()
    if parsed.command == "apply":
        return apply_stored(parsed.plan, parsed.iface)
    return serve(RefusalLog(parsed.log), parsed.node)


if __name__ == "__main__":
    sys.exit(main())
