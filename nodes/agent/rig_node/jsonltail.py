"""A JSON-lines log read as it grows: each read parses only what was appended since the last.

The radio emulators append a row per second (lag) and per station and second (stats) for as long
as a block runs; every run reads its own window of them. Reading the whole file each time made a
run's collection grow with the campaign's length (half an hour: thousands of rows per network,
parsed again after every run). The controller reads them (rig.rigs.emulated.radio), and so does
a sender's loss-aware policy during its run (rig_node.linkloss). Standard library only.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


class JsonlTail:
    """The rows of a JSON-lines log, parsed once each. A log written anew (another inode, or
    shorter than what was read: the emulator restarted) is read from its start; a last line
    not yet ended with a newline is left for the next read (one cut short by a kill never
    ends, and is never parsed). `from_end`: what the log holds when this is made is not read
    (a line then being written is cut, and not parsed either)."""

    def __init__(self, path: Path, keep_s: float = 120.0, from_end: bool = False):
        self.path = Path(path)
        self.keep_s = keep_s  # rows older than this before a window asked for are let go
        self._inode: int | None = None
        self._offset = 0
        self._rows: list[dict] = []
        if from_end:
            try:
                st = os.stat(self.path)
                self._inode, self._offset = st.st_ino, st.st_size
            except FileNotFoundError:
                pass

    def rows(self) -> list[dict]:
        """Every row kept so far, the new ones read."""
        new = self.new_rows()
        self._rows.extend(new)
        return self._rows

    def new_rows(self) -> list[dict]:
        """The rows appended since the last read (none kept by this call)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._inode, self._offset, self._rows = None, 0, []
            return []
        if st.st_ino != self._inode or st.st_size < self._offset:
            self._inode, self._offset, self._rows = st.st_ino, 0, []
        new = []
        if st.st_size > self._offset:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read(st.st_size - self._offset)
            end = data.rfind(b"\n") + 1
            self._offset += end
            for line in data[:end].splitlines():
                try:
                    new.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
        return new

    def since(self, t: float) -> list[dict]:
        """The rows (new ones read), after letting go of those older than keep_s before t: the
        windows asked for move forward with the runs."""
        rows = self.rows()
        if rows and rows[0].get("t", t) < t - self.keep_s:
            self._rows = rows = [r for r in rows if r.get("t", t) >= t - self.keep_s]
        return rows
