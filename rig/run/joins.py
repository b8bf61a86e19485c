"""Each connection's subflows over their life, and whether every path a connection should use
joined in time.

The sender's transfer reports, per connection, its first SYN (`started_at`, just before
connect()), the kernel's MPTCP path manager events (created, announced, sub_established,
sub_closed with its error; rig_node.pm_events) and its subflow samples (every 1/series_hz).
From them, one row per subflow: when it was established and closed (to the event, ~0.1 ms) and
when it first carried data (to the sample period), relative to its connection's first SYN.

A real client's path manager opens a path within a few round trips of the moment it can: the
connection fully established (its first data acknowledged: the `established` event) for a path
to the connection's first remote address, and the arrival of the receiver's ADD_ADDR (the
`announced` event) for a path to an announced one. A connection whose path was not established
within max(join_min_s, join_rtts x RTT) of that moment is invalid whatever its length (RTT: the
largest smoothed RTT its subflows showed until then, queues included, or the joined subflow's
own first one, from its handshake over its path, if larger), plus TCP's SYN timeouts
(1 s, doubling) for each SYN its sender retransmitted in the run (a join SYN lost on a busy
medium is the network's). The time to that moment is the network's: a first window queued on a
busy medium delays full establishment, an ADD_ADDR lost there waits for its retransmission; the
subflow rows record it (`ready_s`). A path never established is invalid however long the
connection lived, but for two causes that are the network's:
- the connection went on as plain TCP (the source's `mptcp` false): it has no other path, and
  the judge's fallback checks rule on it;
- its path goes to an address the receiver announced, and the announcement was lost on the way:
  the receiver's side of the connection announced an address (the sink's `add_addr_signal`),
  its kernel sent each of its connections' announcements at least once (MPTcpExtAddAddrTx; it
  sends one again while no echo comes back, until the connection ends) and dropped none unsent
  (MPTcpExtAddAddrTxDrop), and the sender saw none on this connection while every ADD_ADDR its
  kernel counted in the run (MPTcpExtAddAddr) was one its connections' events show. The run is
  a result, with those connections counted (`add_addr_lost`).
A joined subflow the scheduler left idle is a result: it has no first data.
"""

from __future__ import annotations

import pyarrow as pa

from rig.model.spec import Limits
from rig.model.topology import Pair, Subflow

# time: the connection's first SYN (unix s), which the other times count from
SCHEMA = pa.schema([("time", pa.float64()), ("host", pa.string()), ("pair", pa.int32()), ("connection", pa.int32()),
                    ("local", pa.string()), ("remote", pa.string()), ("path", pa.string()), ("initial", pa.bool_()),
                    ("ready_s", pa.float64()), ("established_s", pa.float64()), ("first_data_s", pa.float64()),
                    ("closed_s", pa.float64()),
                    ("error", pa.int32()), ("bytes_acked", pa.int64()), ("min_rtt_ms", pa.float64())])


def _addr(endpoint: str) -> str:
    return endpoint.rsplit(":", 1)[0]


def connection_subflows(conn: dict, paths: dict[tuple[str, str], str]) -> list[dict]:
    """One connection's subflows (`paths`: (local address, remote address) -> path name, the
    remote "" for any), ordered by when they were established (failed joins, never established, last)."""
    start = conn.get("started_at")
    if start is None:
        return []
    rows: dict[str, dict] = {}

    def row(local: str, remote: str) -> dict:
        name = paths.get((_addr(local), _addr(remote))) or paths.get((_addr(local), ""), "other")
        return rows.setdefault(local, {"local": local, "remote": remote, "path": name,
                                       "initial": False, "ready_s": None,
                                       "established_s": None, "first_data_s": None, "closed_s": None,
                                       "error": None, "bytes_acked": None, "min_rtt_ms": None})

    events = conn.get("events") or []
    for e in events:
        if "local" not in e:
            continue
        r = row(e["local"], e.get("remote", ""))
        if e["event"] in ("created", "sub_established") and r["established_s"] is None:
            r["established_s"] = round(e["t"] - start, 6)
            r["initial"] = e["event"] == "created"
        elif e["event"] == "sub_closed":
            r["closed_s"], r["error"] = round(e["t"] - start, 6), e.get("error")
    for t, local, remote, acked, _sent, _retrans, rtt_ms, *_ in conn.get("subflows") or []:
        r = row(local, remote)
        if r["first_data_s"] is None:
            r["first_data_s"] = round(t - start, 6)
        r["bytes_acked"] = acked
        if rtt_ms and (r["min_rtt_ms"] is None or rtt_ms < r["min_rtt_ms"]):
            r["min_rtt_ms"] = rtt_ms
    _ready(rows.values(), events, start, fully_established_s(conn))
    never = float("inf")
    return sorted(rows.values(), key=lambda r: (never if r["established_s"] is None else r["established_s"], r["local"]))


