"""The findings that apply to one campaign directory (a claim names its campaign or the one it
is the twin of), for the report's section and the export's table."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from rig.findings.data import CampaignData
from rig.findings.evaluate import NOT_EVALUATED, Verdict, evaluate
from rig.findings.model import load_findings, shipped
from rig.findings.render import arrow_table, report_rows


def campaign_verdicts(campaign_dir: Path) -> list[Verdict]:
    """The verdicts of every shipped claim on this campaign's valid runs ([] when none names it)."""
    data = CampaignData.read([Path(campaign_dir)])
    return [v for v in evaluate([(str(f), load_findings(f)) for f in shipped()], data) if v.verdict != NOT_EVALUATED]


def report_section(campaign_dir: Path) -> dict | None:
    verdicts = campaign_verdicts(campaign_dir)
    if not verdicts:
        return None
    columns, rows = report_rows(verdicts)
    studies = sorted({v.study for v in verdicts})
    return {"columns": columns, "rows": rows, "studies": ", ".join(studies),
            "files": ", ".join(f"campaigns/findings/seed{s}.yaml" for s in studies),
            "counts": {k: sum(v.verdict == k for v in verdicts) for k in ("held", "not held", "inconclusive")}}


def export_table(campaign_dir: Path) -> pa.Table | None:
    verdicts = campaign_verdicts(campaign_dir)
    return arrow_table(verdicts) if verdicts else None
