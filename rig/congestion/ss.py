"""What each TCP socket or MPTCP subflow runs, from `ss -tinH` (with `-m`, its buffers too): the CC,
windows, RTT, bytes acked."""

from __future__ import annotations

import re

from rig.congestion.tools import in_netns, run
from rig.core.errors import RigError

_SS_ADDR = re.compile(r"^\S+\s+\S+\s+(?P<local>\S+)\s+(?P<remote>\S+)")
_RCVBUF = re.compile(r"\brb(\d+)")  # in skmem:(r0,rb131072,t0,...): the socket's sk_rcvbuf


def subflow_ccs(netns: str | None) -> list[dict]:
    """Established TCP sockets in `netns` (None: this namespace) with the CC each runs.

    Each dict: local, remote ("addr:port"), cc, mptcp (True for an MPTCP subflow), and
    cwnd (packets), rtt_ms (smoothed) and bytes_acked when ss reports them, ssthresh (packets)
    when it is not infinite (ss leaves it out then); snd_wnd (the window the peer offers) and
    rcv_ssthresh (the most this end offers for now), bytes; rcvbuf (sk_rcvbuf, bytes) with `-m`.
    """
    p = run(in_netns(netns, ["ss", "-tinH", "state", "established"]), timeout=20)
    if p.returncode != 0:
        raise RigError(f"ss in netns {netns} failed: {p.stderr.strip()}")
    return parse_ss(p.stdout)


def parse_ss(text: str) -> list[dict]:
    """The sockets of `ss -tinH state established` output (see subflow_ccs)."""
    out: list[dict] = []
    sock: dict | None = None
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():  # socket line: Recv-Q Send-Q Local Peer
            m = _SS_ADDR.match(line)
            sock = {"local": m["local"], "remote": m["remote"]} if m else None
            continue
        if sock is not None:  # info line: the CC name comes first (after skmem)
            words = line.split()
            named = [w for w in words if not w.startswith("skmem:")]  # -m puts skmem before the CC
            sock["cc"] = named[0] if named and ":" not in named[0] else ""
            sock["mptcp"] = "tcp-ulp-mptcp" in words
            fields = dict(w.split(":", 1) for w in words if ":" in w)
            if fields.get("cwnd", "").isdigit():
                sock["cwnd"] = int(fields["cwnd"])
            if fields.get("ssthresh", "").isdigit():
                sock["ssthresh"] = int(fields["ssthresh"])
            for key in ("bytes_acked", "snd_wnd", "rcv_ssthresh"):
                if fields.get(key, "").isdigit():
                    sock[key] = int(fields[key])
            if (rb := _RCVBUF.search(fields.get("skmem", ""))):
                sock["rcvbuf"] = int(rb[1])
            if "rtt" in fields:
                sock["rtt_ms"] = float(fields["rtt"].split("/")[0])
            out.append(sock)
            sock = None
    return out