def fully_established_s(conn: dict) -> float | None:
    """When the connection was fully established (its `established` event), seconds after it
    started; None when the sender saw no such event."""
    return next((e["t"] - conn["started_at"] for e in conn.get("events") or [] if e["event"] == "established"), None)


def _ready(rows, events: list[dict], start: float, established: float | None) -> None:
    """Each joined subflow's `ready_s`: when its connection's path manager could first open it
    (see the module's text), after the connection's first SYN; the connection's creation when the
    sender saw no `established` event."""
    initial = next((r for r in rows if r["initial"]), None)
    if initial is None:
        return
    if established is None:
        established = initial["established_s"]
    announced: dict[str, float] = {}
    for e in events:
        if e["event"] == "announced" and "remote" in e:
            announced.setdefault(_addr(e["remote"]), e["t"] - start)
    for r in rows:
        if r["initial"] or r["established_s"] is None:
            continue
        remote = _addr(r["remote"])
        ready = established
        if remote != _addr(initial["remote"]) and remote in announced:
            ready = max(ready, announced[remote])
        r["ready_s"] = round(ready, 6)


SYN_TIMEOUT_S = 1.0  # TCP's initial retransmission timeout (RFC 6298), doubling with each try
SYN_TRIES_ALLOWED = 3  # beyond 1 + 2 + 4 s a path that does not join is not waiting for a lost SYN


def join_bound_s(conn: dict, until_s: float, limits: Limits, syn_retransmits: int = 0,
                 joined: str | None = None) -> float:
    """max(join_min_s, join_rtts x the largest smoothed RTT any of the connection's subflows
    showed until `until_s` after its first SYN: the round trips as they were while the path
    manager worked, queues included: an ADD_ADDR waits in them like any segment), plus the SYN
    timeouts of the sender's retransmitted SYNs. `joined`, the joining subflow's local endpoint:
    its own first RTT sample counts too, whenever it came: it starts from its handshake's round
    trip, which the join had to make over its path (a cellular path can be several times slower
    than the first one; a delay before its SYN left is not in it)."""
    start = conn["started_at"]
    samples = conn.get("subflows") or []
    rtts = [row[6] for row in samples if row[6] and row[0] - start <= until_s]
    own = next((row[6] for row in samples if row[1] == joined and row[6]), None) if joined else None
    rtts += [own] if own else []
    tries = min(syn_retransmits, SYN_TRIES_ALLOWED)
    return max(limits.join_min_s, limits.join_rtts * max(rtts, default=0.0) / 1000) + SYN_TIMEOUT_S * (2 ** tries - 1)


def _created_s(subflows: list[dict]) -> float | None:
    return next((r["established_s"] for r in subflows if r["initial"]), None)


def path_join_s(subflows: list[dict], path: str) -> float | None:
    """How long after its establishment the connection had a subflow on `path` (0: its first
    subflow's path); None: never."""
    created = _created_s(subflows)
    times = [r["established_s"] for r in subflows if r["path"] == path and r["established_s"] is not None]
    if created is None or not times:
        return None
    return round(max(0.0, min(times) - created), 6)


def _first(subflows: list[dict], path: str) -> dict | None:
    """The connection's first subflow established on `path`."""
    return next((r for r in subflows if r["path"] == path and r["established_s"] is not None), None)


def _path_name(path: str) -> str:
    radio, _, side = path.partition("-")
    name = {"lte": "LTE", "wifi": "WiFi", "lte2": "second LTE"}.get(radio, radio)
    return f"{name} -> {side.upper()}" if side else name


ADD_ADDR_RX = "MPTcpExtAddAddr"  # ADD_ADDRs a host's kernel took (echoes apart)
ADD_ADDR_TX = "MPTcpExtAddAddrTx"  # ADD_ADDRs a host's kernel sent, each sending again included
ADD_ADDR_TX_DROP = "MPTcpExtAddAddrTxDrop"  # announcements a host's kernel could not send


