"""Per-RTT stochastic model of the shared-bottleneck test (docs/congestion-control.md,
"OLIA and upstream's scheduler"): what the published rules give without a kernel in the way.

Two identical paths of one MPTCP connection and one TCP Reno flow share a bottleneck, so all
see the same RTT; every packet is lost independently with probability p. Per RTT a window
with a loss halves (once), otherwise it grows by the algorithm's per-RTT increase:
  reno  1 per path (uncoupled)
  lia   min(w_r * max_k w_k / w^2, 1)                  (RFC 6356, equal RTTs)
  olia  w_r^2 / w^2 + a_r, with OLIA's M, B and a_r     (Khalili et al., equal RTTs)
Prints the MPTCP/TCP throughput ratio (= mean window ratio at equal RTT) and the share of
RTTs with a path at <= 3 packets.

usage: python3 coupled_model.py [LOSS [RTTS]]     e.g. 0.001 100000 (about 6 s)
"""

from __future__ import annotations

import random
import sys


def olia_terms(w: list[float], ell: list[float]) -> list[float]:
    """a_r: +1/(n|B\\M|) on B\\M, -1/(n|M|) on M when B\\M is not empty, else 0."""
    n = len(w)
    m = {r for r in range(n) if w[r] == max(w)}
    b = {r for r in range(n) if ell[r] == max(ell)}
    collected = b - m
    if not collected:
        return [0.0] * n
    return [1 / (n * len(collected)) if r in collected else -1 / (n * len(m)) if r in m else 0.0 for r in range(n)]


def run(cc: str, p: float, rtts: int, seed: int) -> tuple[float, float]:
    rnd = random.Random(seed)
    lost = lambda window: any(rnd.random() < p for _ in range(int(window)))  # noqa: E731
    w, tcp = [10.0, 10.0], 10.0
    between, since = [0.0, 0.0], [0.0, 0.0]  # OLIA's l1r, l2r (packets)
    sum_w = sum_tcp = parked = 0.0
    for _ in range(rtts):
        total = sum(w)
        sum_w, sum_tcp, parked = sum_w + total, sum_tcp + tcp, parked + (min(w) <= 3)
        a = olia_terms(w, [max(x, y) for x, y in zip(between, since)]) if cc == "olia" else [0.0, 0.0]
        grow = {"reno": [1.0, 1.0],
                "lia": [min(wr * max(w) / total ** 2, 1.0) for wr in w],
                "olia": [wr ** 2 / total ** 2 + ar for wr, ar in zip(w, a)]}[cc]
        for r in range(2):
            if lost(w[r]):
                between[r], since[r] = since[r], 0.0
                w[r] = max(w[r] / 2, 1.0)
            else:
                since[r] += w[r]
                w[r] = max(w[r] + grow[r], 2.0 if cc == "olia" else 1.0)  # OLIA's floor of 2, as in the BPF code
        tcp = max(tcp / 2, 1.0) if lost(tcp) else tcp + 1
    return sum_w / sum_tcp, parked / rtts


if __name__ == "__main__":
    loss = float(sys.argv[1]) if len(sys.argv) > 1 else 0.001
    rtts = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    for cc in ("lia", "olia", "reno"):
        results = [run(cc, loss, rtts, seed) for seed in (1, 2)]
        print(f"{cc} loss {loss:g}: ratio " + ", ".join(f"{r:.2f}" for r, _ in results)
              + "; RTTs with a path at <= 3 packets " + ", ".join(f"{s:.1%}" for _, s in results))
