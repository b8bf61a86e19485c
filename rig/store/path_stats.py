"""What a pair's subflows saw, per path and for the whole MPTCP connection: the runs table's RTT,
loss and subflow-byte columns (rig.store.columns), from the sender's own subflow samples.

Input: the pair's rows of the run's transfer_subflows series (rig.run.tables): per subflow
(connection, local, remote) its path and, every 1/series_hz and once after the receiver closed,
its cumulative bytes_acked, bytes_sent (retransmissions included), bytes_retrans and smoothed RTT.

- RTT. Each sample's smoothed RTT counts with the bytes its subflow had acknowledged since its
  previous sample (the first since the SYN): the RTT the data saw, as a capture of every segment's RTT
  would average it, so an idle subflow (a backup, a join that carried nothing) weighs nothing.
  Per path (a sender radio's role: wifi, lte, lte2): the weighted mean and standard deviation of
  its subflows' samples. The connection-level MPTCP RTT (mptcp_rtt_ms): the same over every
  subflow of the pair, so it lies between the paths' RTTs, near the path that carried more.
  The kernel has no MPTCP-level RTT estimate to read instead (its MPTCP_INFO has none on 6.18,
  and TCP_INFO on an MPTCP socket is its first subflow's).
- Loss per path: bytes retransmitted / bytes sent by the path's subflows (their last samples),
  as the loss-aware policy measures it (it counts drops at the path's own queue too).
- Subflow bytes: what the subflows carried once each (bytes_sent - bytes_retrans at each
  subflow's last sample: payload, no headers, a TCP retransmission not again), summed, against
  what the receiver read. Above it is data the MPTCP level put on more than one subflow; below it
  a subflow's last bytes were not sampled (it closed between two samples). Either beyond
  SUBFLOW_EXCESS_MAX / SUBFLOW_SHORTFALL_MAX of what was read sets subflow_mismatch.

Pure: rows in, a dict of columns out (rig.run.execute fills a pair's row with it; the synthetic
store too).
"""

from __future__ import annotations

import math
from collections import defaultdict

from rig.model.topology import RADIOS

PATHS = RADIOS  # the per-path columns: one per sender radio role
# What the subflows may carry beyond what the receiver read before the pair is flagged: the
# emulated rig's dual-homed pairs carried 0-5.5 % more (data sent on two subflows), one short
# olia transfer 21.7 % (docs/measurements/2026-11-27-subflow-bytes.md).
SUBFLOW_EXCESS_MAX = 0.10
# ... and less (a subflow's last bytes missed by the sampler): none of those pairs was below.
SUBFLOW_SHORTFALL_MAX = 0.001


def _weighted(values: list[tuple[float, float]]) -> tuple[float | None, float | None]:
    """(mean, standard deviation) of (value, weight) pairs; None where the weights sum to 0."""
    total = sum(w for _, w in values)
    if total <= 0:
        return None, None
    mean = sum(v * w for v, w in values) / total
    return mean, math.sqrt(max(sum(w * (v - mean) ** 2 for v, w in values) / total, 0.0))


def _by_subflow(samples: list[dict]) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = defaultdict(list)
    for s in samples:
        out[(s.get("connection"), s.get("local"), s.get("remote"))].append(s)
    for rows in out.values():
        rows.sort(key=lambda s: s.get("time") or 0.0)
    return out


def empty() -> dict:
    """The columns of a pair without subflow samples (a failed transfer, a run recorded before)."""
    return {"mptcp_rtt_ms": None, **{f"{kind}_{p}": None for p in PATHS for kind in ("rtt_ms", "rtt_sd_ms", "loss")},
            "subflow_bytes": None, "subflow_excess": None, "subflow_mismatch": None}


def pair_path_stats(samples: list[dict], bytes_received: int | None) -> dict:
    """The pair's columns from its transfer_subflows rows; `bytes_received`: what its receiver read."""
    out = empty()
    if not samples:
        return out
    rtts: dict[str, list] = defaultdict(list)
    sent: dict[str, int] = defaultdict(int)
    retrans: dict[str, int] = defaultdict(int)
    carried = 0
    for rows in _by_subflow(samples).values():
        path = rows[0].get("path") or "other"
        previous = 1  # bytes_acked counts the SYN's sequence number
        for s in rows:
            acked = s.get("bytes_acked") or 0
            if s.get("rtt_ms") and acked > previous:
                rtts[path].append((float(s["rtt_ms"]), acked - previous))
            previous = max(previous, acked)
        last = rows[-1]
        sent[path] += last.get("bytes_sent") or 0
        retrans[path] += last.get("bytes_retrans") or 0
        carried += (last.get("bytes_sent") or 0) - (last.get("bytes_retrans") or 0)
    out["mptcp_rtt_ms"] = _weighted([x for values in rtts.values() for x in values])[0]
    for p in PATHS:
        out[f"rtt_ms_{p}"], out[f"rtt_sd_ms_{p}"] = _weighted(rtts.get(p, []))
        out[f"loss_{p}"] = retrans[p] / sent[p] if sent.get(p) else None
    out["subflow_bytes"] = carried
    if bytes_received:
        excess = (carried - bytes_received) / bytes_received
        out["subflow_excess"] = excess
        out["subflow_mismatch"] = excess > SUBFLOW_EXCESS_MAX or excess < -SUBFLOW_SHORTFALL_MAX
    return out
