"""The MPTCP path manager's events in this network namespace, as the kernel announces them (the
generic netlink family `mptcp_pm`, multicast group `mptcp_pm_events`; what `ip mptcp monitor`
shows), each stamped with the wall clock when it was read.

A subflow's life is in them: the connection created (its first subflow established), an address
announced by the peer, a subflow established, a subflow closed (with its error: a join refused or
a path that failed). The kernel sends them to listeners with CAP_NET_ADMIN only; one listener
sees every MPTCP connection of its namespace, told apart by their token.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import select
import socket
import struct
import threading
import time

from rig_node.stopping import start_thread

NETLINK_GENERIC, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP = 16, 270, 1
GENL_ID_CTRL, CTRL_CMD_GETFAMILY = 0x10, 3
CTRL_ATTR_FAMILY_ID, CTRL_ATTR_FAMILY_NAME, CTRL_ATTR_MCAST_GROUPS = 1, 2, 7
CTRL_ATTR_MCAST_GRP_NAME, CTRL_ATTR_MCAST_GRP_ID = 1, 2
NLM_F_REQUEST, NLMSG_ERROR = 1, 2
NLMSG = struct.Struct("=IHHII")  # len, type, flags, seq, pid
GENL = struct.Struct("=BBH")  # cmd, version, reserved
NLA = struct.Struct("=HH")  # len, type
NLA_TYPE_MASK = 0x3FFF

FAMILY, GROUP = "mptcp_pm", "mptcp_pm_events"
# include/uapi/linux/mptcp_pm.h: enum mptcp_event_type and enum mptcp_event_attr
EVENTS = {1: "created", 2: "established", 3: "closed", 6: "announced", 7: "removed",
          10: "sub_established", 11: "sub_closed", 13: "sub_priority"}
ATTR_TOKEN, ATTR_SADDR4, ATTR_DADDR4, ATTR_SPORT, ATTR_DPORT = 1, 5, 7, 9, 10
ATTR_LOC_ID, ATTR_REM_ID, ATTR_BACKUP, ATTR_ERROR, ATTR_IF_IDX = 3, 4, 11, 12, 15


def _attrs(data: bytes) -> dict[int, bytes]:
    out, at = {}, 0
    while at + NLA.size <= len(data):
        length, kind = NLA.unpack_from(data, at)
        if length < NLA.size:
            break
        out[kind & NLA_TYPE_MASK] = data[at + NLA.size:at + length]
        at += (length + 3) & ~3
    return out


def _messages(data: bytes):
    at = 0
    while at + NLMSG.size <= len(data):
        length, kind, _, _, _ = NLMSG.unpack_from(data, at)
        if length < NLMSG.size:
            break
        yield kind, data[at + NLMSG.size:at + length]
        at += (length + 3) & ~3


def _group_id(sock: socket.socket) -> int:
    """The event group's id, asked of the generic netlink controller."""
    name = FAMILY.encode() + b"\0"
    attr = NLA.pack(NLA.size + len(name), CTRL_ATTR_FAMILY_NAME) + name + b"\0" * (-len(name) % 4)
    body = GENL.pack(CTRL_CMD_GETFAMILY, 1, 0) + attr
    sock.send(NLMSG.pack(NLMSG.size + len(body), GENL_ID_CTRL, NLM_F_REQUEST, 1, 0) + body)
    for kind, payload in _messages(sock.recv(65536)):
        if kind == NLMSG_ERROR:
            code = -struct.unpack_from("=i", payload)[0]
            raise OSError(code, f"generic netlink family {FAMILY}: {os.strerror(code)}")
        groups = _attrs(_attrs(payload[GENL.size:]).get(CTRL_ATTR_MCAST_GROUPS, b""))
        for group in groups.values():
            g = _attrs(group)
            if g.get(CTRL_ATTR_MCAST_GRP_NAME, b"").rstrip(b"\0").decode() == GROUP:
                return struct.unpack("=I", g[CTRL_ATTR_MCAST_GRP_ID])[0]
    raise OSError(errno.ENOENT, f"no multicast group {GROUP} in {FAMILY}")


