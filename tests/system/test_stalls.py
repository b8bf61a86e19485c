"""A stalled transfer costs one run, promptly, at the default limits: real MPTCP on the emulated
rig, both of a dual-homed sender's paths losing every packet from 1 s into each long run (an
impairment event of 100 % loss on WiFi and LTE, so no byte can arrive). The run is recorded
`stalled` within seconds (not at the 300 s run timeout), with each end's evidence in its logs/,
never run again by --resume; the short runs, which end before the event, are ok, also right
after a stalled one (nothing of the stalled connection survives into them)."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from fixtures.cli import REPO, run_rig
from rig.campaign.plan import expand
from rig.model.campaign import load_campaign
from rig.store.writer import CampaignStore

pytestmark = pytest.mark.emulated

CAMPAIGN = """
name: stalls
setups: [I]
pairs: 1
repetitions: 2
seed: 3
factors:
  volume: [1MB, 400MB]
  homing: [dual]
events:
  - {at_s: 1, path: wifi, loss_pct: 100}
  - {at_s: 1, path: lte, loss_pct: 100}
limits:
  max_lag_p99_ms: 200
"""


def test_a_transfer_that_cannot_progress_is_recorded_stalled_and_the_next_run_is_unaffected(tmp_path, emulator,
                                                                                             rig_prefix):
    f = tmp_path / "stalls.yaml"
    f.write_text(CAMPAIGN)
    out = tmp_path / "results"
    run = [sys.executable, "-m", "rig", "campaign", "run", str(f), "--out", str(out), "--prefix", rig_prefix, "--keep-up"]
    first = subprocess.run(run, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    assert "2 ok, 0 invalid, 2 stalled, 0 failed" in first.stdout, first.stdout + first.stderr
    [root] = [d for d in out.iterdir() if not d.name.startswith(".")]
    rows = pq.read_table(root / "runs.parquet").to_pylist()
    order = []
    for row in rows:
        status = json.loads((root / "runs" / row["run_id"] / "status.json").read_text())
        order.append((status["started_at"], row["run_id"], row["status"], row["reason"]))
        big = row["volume_bytes"] > 10**8
        assert row["status"] == ("stalled" if big else "ok"), row
        if big:
            assert status["failure"] == "stalled", status
            assert row["reason"].startswith("stalled: the sink on r1's connections received nothing for 5.0 s"), row
            logs = root / "runs" / row["run_id"] / "logs"
            for host in ("s1", "r1"):
                assert "tcp-ulp-mptcp" in (logs / f"stall-{host}.ss").read_text()  # its subflows, as ss showed them
                evidence = json.loads((logs / f"stall-{host}.json").read_text())
                assert "MPTcpExtMPCapableSYNACKRX" in evidence["mib"] or "MPTcpExtMPCapableSYNRX" in evidence["mib"]
                [program] = evidence["programs"].values()
                assert program["tasks"], evidence["programs"]  # each thread's state and wait channel
    order.sort()
    after_a_stall = [o for before, o in zip(order, order[1:]) if before[2] == "stalled"]
    assert after_a_stall and all(o[2] == "ok" for o in after_a_stall if o[3] is None or "stalled" not in o[3]), order
    # The last run stalled (seed 3's order): none of its sockets is left on either end, in any
    # state (a sender's unsent data would keep its subflows retransmitting for minutes).
    assert order[-1][2] == "stalled", order
    for host in ("s1", "r1"):
        left = subprocess.run(["ip", "netns", "exec", f"{rig_prefix}-{host}", "ss", "-Htan", "(", "sport", "=", ":5301",
                               "or", "dport", "=", ":5301", "or", "sport", "=", ":5302", "or", "dport", "=", ":5302", ")"],
                              capture_output=True, text=True, check=True).stdout
        assert [line for line in left.splitlines() if not line.startswith("TIME-WAIT")] == [], left

    # A stall is the network's result, not the rig's fault: --resume finds nothing to run again.
    assert CampaignStore.find_resumable(out, expand(load_campaign(f), str(f))) is None
    # ... and counted per condition by the report, the export and the findings.
    run_rig("report", str(root), check=True)
    assert '<h2 id="stalls">' in (root / "report" / "index.html").read_text()
    run_rig("export", str(root), "--to", str(tmp_path / "export"), check=True)
    assert "- 2 of 2: cc=cubic" in (tmp_path / "export" / "README.md").read_text()
    found = run_rig("findings", str(root), check=True)
    assert "stalls: 2 of 2 runs stalled: cc=cubic" in found.stdout, found.stdout
