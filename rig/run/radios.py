"""The radio side of a run, as the run sees it: what the backend's radios say of a run (their
lag behind real time, whether they still run, per-station metrics, what is in force on each
hop) and what they act out during it (an event on a sender's link: a cut, an impairment step, a
rate trace). The emulated rig's radio emulators are one (rig.rigs.emulated.radio_side); the lab's
radios are real and report nothing here (NoRadios): its nodes act out the events they can.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import pyarrow as pa

if TYPE_CHECKING:
    from rig.run.timeline import Planned


class Radios(Protocol):
    hops: list[dict]  # what is in force on each radio hop (the `hops` table); empty: not known

    def acts(self, item: Planned) -> bool:
        """Whether the radio acts this event out (else a node's agent does, where it can)."""

    def cut_lag(self, when: float) -> None:
        """Every radio starts a new lag window at `when` (unix time), just before T0."""

    def flush_lag(self) -> None:
        """The lag up to now, not only up to the last whole second."""

    def wait_lag(self, until: float) -> None:
        """Until every radio has reported its lag up to `until`."""

    def lag(self, since: float, until: float) -> dict[str, dict]:
        """network -> lag statistics over [since, until] (LagStats' fields; NaN as None)."""

    def alive(self) -> dict[str, bool]:
        """network -> whether its radio still runs."""

    def stats_table(self, since: float, until: float) -> pa.Table | None:
        """Per-station radio metrics over [since, until], or None."""

    def schedule(self, items: list[Planned]) -> dict[str, Planned]:
        """The events it acts out, handed over before the first is due: change id -> event."""

    def applied(self, since: float) -> dict[str, float]:
        """change id -> when it took effect (unix time), of those scheduled since `since`."""

    def restore(self) -> None:
        """Every link an event changed back to what the block configured, at once."""

    def link_counters(self, host: str, iface: str) -> dict:
        """Where a sender's agent reads what its link on `iface` lost (the loss-aware policy's
        link measure; nodes/agent/rig_node/linkloss.py)."""


class NoRadios:
    """Radios the rig neither measures nor drives (the physical lab's)."""

    hops: list[dict] = []

    def acts(self, item: Planned) -> bool:
        return False

    def cut_lag(self, when: float) -> None:
        pass

    def flush_lag(self) -> None:
        pass

    def wait_lag(self, until: float) -> None:
        pass

    def lag(self, since: float, until: float) -> dict[str, dict]:
        return {}

    def alive(self) -> dict[str, bool]:
        return {}

    def stats_table(self, since: float, until: float) -> pa.Table | None:
        return None

    def schedule(self, items: list[Planned]) -> dict[str, Planned]:
        return {}

    def applied(self, since: float) -> dict[str, float]:
        return {}

    def restore(self) -> None:
        pass

    def link_counters(self, host: str, iface: str) -> dict:
        return {"qdisc": iface}  # the node impairs what it sends with netem, which counts its drops
