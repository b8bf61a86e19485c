"""The embedded InfluxDB for the demo and the tests: Debian's influxd 1.x on loopback.

Everything lives under one state directory (config, data, pid file, log), so several instances
(the demo's, each test's) run side by side without touching /etc/influxdb or /var/lib/influxdb.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

from rig.core import process
from rig.core.errors import RigError

DEFAULT_STATE_DIR = Path("/var/lib/rig/influxdb")
DEFAULT_PORT = 8086
DEFAULT_DB = "rig"
# Go's garbage collector took ~15 % of influxd's CPU during ingest at the default GOGC=100; at
# 200 it runs half as often (influxd ~7-10 % less CPU per point, ~40 % more peak memory).
# A GOGC in the environment wins.
GOGC = "200"

CONFIG_TEMPLATE = """\
# Written by `rig influx start`; rewritten on every start.
reporting-disabled = true
bind-address = "127.0.0.1:{rpc_port}"

[meta]
  dir = "{state}/meta"

[data]
  dir = "{state}/data"
  wal-dir = "{state}/wal"
  query-log-enabled = false

[monitor]
  store-enabled = false

[http]
  bind-address = "127.0.0.1:{port}"
  auth-enabled = false
  log-enabled = false
  pprof-enabled = false

[logging]
  level = "warn"
  suppress-logo = true
"""


@dataclass(frozen=True)
class Server:
    state_dir: Path
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid_file(self) -> Path:
        return self.state_dir / "influxd.pid"

    @property
    def log_file(self) -> Path:
        return self.state_dir / "influxd.log"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ping(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/ping", timeout=1) as resp:
            return resp.status == 204
    except (urllib.error.URLError, OSError):
        return False


def _pid(server: Server) -> int | None:
    """The pid in the pid file if that process is still our influxd (pids get reused)."""
    try:
        pid = int(server.pid_file.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    ours = b"influxd" in cmdline and str(server.state_dir).encode() in cmdline
    return pid if ours and process.running(pid) else None


def status(server: Server) -> dict:
    pid = _pid(server)
    return {"running": pid is not None, "pid": pid, "url": server.url,
            "responding": pid is not None and _ping(server.url)}


def create_database(url: str, db: str) -> None:
    body = urlencode({"q": f'CREATE DATABASE "{db}"'}).encode()
    with urllib.request.urlopen(urllib.request.Request(url + "/query", data=body), timeout=10):
        pass


def start(server: Server, db: str = DEFAULT_DB, timeout_s: float = 30.0) -> int:
    """Start influxd (if it is not running) and create `db`; returns the pid."""
    binary = shutil.which("influxd")
    if binary is None:
        raise RigError("influxd not found: apt-get install influxdb")
    pid = _pid(server)
    if pid is None:
        if _ping(server.url):
            raise RigError(f"port {server.port} is taken by another server; choose --port")
        server.state_dir.mkdir(parents=True, exist_ok=True)
        config = server.state_dir / "influxd.conf"
        config.write_text(CONFIG_TEMPLATE.format(state=server.state_dir, port=server.port,
                                                 rpc_port=free_port()))
        with open(server.log_file, "ab") as log:
            proc = subprocess.Popen([binary, "-config", str(config), "-pidfile", str(server.pid_file)],
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                    env={"GOGC": GOGC, **os.environ},
                                    start_new_session=True)  # outlives this command
        pid = proc.pid
        deadline = time.monotonic() + timeout_s
        while not _ping(server.url):
            if proc.poll() is not None:
                raise RigError(f"influxd exited with status {proc.returncode}, see {server.log_file}")
            if time.monotonic() > deadline:
                proc.kill()
                raise RigError(f"influxd did not answer within {timeout_s:.0f} s, see {server.log_file}")
            time.sleep(0.1)
        server.pid_file.write_text(f"{pid}\n")
    create_database(server.url, db)
    return pid


def stop(server: Server, timeout_s: float = 15.0) -> bool:
    """Stop influxd; False if it was not running."""
    pid = _pid(server)
    if pid is None:
        return False
    process.terminate([pid], timeout_s)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)  # reap it when it is our own child (tests)
    server.pid_file.unlink(missing_ok=True)
    return True


@contextlib.contextmanager
def running(state_dir: Path, port: int | None = None, db: str = DEFAULT_DB) -> Iterator[Server]:
    """An influxd for the duration of a block (tests): started, and stopped also on failure."""
    server = Server(Path(state_dir), port or free_port())
    try:
        start(server, db)
        yield server
    finally:
        stop(server)
