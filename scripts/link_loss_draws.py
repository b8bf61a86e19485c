"""Whether the emulated links' random drops look like the configured loss's independent draws.

Per run and hop direction, the frames the hop was given (delivered + dropped at random) and
dropped at random, from the `links` radios' per-second counters (timeseries/radio.parquet),
against Binomial(given, loss) with the loss in force: the run's hop configuration, changed by its
impairment events. A counter row spans the second before its time: rows in which the loss
changed are left out, and so is each interface's first row, which may begin before the run.
Prints the least likely hop directions in each tail, how many fall below 1 % against the 1 % that
independent draws put there, and any drop on a hop with no loss configured. Numbers printed,
never asserted.

    PYTHONPATH=. .venv/bin/python scripts/link_loss_draws.py results/<campaign>-<id> ...
"""

from __future__ import annotations

import json
import math
import sys

from rig.store.reader import CampaignDir

SIDES = ("up", "down")


def binomial_tails(k: int, n: int, p: float) -> tuple[float, float]:
    """(P(X <= k), P(X >= k)) for X ~ Binomial(n, p), 0 < p < 1, summed in logs from k outwards."""
    def pmf(i: int) -> float:
        return math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
                        + i * math.log(p) + (n - i) * math.log1p(-p))

    def tail(step: int) -> float:
        total, i = 0.0, k
        while 0 <= i <= n:
            term = pmf(i)
            total += term
            beyond_mean = (i - n * p) * step > 0
            if beyond_mean and term < 1e-17 * total:
                break
            i += step
        return min(1.0, total)

    return tail(-1), tail(+1)


def _loss_changes(run) -> dict[tuple, list[tuple[float, float]]]:
    """(host, interface, direction) -> [(time, loss fraction)], the configured loss first."""
    changes: dict[tuple, list[tuple[float, float]]] = {}
    hops = run.series("hops")
    for h in hops.to_pylist() if hops is not None else []:
        changes[(h["host"], h["interface"], h["direction"])] = [(-math.inf, h["loss_pct"] / 100)]
    events = run.series("events")
    for e in sorted(events.to_pylist() if events is not None else [], key=lambda e: e["actual"] or 0):
        values = json.loads(e["values"] or "{}")
        if e["what"] != "impairment" or "loss_pct" not in values or e["actual"] is None:
            continue
        for side in SIDES:
            if values.get("direction", "up") in (side, "both"):
                changes.setdefault((e["host"], e["interface"], side), [(-math.inf, 0.0)]).append(
                    (e["actual"], values["loss_pct"] / 100))
    return changes


def hop_draws(run) -> list[dict]:
    """One row per hop direction with frames: what it was given and dropped at each loss."""
    radio = run.series("radio")
    if radio is None:
        return []
    changes, seen, counts = _loss_changes(run), set(), {}
    for row in sorted(radio.to_pylist(), key=lambda r: r["time"]):
        iface = (row["host"], row["interface"])
        if iface not in seen:  # the first second may begin before the run
            seen.add(iface)
            continue
        for side in SIDES:
            steps = changes.get((*iface, side), [(-math.inf, 0.0)])
            if any(row["time"] - 1.0 < t <= row["time"] for t, _ in steps):
                continue  # the loss changed within this second
            loss = [v for t, v in steps if t <= row["time"] - 1.0][-1]
            c = counts.setdefault((*iface, side, loss), [0, 0])
            c[0] += int(row[f"{side}_frames"] + row[f"{side}_loss_drops"])
            c[1] += int(row[f"{side}_loss_drops"])
    return [{"run": run.run_id, "host": h, "interface": i, "direction": s, "loss": loss, "given": g, "drops": d}
            for (h, i, s, loss), (g, d) in sorted(counts.items()) if g]


def main(dirs: list[str]) -> None:
    tested, unconfigured = [], []
    for d in dirs:
        for run in CampaignDir(d).recorded():
            for h in hop_draws(run):
                if h["loss"] <= 0:
                    if h["drops"]:
                        unconfigured.append(h)
                    continue
                h["p_low"], h["p_high"] = binomial_tails(h["drops"], h["given"], h["loss"])
                tested.append(h)
    n = len(tested)
    print(f"{n} hop directions with a configured loss; {len(unconfigured)} with drops and no loss configured")
    for h in unconfigured:
        print(f"  no loss configured: {h['run']} {h['host']} {h['interface']} {h['direction']}: "
              f"{h['drops']} of {h['given']} frames")
    for side, key in (("fewer", "p_low"), ("more", "p_high")):
        below = sum(h[key] < 0.01 for h in tested)
        print(f"{side} drops than the loss draws: {below} below p 0.01 (independent draws: {0.01 * n:.1f})")
        for h in sorted(tested, key=lambda h: h[key])[:5]:
            print(f"  p {h[key]:.2e} (x{n}: {min(1.0, h[key] * n):.2e}) {h['run']} {h['host']} {h['interface']} "
                  f"{h['direction']}: {h['drops']} of {h['given']} at {h['loss']:.4%} "
                  f"(expected {h['given'] * h['loss']:.1f})")


if __name__ == "__main__":
    main(sys.argv[1:])
