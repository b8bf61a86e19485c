"""Which factors a campaign varied, and the slices in which one factor varies alone."""

from __future__ import annotations

from collections import defaultdict

# The factors of seed 002's figures, in the order a report shows them.
FACTORS = ("connections", "volume_bytes", "rcvbuf_bytes", "wifi_standard", "homing", "setup", "backup", "policy")
LABELS = {"connections": "parallel connections", "volume_bytes": "data volume",
          "rcvbuf_bytes": "receiver buffer", "wifi_standard": "WiFi standard",
          "homing": "sender homing", "setup": "setup", "cc": "congestion control", "backup": "backup path",
          "policy": "path policy"}
_ORDER = {"homing": ["dual", "lte", "wifi"], "setup": ["I", "II", "III"],
          "wifi_standard": ["g", "a", "n24", "n5", "ac"], "backup": ["none", "wifi", "lte"],
          "policy": ["none", "loss-aware"]}


def fmt(factor: str, value: object) -> str:
    if value is None:
        return "-"
    if factor == "volume_bytes":
        return f"{value / 1e6:g} MB"
    if factor == "rcvbuf_bytes":
        return f"{value / 1e3:g} KB"
    if factor == "setup":
        return f"Setup {value}"
    return str(value)


def ordered(factor: str, values) -> list:
    known = _ORDER.get(factor, [])
    return sorted(set(values), key=lambda v: (known.index(v) if v in known else len(known),
                                              v if isinstance(v, (int, float)) else str(v)))


def varied(rows: list[dict]) -> list[str]:
    return [f for f in FACTORS if len({r.get(f) for r in rows}) > 1]


def slices(rows: list[dict], factor: str) -> list[tuple[dict, list[dict]]]:
    """Groups of rows with every other varied factor fixed, each a panel of `factor`'s figure.

    Only groups in which `factor` takes more than one value are returned (unless none does).
    """
    others = [f for f in varied(rows) if f != factor]
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        groups[tuple(r.get(f) for f in others)].append(r)
    rank = {f: ordered(f, [r.get(f) for r in rows]) for f in others}
    keys = sorted(groups, key=lambda k: tuple(rank[f].index(v) for f, v in zip(others, k)))
    out = [(dict(zip(others, k)), groups[k]) for k in keys]
    spread = [s for s in out if len({r.get(factor) for r in s[1]}) > 1]
    return spread or out


def title(fixed: dict) -> str:
    return ", ".join(fmt(f, v) if f == "setup" else f"{LABELS[f]} {fmt(f, v)}" for f, v in fixed.items()) or "all runs"
