"""One campaign's valid runs, read from its directories (or exports) through analysis.load only.

Several directories of one campaign (sessions of the same file) pool: a run is keyed
"<directory index>/<run_id>", since every session has the same run ids. A run counts only when
every row of it in runs.parquet is ok (and its status.json too, where it is read): an invalid
or failed run is never evidence. The studies' tables are computed only when a claim asks for
them (they read the runs' time series).
"""

from __future__ import annotations

from collections import defaultdict
from functools import cached_property
from pathlib import Path

from analysis import stalls
from analysis.load import load_metadata, load_runs, run_outcomes

# Run parameters runs.parquet does not carry: read from the runs' params.json when a claim needs them.
PARAM_ONLY = ("link_rate_bps", "wifi_loss_pct", "lte_loss_pct")


def campaign_name(path: Path, rows: list[dict]) -> str:
    """The campaign's name: metadata.json's, else runs.parquet's campaign column."""
    name = load_metadata(path).get("campaign")
    return str(name or (rows[0].get("campaign") if rows else None) or Path(path).name)


class CampaignData:
    def __init__(self, name: str, dirs: list[Path], runs: list[list[dict]]):
        self.name, self.dirs = name, list(dirs)
        self.pairs: list[dict] = []
        self.recorded = 0
        # Stalls are results (rig.run.watch): never evidence for a claim, but counted per condition.
        self.stalls = stalls.per_condition([{**r, "run_id": f"{i}/{r['run_id']}"} for i, rows in enumerate(runs) for r in rows])
        for i, rows in enumerate(runs):
            bad = {r["run_id"] for r in rows if r.get("status") != "ok"}
            self.recorded += len({r["run_id"] for r in rows})
            self.pairs += [{**r, "key": f"{i}/{r['run_id']}"} for r in rows if r["run_id"] not in bad]
        self.runs: dict[str, dict] = {}
        for r in self.pairs:
            if r["key"] not in self.runs:
                time_run = r.get("volume_bytes") is None
                self.runs[r["key"]] = {**r, "campaign": name, "duration_s": r.get("duration_s") if time_run else None}

    @classmethod
    def read(cls, dirs: list[Path]) -> dict[str, "CampaignData"]:
        """name -> the campaign's data, for campaign directories or exports of any campaigns."""
        by_name: dict[str, list] = defaultdict(list)
        for d in dirs:
            rows = load_runs(d)
            by_name[campaign_name(d, rows)].append((Path(d), rows))
        return {name: cls(name, [d for d, _ in got], [rows for _, rows in got]) for name, got in by_name.items()}

    def add_params(self) -> None:
        """The grid levels (PARAM_ONLY) of each run from its params.json; a run whose status.json
        is not ok leaves."""
        if getattr(self, "_params_read", False):
            return
        self._params_read = True
        for i, d in enumerate(self.dirs):
            for o in run_outcomes(d):
                key = f"{i}/{o['run_id']}"
                if key not in self.runs:
                    continue
                if o.get("status") != "ok":
                    del self.runs[key]
                    continue
                self.runs[key].update({k: o.get(k) for k in PARAM_ONLY})

    def _keyed(self, tables: list[dict[str, list[dict]]]) -> dict[str, list[dict]]:
        out: dict[str, list[dict]] = defaultdict(list)
        for i, t in enumerate(tables):
            for name, rows in t.items():
                for r in rows:
                    key = f"{i}/{r['run_id']}" if "run_id" in r else None
                    if key in self.runs:
                        out[name].append({**r, "key": key})
        return out

    @cached_property
    def study(self) -> dict[str, list[dict]]:
        """The studies' tables (analysis.studies) of the valid runs, rows keyed by run."""
        from analysis.studies import study_tables

        return self._keyed([study_tables(d) for d in self.dirs])
