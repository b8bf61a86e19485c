"""The host's CPU time as /proc/stat counts it, and the share its hypervisor took (steal).

In a virtual machine a virtual CPU the hypervisor gives to something else is "steal" time: no
task here runs then, the emulators at real-time priority included, and their clocks jump when it
ends. The emulated rig's lag is judged per run; steal says when the cause was outside the machine.
"""

from __future__ import annotations

from pathlib import Path


def cpu_ticks(stat: str | None = None) -> tuple[int, int]:
    """(stolen, total) clock ticks of all CPUs so far, from /proc/stat's first line (or `stat`)."""
    line = (stat if stat is not None else Path("/proc/stat").read_text()).split("\n", 1)[0]
    fields = [int(x) for x in line.split()[1:9]]  # user nice system idle iowait irq softirq steal (guest is in user)
    return fields[7], sum(fields)


def steal_share(before: tuple[int, int], after: tuple[int, int]) -> float | None:
    """The share of CPU time stolen between two cpu_ticks() readings (None: no time passed)."""
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total > 0 else None
