"""The rig's transfer (rig_transfer.py) run in a fork of the node agent instead of a new Python.

A new interpreter costs 0.1-0.2 s of CPU before the transfer can start (0.5 s and more on a
loaded host or a slow board), twice per pair and run; the agent has the transfer's code imported
once, and a fork of it starts in about 2 ms. The child is what a started program would be: a
session of its own (the agent stops it the same way), stdout and stderr to pipes, nothing else
of the agent's open, and the exit status of the transfer's main(). Its name (comm) is `rig-sink`
or `rig-source`, so that it can be told apart from the agent whose command line it shares.
"""

from __future__ import annotations

import gc
import os
import selectors
import sys
import threading
import traceback

import rig_transfer  # once, when the agent starts: what every new interpreter imported again

rig_transfer.parser()  # its command line too (argparse's help formatter imports shutil and more)

NAMES = ("rig-sink", "rig-source")
# One fork at a time: a child must not inherit the write end of another child's pipe (the agent
# would then read that child's output to its end only when both have exited).
_LOCK = threading.Lock()


class Child:
    """A forked transfer: its pid and its output, read to the end by communicate()."""

    def __init__(self, pid: int, out_fd: int, err_fd: int, in_fd: int | None = None):
        self.pid, self._fds = pid, {out_fd: bytearray(), err_fd: bytearray()}
        self._out, self._err = out_fd, err_fd
        self._in = in_fd  # a held source's stdin: its start time is written there
        self._in_lock = threading.Lock()  # written by a request, closed by communicate(): once

    def _take_stdin(self) -> int | None:
        """The stdin pipe's write end, once: whoever takes it closes it."""
        with self._in_lock:
            fd, self._in = self._in, None
        return fd

    def write_line(self, text: str) -> None:
        """One line to the child's stdin, which is then closed (a child that has exited ignores it)."""
        fd = self._take_stdin()
        if fd is None:
            return
        try:
            os.write(fd, (text + "\n").encode())
        except BrokenPipeError:
            pass
        finally:
            os.close(fd)

    def communicate(self) -> tuple[bytes, bytes, int]:
        """(stdout, stderr, exit status) once the child has exited; -N if a signal N ended it."""
        with selectors.DefaultSelector() as sel:
            for fd in self._fds:
                sel.register(fd, selectors.EVENT_READ)
            open_fds = len(self._fds)
            while open_fds:
                for key, _ in sel.select():
                    chunk = os.read(key.fd, 65536)
                    if chunk:
                        self._fds[key.fd] += chunk
                    else:
                        sel.unregister(key.fd)
                        os.close(key.fd)
                        open_fds -= 1
        _, status = os.waitpid(self.pid, 0)
        if (fd := self._take_stdin()) is not None:
            os.close(fd)
        return bytes(self._fds[self._out]), bytes(self._fds[self._err]), os.waitstatus_to_exitcode(status)


def start(args: list[str], stdin: bool = False) -> Child:
    """Fork a child that runs rig_transfer.main(args) (args as after `rig_transfer.py`); with
    `stdin`, its stdin is a pipe the agent writes to (Child.write_line), else /dev/null."""
    with _LOCK:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        in_r, in_w = os.pipe() if stdin else (None, None)
        pid = os.fork()
        if pid == 0:
            _child(rig_transfer.main, args, out_w, err_w, in_r)  # does not return
        os.close(out_w)
        os.close(err_w)
        if in_r is not None:
            os.close(in_r)
    return Child(pid, out_r, err_r, in_w)


def _child(main, args: list[str], out_w: int, err_w: int, in_r: int | None = None) -> None:
    def transfer() -> int:
        # The agent's objects stay as they are: never collected here (their descriptors are
        # closed below, and closing one again could close a socket of the transfer's).
        gc.freeze()
        os.setsid()
        os.dup2(os.open(os.devnull, os.O_RDONLY) if in_r is None else in_r, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # the agent's requests, other programs' pipes
        sys.stdin = open(0, "r", closefd=False)
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)
        with open("/proc/self/comm", "w") as f:
            f.write(NAMES[1] if args[:1] == ["source"] else NAMES[0])
        return main(args)

    run_forked(transfer)


def run_forked(body) -> None:
    """A forked child's whole life, not returning: body's exit status (a SystemExit's code:
    argparse's usage error 2, SIGTERM's unwinding 143; 1 for anything else escaping, printed), its
    output flushed, then os._exit: it must never return into its parent's code."""
    rc = 1
    try:
        rc = body()
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - whatever happens, the child must not return into its parent
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(rc if isinstance(rc, int) else 1)
