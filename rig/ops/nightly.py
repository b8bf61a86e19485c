"""`rig nightly CAMPAIGN_NAME`: one unattended campaign, as systemd's rig-nightly@NAME runs it.

    lock (one nightly at a time: the rig is one shared resource)
    -> `rig campaign run FILE --out RESULTS --resume`, stopped after the maximum runtime
    -> `rig sync` (best effort) -> dated export -> report -> retention of old exports

The campaign runner is called as a subprocess so the nightly depends on its CLI only. The same
command runs by hand. `rig nightly --on-failure NAME` is the OnFailure hook.
"""

from __future__ import annotations

import fcntl
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import click

from rig.campaign.cli import host_cc_problems
from rig.campaign.plan import load_plan
from rig.core import process
from rig.core.errors import InputError, RigError
from rig.rigs.lab import load_lab

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
STAMP = "%Y%m%d-%H%M%S"
STAMP_RE = r"\d{8}-\d{6}"


@dataclass(frozen=True)
class Settings:
    campaigns_dir: Path
    results: Path
    exports: Path
    failures: Path
    lock: Path
    keep: int
    max_runtime_s: float
    rig: str
    runner: str  # the command that runs a campaign; FILE and flags are appended


def _say(text: str) -> None:
    click.echo(f"rig nightly: {text}", err=True)


@contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """Held for the whole nightly; a second nightly (any campaign, timer or by hand) refuses."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "unknown"
            raise RigError(f"{path}: another nightly is running ({holder}); not starting") from None
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()}\n")
        f.flush()
        try:
            yield
        finally:
            f.truncate(0)
            fcntl.flock(f, fcntl.LOCK_UN)


def campaign_file(settings: Settings, name: str) -> Path:
    if not NAME.match(name):
        raise InputError("command line", "CAMPAIGN_NAME", f"{name!r}: letters, digits, '.', '_' and '-' only")
    path = settings.campaigns_dir / f"{name}.yaml"
    if not path.is_file():
        raise InputError(str(path), "-", "no such campaign file")
    return path


class _LastError:
    """Passes the runner's stderr through and keeps its last `error:` line, so that the nightly's
    own failure message (and the OnFailure hook's journal tail) says why the campaign stopped."""

    def __init__(self, stream):
        self.line: str | None = None
        self._thread = threading.Thread(target=self._copy, args=(stream,), daemon=True)
        self._thread.start()

    def _copy(self, stream) -> None:
        out = getattr(sys.stderr, "buffer", None)
        for raw in iter(stream.readline, b""):
            if out is not None:
                out.write(raw)
                out.flush()
            text = raw.decode(errors="replace").strip()
            if text.startswith("error:"):
                self.line = text.removeprefix("error:").strip()

    def wait(self) -> str | None:
        self._thread.join(timeout=10)
        return self.line


def run_with_deadline(argv: list[str], timeout_s: float) -> tuple[int, str | None]:
    """Run argv in its own process group; stop the whole group at the deadline or on our own stop
    (SIGTERM first: the runner records its run and tears the emulated rig down).
    Returns its exit status and its last error line."""
    proc = subprocess.Popen(argv, start_new_session=True, stderr=subprocess.PIPE)
    errors = _LastError(proc.stderr)
    try:
        code = proc.wait(timeout=timeout_s)
        return code, errors.wait()
    except subprocess.TimeoutExpired:
        process.terminate([proc], min(60.0, max(1.0, timeout_s / 10)), group=True)
        raise RigError(f"campaign exceeded the maximum runtime of {timeout_s:.0f} s; stopped") from None
    except BaseException:  # Ctrl-C or SIGTERM from systemd: the runner must not outlive us
        process.terminate([proc], 30.0, group=True)
        raise


def latest_campaign_dir(results: Path, campaign: str) -> Path:
    """The campaign directory the runner just wrote: its runs.parquet is the newest."""
    from rig.store.reader import RUNS_TABLE, CampaignDir

    dirs = [CampaignDir(p.parent) for p in results.glob(f"{campaign}-*/{RUNS_TABLE}")]
    if not dirs:
        raise RigError(f"{results}: the runner left no {campaign}-*/{RUNS_TABLE}")
    return max(dirs, key=lambda d: d.runs_table_path.stat().st_mtime).root


def prune_exports(exports: Path, name: str, keep: int) -> list[Path]:
    """Delete all but the newest `keep` dated exports of this campaign (only complete ones)."""
    pattern = re.compile(rf"^{re.escape(name)}-{STAMP_RE}$")
    dated = sorted(p for p in exports.iterdir() if pattern.match(p.name) and (p / "SHA256SUMS").is_file())
    gone = dated[:-keep] if keep > 0 else dated
    for p in gone:
        shutil.rmtree(p)
    return gone


def run_nightly(settings: Settings, name: str) -> Path:
    """Run the campaign, export and report it; returns the export directory."""

    file = campaign_file(settings, name)
    plan = load_plan(file)  # bad input: one line, before the lock or any directory
    campaign = plan.campaign.name
    if settings.rig != "emulated":
        load_lab(Path(settings.rig))
    problems = host_cc_problems(plan.campaign) if settings.rig == "emulated" else []
    if problems:  # the runner would refuse them after the lock and the results directory
        raise InputError(str(file), *problems[0])
    # imported once the input passed: Parquet, InfluxDB and matplotlib are not needed to refuse it
    from rig.export import export_campaign
    from rig.influx import sink_from_env, sync
    from rig.report.page import write_report

    with exclusive_lock(settings.lock):
        settings.results.mkdir(parents=True, exist_ok=True)
        argv = [*shlex.split(settings.runner), str(file), "--out", str(settings.results), "--resume",
                "--rig", settings.rig]
        _say(f"running {file} (at most {settings.max_runtime_s:.0f} s)")
        code, error = run_with_deadline(argv, settings.max_runtime_s)
        if code != 0:
            # Recorded runs are kept: the next nightly of this campaign resumes it (--resume).
            raise RigError(f"campaign run exited with status {code}" + (f": {error}" if error else ""))
        campaign_dir = latest_campaign_dir(settings.results, campaign)
        sink = sink_from_env()
        if sink is not None:
            result = sync(campaign_dir, sink)
            _say(f"influx: {len(result.written)} runs written" + (f", stopped: {result.error}" if result.error else ""))
        settings.exports.mkdir(parents=True, exist_ok=True)
        export = export_campaign(campaign_dir, settings.exports / f"{name}-{datetime.now(timezone.utc):{STAMP}}")
        _say(f"exported {campaign_dir} to {export}")
        _say(f"report {write_report(campaign_dir)}")
        for old in prune_exports(settings.exports, name, settings.keep):
            _say(f"removed old export {old}")
        return export


def record_failure(settings: Settings, name: str) -> Path:
    """The OnFailure hook: keep the journal's tail beside the results and notify, if configured."""
    settings.failures.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc)
    note = settings.failures / f"{name}-{stamp:{STAMP}}.txt"
    unit = f"rig-nightly@{name}.service"
    journal = "journal not available"
    if shutil.which("journalctl"):
        j = subprocess.run(["journalctl", "-u", unit, "-n", "200", "--no-pager"],
                           capture_output=True, text=True, timeout=60)
        journal = j.stdout or j.stderr
    note.write_text(f"{unit} failed; recorded {stamp.isoformat(timespec='seconds')}\n\n{journal}")
    notify = os.environ.get("RIG_NIGHTLY_NOTIFY")
    if notify:
        env = {**os.environ, "RIG_NIGHTLY_CAMPAIGN": name, "RIG_NIGHTLY_FAILURE": str(note)}
        subprocess.run(notify, shell=True, env=env, timeout=60)
    return note