def _event(kind: int, payload: bytes, t: float) -> dict | None:
    name = EVENTS.get(GENL.unpack_from(payload)[0]) if kind != NLMSG_ERROR else None
    if name is None:
        return None
    a = _attrs(payload[GENL.size:])
    event = {"t": round(t, 6), "event": name}
    if ATTR_TOKEN in a:
        event["token"] = struct.unpack("=I", a[ATTR_TOKEN])[0]
    if ATTR_SADDR4 in a:
        port = struct.unpack("!H", a[ATTR_SPORT])[0] if ATTR_SPORT in a else 0
        event["local"] = f"{ipaddress.IPv4Address(a[ATTR_SADDR4])}:{port}"
    if ATTR_DADDR4 in a:
        port = struct.unpack("!H", a[ATTR_DPORT])[0] if ATTR_DPORT in a else 0
        event["remote"] = f"{ipaddress.IPv4Address(a[ATTR_DADDR4])}:{port}"
    for attr, key in ((ATTR_LOC_ID, "local_id"), (ATTR_REM_ID, "remote_id"), (ATTR_BACKUP, "backup"),
                      (ATTR_ERROR, "error")):
        if attr in a:
            event[key] = a[attr][0]
    if ATTR_IF_IDX in a:
        event["ifindex"] = struct.unpack("=i", a[ATTR_IF_IDX])[0]
    return event


class Listener:
    """Reads the namespace's MPTCP events on a thread of its own from its creation until stop();
    `events` holds them in the order read. OSError at creation when the kernel will not tell
    (no MPTCP, or not CAP_NET_ADMIN)."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
        try:
            self._sock.bind((0, 0))
            self._sock.setsockopt(SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, _group_id(self._sock))
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        except OSError:
            self._sock.close()
            raise
        self.events: list[dict] = []
        self.error: str | None = None
        self._new = threading.Condition()
        self._stop_r, self._stop_w = os.pipe()
        self._thread = start_thread(self._loop)

    def _loop(self) -> None:
        try:
            while True:
                ready, _, _ = select.select([self._sock, self._stop_r], [], [])
                if self._stop_r in ready and self._sock not in ready:
                    return
                data = self._sock.recv(65536)
                t = time.time()
                with self._new:
                    self.events += [e for e in (_event(k, p, t) for k, p in _messages(data)) if e is not None]
                    self._new.notify_all()
        except OSError as e:  # ENOBUFS: events were lost; say so rather than pretend to be complete
            self.error = f"MPTCP events: {e}"

    def wait_for(self, done, timeout_s: float) -> bool:
        """Until done(events) holds, at most timeout_s; whether it held."""
        with self._new:
            return self._new.wait_for(lambda: done(self.events), max(0.0, timeout_s))

    def stop(self) -> list[dict]:
        """Stops reading (what the kernel already sent is read first) and returns the events."""
        os.write(self._stop_w, b"x")
        self._thread.join()
        for fd in (self._stop_r, self._stop_w):
            os.close(fd)
        self._sock.close()
        return self.events


def of_connection(events: list[dict], local: str) -> list[dict]:
    """The events of the connection whose first subflow's local end is `local` ("ip:port"): its
    `created` event names the token the others carry."""
    token = next((e["token"] for e in events if e["event"] == "created" and e.get("local") == local), None)
    return [] if token is None else [{k: v for k, v in e.items() if k != "token"} for e in events
                                     if e.get("token") == token]


def established(events: list[dict]) -> dict[tuple[str, str], float]:
    """One connection's events => its subflows established and not closed since: (local
    "ip:port", remote "ip:port") -> when (the first subflow's is the connection's `created`)."""
    out: dict[tuple[str, str], float] = {}
    for e in events:
        if "local" not in e:
            continue
        key = (e["local"], e.get("remote", ""))
        if e["event"] in ("created", "sub_established"):
            out.setdefault(key, e["t"])
        elif e["event"] == "sub_closed":
            out.pop(key, None)
    return out
