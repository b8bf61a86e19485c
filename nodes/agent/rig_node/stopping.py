"""A transfer the agent stops (SIGTERM: a run ended early, or at its timeout) unwinds and still
prints its report, marked `stopped`: what its receiver read and its sender sampled until then is
the run's, kept as a failed run's (the runner's rig.run.watch stops every node's program when a
part of the run is lost)."""

from __future__ import annotations

import os
import select
import signal
import threading

STOPPED_RC = 143  # 128 + SIGTERM, as a shell reports a program SIGTERM ended
STOPPED_ERROR = "stopped before its end"


class Stopped(BaseException):
    """Raised in the main thread by SIGTERM; a BaseException, so no `except Exception` of the
    transfer's own swallows it."""


def _raise(signum, frame) -> None:
    raise Stopped()


_woken: int | None = None  # read end of the pipe the interpreter writes a byte to on a signal


def stop_on_sigterm() -> None:
    global _woken
    signal.signal(signal.SIGTERM, _raise)
    if _woken is None:
        _woken, w = os.pipe()
        os.set_blocking(w, False)
        signal.set_wakeup_fd(w, warn_on_full_buffer=False)


def wait_readable(fd: int) -> None:
    """Until `fd` has something to read, or SIGTERM came (its handler then raises Stopped here).
    A blocking read alone misses a SIGTERM that comes after the interpreter last looked for one
    and before the read begins: the read then sleeps on. The byte the signal writes to the wakeup
    pipe waits for this select, whenever it came."""
    readable = [fd] if _woken is None else [fd, _woken]
    while fd not in select.select(readable, [], [])[0]:
        os.read(_woken, 512)  # another signal's byte: look again


def start_thread(target, *args) -> threading.Thread:
    """A daemon thread running target(*args), started with SIGTERM blocked in it (a thread
    inherits its creator's signal mask). The kernel gives a process's signal to any one of its
    threads that does not block it, and Python runs the handler in the main thread only: taken by
    another thread, SIGTERM would only be noted, and a main thread asleep in a read or a wait would
    sleep on until the agent kills it, with no report. Every thread of a transfer starts here."""
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        thread = threading.Thread(target=target, args=args, daemon=True)
        thread.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # one that came meanwhile is the main thread's now
    return thread
