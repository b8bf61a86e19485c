"""Progress of a long campaign on stderr: a live line on a terminal, one line per run in logs."""

from __future__ import annotations

import sys
import time


def _fmt(seconds: float) -> str:
    seconds = int(max(0, seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s"


class Progress:
    def __init__(self, total: int, done: int = 0, stream=sys.stderr):
        self.total, self.done, self.stream = total, done, stream
        self.tty = stream.isatty()
        self._t0 = time.monotonic()
        self._done_here = 0

    def _bar(self) -> str:
        width = 24
        filled = int(width * self.done / self.total) if self.total else width
        eta = ""
        if self._done_here:
            per_run = (time.monotonic() - self._t0) / self._done_here
            eta = f" eta {_fmt(per_run * (self.total - self.done))}"
        return f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}{eta}"

    def note(self, text: str) -> None:
        if self.tty:
            self.stream.write("\r\033[K")
        self.stream.write(text + "\n")
        if self.tty:
            self.stream.write(self._bar())
        self.stream.flush()

    def starting(self, label: str) -> None:
        if self.tty:
            self.stream.write(f"\r\033[K{self._bar()} {label}")
            self.stream.flush()

    def finished(self, label: str, outcome: str, seconds: float) -> None:
        self.done += 1
        self._done_here += 1
        prefix = "" if self.tty else f"[{self.done}/{self.total}] "
        self.note(f"{prefix}{label}: {outcome} ({seconds:.1f} s)")
