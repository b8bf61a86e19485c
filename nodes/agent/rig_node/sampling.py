"""What a node measures during a run: its interfaces' byte counters at a fixed rate, its TCP
sockets (`ss`, a TCP probe that needs no tracefs), and its kernel's MPTCP/TCP counters."""

from __future__ import annotations

import subprocess
import threading
import time


class Sampler:
    """Reads /sys/class/net/<if>/statistics at `hz` in a thread, and every 1/ss_hz seconds the
    established sockets' cwnd/RTT/CC from `ss -tinH`."""

    def __init__(self, ifaces: list[str], hz: float, ss_hz: float = 0.0):
        self.ifaces, self.period = ifaces, 1.0 / hz
        self.ss_period = 1.0 / ss_hz if ss_hz > 0 else None
        self.rows: list[list] = []
        self.ss: list[list] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    @staticmethod
    def _read(path: str) -> int:
        try:
            with open(path) as f:
                return int(f.read())
        except OSError:
            return -1  # interface absent or down-and-gone: recorded, not fatal

    def _once(self) -> None:
        t = time.time()
        for i in self.ifaces:
            base = f"/sys/class/net/{i}/statistics/"
            self.rows.append([t, i, self._read(base + "tx_bytes"), self._read(base + "rx_bytes")])

    def _ss(self) -> None:
        try:
            out = subprocess.run(["ss", "-tinH", "state", "established"], capture_output=True, text=True, timeout=5).stdout
        except (OSError, subprocess.TimeoutExpired):
            return
        self.ss.append([time.time(), out])

    def _loop(self) -> None:
        next_t = time.monotonic()
        # The sockets a period after the start, not at it: a run's sampling starts just before
        # its T0, when its sockets do not exist yet and starting `ss` would only take the CPU.
        next_ss = next_t + (self.ss_period or 0.0)
        while not self._stop.is_set():
            self._once()
            if self.ss_period and time.monotonic() >= next_ss:
                self._ss()
                next_ss += self.ss_period
            next_t += self.period
            self._stop.wait(max(0.0, next_t - time.monotonic()))

    def stop(self) -> list[list]:
        self._stop.set()
        self._thread.join()
        self._once()  # a final sample so the counters' end is exact
        return self.rows


def read_mib() -> dict[str, int]:
    """MPTcpExt, TcpExt and Tcp counters of this node's network namespace (what `nstat` shows)."""
    out: dict[str, int] = {}
    for path in ("/proc/net/netstat", "/proc/net/snmp"):
        try:
            with open(path) as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        for names, values in zip(lines[::2], lines[1::2]):
            prefix, *keys = names.split()
            _, *vals = values.split()
            if prefix.rstrip(":") in ("MPTcpExt", "TcpExt", "Tcp"):
                out.update({prefix.rstrip(":") + k: int(v) for k, v in zip(keys, vals) if v.lstrip("-").isdigit()})
    return out


def listening(port: int) -> bool:
    """Whether a TCP socket listens on `port` (an MPTCP listener shows as its TCP one), from the
    namespace's socket tables: no `ss` to start (tens of ms on a loaded host, every run)."""
    local = f":{port:04X}"
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f, None)  # the header
                for line in f:
                    fields = line.split()
                    if len(fields) > 3 and fields[1].endswith(local) and fields[3] == "0A":  # TCP_LISTEN
                        return True
        except OSError:  # no IPv6 in this kernel
            continue
    return False
