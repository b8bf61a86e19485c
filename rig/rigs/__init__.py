"""The backends a campaign runs on: the emulated rig (rig.rigs.emulated) and the physical lab
(rig.rigs.lab), each a Backend (rig.rigs.backends builds them). The campaign loop talks to the
protocol only; a run is the same code on both (rig.run)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rig.model.block import BlockSettings
    from rig.model.campaign import Campaign
    from rig.run.execute import RunContext, RunSettings


class Backend(Protocol):
    name: str  # recorded in the campaign's metadata: "emulated" or the lab's inventory
    restore_delays_s: tuple[float, ...]  # the waits before each try to restore a lost component

    def check(self, campaign: Campaign, source: str) -> None:
        """Whether the campaign can run here (InputError naming `source` and the field if not)."""

    def block(self, settings: BlockSettings, run_settings: RunSettings) -> RunContext:
        """The rig built (or re-built) for a block: radios, agents, every node configured."""

    def lost(self) -> list[str]:
        """The components lost since the block began (an agent, a radio emulator), by name."""

    def restore(self, settings: BlockSettings, run_settings: RunSettings) -> RunContext:
        """The block afresh after a lost component."""

    def close(self) -> None:
        """Everything the backend started, stopped."""
