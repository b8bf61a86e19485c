"""Link traces in Mahimahi's format: a pipe's rate profile (docs/emulator.md, "Link traces").

One line per delivery opportunity: an integer, the millisecond (from the trace's start) at which
one MTU-sized packet (1500 bytes) may leave the link. Lines are non-decreasing; several lines
with the same value are several opportunities in that millisecond. The trace repeats with a
period of its last timestamp. Blank lines are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rig.core.errors import InputError
from rig.core.repo import RADIO_CONFIGS

MTU_BYTES = 1500  # per opportunity, as Mahimahi counts it (the IP packet)
TRACES = RADIO_CONFIGS / "traces"


def trace_path(name: str) -> Path:
    """A campaign's trace: a file in radio-configs/traces (with or without .mahi), else a path."""
    for candidate in (TRACES / name, TRACES / f"{name}.mahi"):
        if "/" not in name and candidate.is_file():
            return candidate
    return Path(name)


@dataclass(frozen=True)
class LinkTrace:
    path: Path
    opportunities_ms: tuple[int, ...]  # sorted; the period is the last one

    @property
    def period_ms(self) -> int:
        return self.opportunities_ms[-1]

    def mean_rate_bps(self) -> float:
        """IP-level rate over one period (1500 bytes per opportunity)."""
        return len(self.opportunities_ms) * MTU_BYTES * 8 / (self.period_ms / 1e3)

    def rate_bps(self, start_s: float, end_s: float) -> float:
        """IP-level rate the trace offers in [start_s, end_s) after its start (repeating)."""
        period = self.period_ms
        count = 0
        for t in self.opportunities_ms:
            # opportunity instants t + k*period, k >= 0, inside [start, end) (ms)
            lo, hi = start_s * 1e3, end_s * 1e3
            k = max(0, -(-(lo - t) // period))  # first k with t + k*period >= lo
            while t + k * period < hi:
                count += 1
                k += 1
        return count * MTU_BYTES * 8 / (end_s - start_s)

    def normalized_text(self) -> str:
        """One integer a line: what the emulator reads."""
        return "".join(f"{t}\n" for t in self.opportunities_ms)


def load_trace(path: Path | str) -> LinkTrace:
    """Parses and checks a trace; a bad one raises InputError naming the file and the line."""
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(str(path), "", f"cannot read the trace: {e}") from None
    values: list[int] = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        if not line.isdigit():
            raise InputError(f"{path}:{number}", "", f"not a millisecond timestamp (a non-negative integer): {line[:40]!r}")
        value = int(line)
        if values and value < values[-1]:
            raise InputError(f"{path}:{number}", "", f"timestamps must not decrease ({value} after {values[-1]})")
        if value > 0xFFFFFFFF:
            raise InputError(f"{path}:{number}", "", f"timestamp {value} ms is too large")
        values.append(value)
    if not values:
        raise InputError(str(path), "", "the trace has no delivery opportunities")
    if values[-1] == 0:
        raise InputError(str(path), "", "the trace's last timestamp (its period) must be > 0 ms")
    return LinkTrace(path, tuple(values))
