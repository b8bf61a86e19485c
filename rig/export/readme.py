"""README.md of an export: provenance first, then what each table holds."""

from __future__ import annotations

from collections import Counter


def _provenance(meta: dict) -> list[str]:
    tools = meta.get("tools") or {}
    lines = [
        "## Provenance", "",
        f"- campaign: `{meta.get('campaign')}`, id `{meta.get('campaign_id')}`",
        f"- rig: {meta.get('rig')} (rig version {meta.get('rig_version')}, "
        f"git commit `{meta.get('git_commit')}`)",
        f"- controller host: {meta.get('host')}, kernel {meta.get('kernel')}",
        f"- started at: {meta.get('started_at')}",
        "- tools: " + (", ".join(f"{k} {v}" for k, v in sorted(tools.items())) or "not recorded"),
    ]
    return lines + [""]


def render(meta: dict, campaign_yaml: str, resources: list[dict], statuses: Counter,
           removed: dict[str, list[str]], exported_at: str, exporter: str, stalled: list[dict] = ()) -> str:
    out = [f"# Dataset: campaign {meta.get('campaign')} ({meta.get('campaign_id')})", "",
           f"Exported {exported_at} by {exporter}. Runs: "
           + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())) + ".", ""]
    if stalled:  # a result of the network under test (runs.parquet's status `stalled`)
        out += ["Stalled runs per condition (transfers that made no progress for the stall bound):", ""]
        out += [f"- {c['stalled']} of {c['runs']}: {c['condition']}" for c in stalled] + [""]
    out += _provenance(meta)
    out += ["## Files", "",
            "- `data/*.parquet`: the tables below (Parquet, zstd); `datapackage.json` describes them "
            "as a Frictionless Tabular Data Package (field names, types, descriptions; `format`: "
            "this bundle's format version).",
            "- `campaign.yaml`: the campaign file as given; `plan.json`: every planned run with its "
            "parameters and the seed; `metadata.json`: provenance as recorded by the runner.",
            "- `SHA256SUMS`: checksums of every other file. Check with `rig export --verify DIR` "
            "or `sha256sum -c SHA256SUMS`.", ""]
    for res in resources:
        out += [f"### `{res['path']}` ({res['rows']} rows, {res['bytes']} bytes)", "",
                "| column | type | meaning |", "|---|---|---|"]
        out += [f"| {f['name']} | {f['type']} | {f.get('description', '')} |"
                for f in res["schema"]["fields"]]
        out.append("")
    out += ["Time series tables have one row per sample and a `run_id` column that joins them to "
            "`runs.parquet`. Interface counters are cumulative: a rate is the difference of "
            "consecutive samples of one (run_id, host, interface) divided by their time difference.",
            "", "Loading, e.g. with pyarrow: `pyarrow.parquet.read_table('data/runs.parquet')`; "
            "or `from analysis.load import load_export` in the rig's own Python package.", ""]
    if removed:
        out += ["## Removed secrets", "",
                "Keys with secret names were removed before export (values not shown):", ""]
        out += [f"- {doc}: " + ", ".join(f"`{p}`" for p in paths) for doc, paths in sorted(removed.items())]
        out.append("")
    out += ["## Campaign file", "", "```yaml", campaign_yaml.rstrip(), "```", ""]
    return "\n".join(out)