def _path(envvar: str, default: str, what: str):
    return click.option(f"--{envvar.removeprefix('RIG_NIGHTLY_').lower().replace('_', '-')}",
                        envvar=envvar, default=default, show_default=True, show_envvar=True,
                        type=click.Path(path_type=Path), help=what)


@click.command()
@click.argument("campaign_name")
@_path("RIG_NIGHTLY_CAMPAIGNS", "/etc/rig/campaigns", "where NAME.yaml is")
@_path("RIG_NIGHTLY_RESULTS", "/var/lib/rig/results", "campaign directories (--out of the runner)")
@_path("RIG_NIGHTLY_EXPORTS", "/var/lib/rig/exports", "dated exports NAME-YYYYmmdd-HHMMSS")
@_path("RIG_NIGHTLY_FAILURES", "/var/lib/rig/nightly-failures", "failure notes of --on-failure")
@_path("RIG_NIGHTLY_LOCK", "/run/lock/rig-nightly.lock", "lock file shared by all nightlies")
@click.option("--keep", envvar="RIG_NIGHTLY_KEEP", default=14, show_default=True, show_envvar=True,
              type=click.IntRange(min=1), help="dated exports of this campaign to keep")
@click.option("--max-runtime", envvar="RIG_NIGHTLY_MAX_RUNTIME", default=6 * 3600.0, show_default=True,
              show_envvar=True, type=click.FloatRange(min=1), help="seconds before the campaign is stopped")
@click.option("--rig", "rig_kind", envvar="RIG_NIGHTLY_RIG", default="emulated", show_default=True,
              show_envvar=True, help="emulated, or the inventory of the physical rig")
@click.option("--runner", envvar="RIG_NIGHTLY_RUNNER", default=f"{sys.executable} -m rig campaign run",
              show_envvar=True, help="command that runs a campaign file")
@click.option("--on-failure", is_flag=True, help="record a failed nightly (the OnFailure hook)")
def nightly(campaign_name: str, campaigns: Path, results: Path, exports: Path, failures: Path, lock: Path,
            keep: int, max_runtime: float, rig_kind: str, runner: str, on_failure: bool) -> None:
    """Run campaign CAMPAIGN_NAME unattended: lock, run, sync, dated export, report, retention."""
    settings = Settings(campaigns, results, exports, failures, lock, keep, max_runtime, rig_kind, runner)
    if on_failure:
        if not NAME.match(campaign_name):  # it names the failure note
            raise InputError("command line", "CAMPAIGN_NAME", f"{campaign_name!r}: letters, digits, '.', '_' and '-' only")
        click.echo(f"failure recorded in {record_failure(settings, campaign_name)}")
        return
    click.echo(f"nightly {campaign_name} done: {run_nightly(settings, campaign_name)}")