class PairSubflows:
    """A pair's reports read once: each of the sender's connections with its subflows
    (connection_subflows), for the run's subflow_life rows, the judge's join check and the runs
    table's columns. `needed`: the subflows each connection must have (Pair.subflows), which name
    the rows' paths. `sink`, `sender_delta`, `receiver_delta`: the receiver's report and how far
    each side's MIB counters moved in the run (None: not read), the evidence of a lost
    announcement (see the module's text)."""

    def __init__(self, source: dict, pair: Pair, needed: tuple[Subflow, ...], sink: dict | None = None,
                 sender_delta: dict | None = None, receiver_delta: dict | None = None):
        self.pair, self.events_error, self.needed = pair, source.get("events_error"), needed
        self.sender_delta = sender_delta or {}
        paired = len({s.local for s in needed}) == len(needed)  # one subflow a radio: any remote will do
        paths = {(str(r.address), ""): r.role for r in pair.radios}
        paths.update({(str(s.local.address), "" if paired else str(s.remote.address)): s.name for s in needed})
        # (index, report, subflows) of each connection
        self.connections = [(n, conn, connection_subflows(conn, paths))
                            for n, conn in enumerate(source.get("connections") or [])]
        # those whose path manager events the source could read: the ones joins are judged on
        self.evented = [c for c in self.connections if "events" in c[1]]
        # the receiver's side of each connection, by the sender's first subflow ("ip:port")
        self.announced = {c.get("peer"): c.get("add_addr_signal") for c in (sink or {}).get("connections") or []}
        received = sum(e["event"] == "announced" for _, conn, _ in self.evented for e in conn["events"])
        self.announcements_traced = (bool(sender_delta) and bool(receiver_delta)  # empty: not read
                                     and receiver_delta.get(ADD_ADDR_TX, 0) >= sum(filter(None, self.announced.values()))
                                     and receiver_delta.get(ADD_ADDR_TX_DROP, 0) == 0
                                     and sender_delta.get(ADD_ADDR_RX, 0) == received)
        # (connection, path) of each needed path never established for a lost announcement
        self.lost = {(n, s.name) for n, conn, subflows in self._judged() for s in self.needed
                     if _first(subflows, s.name) is None and self._announcement_lost(conn, subflows, s)}

    def _receiver_announced(self, conn: dict, subflows: list[dict], path: Subflow) -> int | None:
        """For a path to another receiver address than the connection's first subflow (one the
        sender learns of from the receiver's ADD_ADDR): how many addresses the receiver's side of
        the connection announced. None for a path to that first address, or when not reported."""
        initial = next(r for r in subflows if r["initial"])
        if str(path.remote.address) == _addr(initial["remote"]):
            return None
        return self.announced.get(conn.get("local"))

    def _announcement_lost(self, conn: dict, subflows: list[dict], path: Subflow) -> bool:
        """Whether `path` goes to an address the receiver announced on this connection, and no
        ADD_ADDR of it reached the sender (the module's text gives the evidence)."""
        if not self._receiver_announced(conn, subflows, path):
            return False
        remote = str(path.remote.address)
        heard = any(e["event"] == "announced" and _addr(e.get("remote", "")) == remote for e in conn["events"])
        return not heard and self.announcements_traced

    def _judged(self):
        """The connections whose joins are judged: connected as MPTCP with events read (one that
        never connected, or not as MPTCP, or went on as plain TCP: the transfer's error or the
        judge's fallback checks say so)."""
        return [(n, conn, subflows) for n, conn, subflows in self.evented
                if conn.get("started_at") is not None and _created_s(subflows) is not None
                and conn.get("mptcp") is not False]

    def rows(self) -> list[dict]:
        """The run's subflow_life rows of this pair."""
        return [{"time": conn["started_at"], "host": self.pair.sender, "pair": self.pair.index, "connection": n, **r}
                for n, conn, subflows in self.connections for r in subflows]

    def problem(self, limits: Limits) -> str | None:
        """Why a connection did not have every one of the needed subflows in time, or None. A
        join's bound grows with the SYNs the sender retransmitted in the run (TcpExtTCPSynRetrans)."""
        if self.events_error:
            return f"its subflows cannot be checked ({self.events_error})"
        syn_retransmits = self.sender_delta.get("TcpExtTCPSynRetrans", 0)
        for n, conn, subflows in self._judged():
            for path in self.needed:
                first = _first(subflows, path.name)
                if first is None and (n, path.name) in self.lost:
                    continue
                if first is None:
                    unannounced = self._receiver_announced(conn, subflows, path) == 0
                    why = " (the receiver announced no address on it)" if unannounced else ""
                    return f"connection {n}: its {_path_name(path.name)} subflow was never established{why}"
                if first["initial"]:
                    continue
                after = first["established_s"] - first["ready_s"]
                bound = join_bound_s(conn, first["established_s"], limits, syn_retransmits, first["local"])
                if after > bound:
                    return (f"connection {n}: its {_path_name(path.name)} subflow was established {after:.2f} s after "
                            f"its path manager could open it (bound {bound:.2f} s)")
        return None

    def summary(self) -> dict:
        """runs.parquet's subflow columns of the pair: `subflows`, the fewest subflows established
        on any of its connections; `join_s`, the longest any of its connections took from its
        establishment until it had each needed subflow (multipath runs; None when one never had
        them, or single-homed)."""
        needed = [s.name for s in self.needed]
        counts = [sum(1 for r in subflows if r["established_s"] is not None) for _, _, subflows in self.evented]
        joins = [[path_join_s(subflows, p) for p in needed] for _, _, subflows in self.evented]
        joined = [None if None in after else max(after) for after in joins]
        return {"subflows": min(counts, default=None),
                "join_s": max(joined) if len(needed) > 1 and joined and None not in joined else None,
                "add_addr_lost": len({n for n, _ in self.lost})}


def table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)
