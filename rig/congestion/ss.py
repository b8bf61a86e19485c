"""What each TCP socket or MPTCP subflow runs, from `ss -tinH`: the CC, window, RTT, bytes acked."""

from __future__ import annotations

import re

from rig.congestion.tools import in_netns, run
from rig.core.errors import RigError

_SS_ADDR = re.compile(r"^\S+\s+\S+\s+(?P<local>\S+)\s+(?P<remote>\S+)")


def subflow_ccs(netns: str | None) -> list[dict]:
    """Established TCP sockets in `netns` (None: this namespace) with the CC each runs.

    Each dict: local, remote ("addr:port"), cc, mptcp (True for an MPTCP subflow), and
    cwnd (packets), rtt_ms (smoothed) and bytes_acked when ss reports them, ssthresh (packets)
    when it is not infinite (ss leaves it out then).
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
        if sock is not None:  # info line: the CC name comes first
            words = line.split()
            sock["cc"] = words[0] if words and ":" not in words[0] else ""
            sock["mptcp"] = "tcp-ulp-mptcp" in words
            fields = dict(w.split(":", 1) for w in words if ":" in w)
            if fields.get("cwnd", "").isdigit():
                sock["cwnd"] = int(fields["cwnd"])
            if fields.get("ssthresh", "").isdigit():
                sock["ssthresh"] = int(fields["ssthresh"])
            if fields.get("bytes_acked", "").isdigit():
                sock["bytes_acked"] = int(fields["bytes_acked"])
            if "rtt" in fields:
                sock["rtt_ms"] = float(fields["rtt"].split("/")[0])
            out.append(sock)
            sock = None
    return out
