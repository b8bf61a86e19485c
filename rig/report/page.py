"""`rig report`: CAMPAIGN_DIR/report/index.html with its figures as PNG files beside it (the
studies' sections come from rig.report.studies).

The page is rebuilt as a whole in a temporary directory and swapped in, so a reader never
sees a report half old and half new.
"""

from __future__ import annotations

import shutil
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import jinja2
import matplotlib.pyplot as plt

from analysis.factors import FACTORS, LABELS, fmt, varied
from analysis.joins import COLUMNS as JOIN_COLUMNS, join_rows
from analysis.figures import goodput_figure, measured, path_mbps, per_run_goodput, share_figure
from analysis.load import load_metadata, load_runs, run_outcomes
from analysis import stalls
from analysis.stats import mean_ci
from rig.core.errors import InputError
from rig.store.columns import STATUSES
from rig.store.reader import PLAN, RUNS_TABLE, CampaignDir
from rig.findings.applied import report_section
from rig.report.studies import study_sections

TEMPLATE = jinja2.Environment(autoescape=True).from_string("""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>Campaign {{ meta.campaign }} ({{ meta.campaign_id }})</title>
<style>
 body { font-family: sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
 table { border-collapse: collapse; margin: 1em 0; font-size: 90%; }
 th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; }
 th { background: #eee; } td.num { text-align: right; }
 img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }
 .study { display: flex; gap: 1em; align-items: flex-start; } .study img { max-width: 62%; flex: none; }
 .bad { color: #a00; } dt { font-weight: bold; float: left; width: 9em; } dd { margin-left: 10em; }
</style></head><body>
<h1>Campaign {{ meta.campaign }} <small>({{ meta.campaign_id }})</small></h1>
<p>{{ counts.recorded }} of {{ counts.planned }} planned runs recorded:
 {{ counts.ok }} ok, <span class="bad">{{ counts.failed }} failed, {{ counts.stalled }} stalled, {{ counts.invalid }} invalid</span>.
{% if counts.lag_retries %} {{ counts.lag_retries }} attempts were run again because the emulator
 lagged (kept in <code>attempts/</code>, not plotted).{% endif %} Report written {{ written_at }}.</p>
<dl>
 <dt>rig</dt><dd>{{ meta.rig }} (version {{ meta.rig_version }}, commit {{ meta.git_commit }})</dd>
 <dt>host, kernel</dt><dd>{{ meta.host }}, {{ meta.kernel }}</dd>
 <dt>tools</dt><dd>{% for k, v in (meta.tools or {}).items() %}{{ k }} {{ v }}{% if not loop.last %}, {% endif %}{% endfor %}</dd>
 <dt>started</dt><dd>{{ meta.started_at }}</dd>
</dl>
{% if include_invalid %}<p class="bad" id="invalid-warning"><b>Figures and table include INVALID runs</b>
 (completed, but failed validation); do not use them for conclusions.</p>{% endif %}
{% if not figures %}<p class="bad">No successful runs yet: no figures{% if counts.invalid %}
 (<code>rig report --include-invalid</code> plots the invalid ones){% endif %}.</p>{% endif %}
{% for f in figures %}
<h2 id="factor-{{ f.factor }}">{{ f.label }}</h2>
<h3>LTE/WiFi throughput share per congestion control</h3>
<img class="figure share" src="{{ f.share }}" alt="LTE/WiFi throughput share vs {{ f.label }}">
<h3>Goodput with 95 % confidence intervals over repetitions</h3>
<img class="figure goodput" src="{{ f.goodput }}" alt="goodput vs {{ f.label }}">
{% endfor %}
{% for s in studies %}
<h2 id="{{ s.id }}">{{ s.title }}</h2>
<p>{{ s.text }}</p>
{% for i in s["items"] %}<div class="study">
<img class="figure study-figure {{ i.kind }}" src="{{ i.src }}" alt="{{ i.alt }}">
{% if i.rows %}<table id="table-{{ i.kind }}"><tr>{% for c in i.columns %}<th>{{ c }}</th>{% endfor %}</tr>
{% for row in i.rows %}<tr>{% for v in row %}<td>{{ v }}</td>{% endfor %}</tr>{% endfor %}
</table>{% endif %}
</div>{% endfor %}
{% endfor %}
{% if findings %}
<h2 id="findings">Findings: the paper's claims on this campaign</h2>
<p>Each claim of {{ findings.files }} that names this campaign, checked on its valid runs only
(never the invalid ones, whatever the figures above show): {{ findings.counts.held }} held,
{{ findings.counts["not held"] }} not held, {{ findings.counts.inconclusive }} inconclusive. Effects with
95 % bootstrap intervals over runs; n = valid runs per condition (<code>rig findings</code>, docs/findings.md).</p>
<table id="findings-table"><tr>{% for c in findings.columns %}<th>{{ c }}</th>{% endfor %}</tr>
{% for row in findings.rows %}<tr>{% for v in row %}<td>{{ v }}</td>{% endfor %}</tr>{% endfor %}
</table>
{% endif %}
{% if joins %}
<h2 id="joins">Subflows: when each path joined</h2>
<p>Dual-homed connections of the runs shown: seconds from a connection's first SYN until its
subflow on the path was established (the kernel path manager's event).</p>
<table id="join-table"><tr>{% for c in join_columns %}<th>{{ c }}</th>{% endfor %}</tr>
{% for row in joins %}<tr>{% for v in row %}<td{% if loop.index > 2 %} class="num"{% endif %}>{{ v }}</td>{% endfor %}</tr>{% endfor %}
</table>
{% endif %}
{% if summary %}
<h2 id="summary">Per factor combination</h2>
<table id="summary-table"><tr>{% for c in summary_columns %}<th>{{ c }}</th>{% endfor %}</tr>
{% for row in summary %}<tr>{% for v in row %}<td{% if loop.index > summary_columns|length - 4 %} class="num"{% endif %}>{{ v }}</td>{% endfor %}</tr>{% endfor %}
</table>
{% endif %}
{% if stalls %}<h2 id="stalls">Stalls per condition</h2>
<p>Transfers that made no progress for the stall bound (docs/campaigns.md, "Stalled transfers"):
 a result of the network under test; each run's evidence is in its <code>logs/stall-*</code>.</p>
<table><tr><th>condition</th><th>stalled</th><th>runs</th></tr>
{% for c in stalls %}<tr><td>{{ c.condition }}</td><td class="bad">{{ c.stalled }}</td><td>{{ c.runs }}</td></tr>{% endfor %}
</table>{% endif %}
<h2 id="problems">Invalid, stalled and failed runs</h2>
{% if problems %}
<table id="problem-table"><tr><th>run</th><th>status</th><th>reason</th><th>parameters</th></tr>
{% for p in problems %}<tr><td>{{ p.run_id }}</td><td class="bad">{{ p.status }}</td><td>{{ p.reason or "" }}</td><td>{{ p.params }}</td></tr>{% endfor %}
</table>
{% else %}<p>None.</p>{% endif %}
</body></html>
""")

PARAM_KEYS = ("setup", "homing", "cc", "connections", "volume_bytes", "rcvbuf_bytes", "wifi_standard", "repetition")


def _summary(rows: list[dict], factors: list[str]) -> tuple[list[str], list[list[str]]]:
    """Mean goodput with CI and LTE share per combination of the varied factors and cc."""
    keys = factors + ["cc"]
    columns = [LABELS.get(k, k) for k in keys] + ["runs", "goodput Mbit/s", "95 % CI", "LTE share"]
    combos: dict[tuple, list[dict]] = {}
    for r in measured(rows):
        combos.setdefault(tuple(r.get(k) for k in keys), []).append(r)
    out = []
    for combo in sorted(combos, key=lambda c: tuple(str(v) for v in c)):
        cell = combos[combo]
        ci = mean_ci(list(per_run_goodput(cell).values()))
        lte = sum(path_mbps(r, "bytes_lte") for r in cell)
        total = lte + sum(path_mbps(r, "bytes_wifi") for r in cell)
        half = "-" if ci.n < 2 else f"± {ci.half_width:.2f}"
        out.append([fmt(k, v) for k, v in zip(keys, combo)]
                   + [str(ci.n), f"{ci.mean:.2f}", half, f"{lte / total:.0%}" if total else "-"])
    return columns, out


def write_report(campaign_dir: Path, include_invalid: bool = False) -> Path:
    """Figures from the ok runs; with include_invalid also from runs that completed but failed
    validation (e.g. the emulator lagged), marked as such on the page."""
    campaign_dir = Path(campaign_dir)
    campaign = CampaignDir(campaign_dir)
    if not campaign.has(RUNS_TABLE):
        raise InputError(str(campaign_dir), RUNS_TABLE, "missing: not a campaign directory with recorded runs")
    all_rows = load_runs(campaign_dir)
    plotted = {"ok", "invalid"} if include_invalid else {"ok"}
    rows = [r for r in all_rows if r.get("status") in plotted]
    outcomes = run_outcomes(campaign_dir)
    planned = len(campaign.plan().get("runs", [])) if campaign.has(PLAN) else len(outcomes)
    status = Counter(o["status"] for o in outcomes)

    tmp = campaign_dir / ".report.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    figures = []
    factors = varied(rows) or ["setup"]
    if measured(rows):
        for factor in factors:
            entry = {"factor": factor, "label": LABELS.get(factor, factor).capitalize()}
            for kind, draw in (("share", share_figure), ("goodput", goodput_figure)):
                fig = draw(rows, factor)
                entry[kind] = f"{kind}-{factor}.png"
                fig.savefig(tmp / entry[kind], dpi=100)
                plt.close(fig)
            figures.append(entry)
    studies = study_sections(campaign_dir, plotted, tmp) if rows else []
    columns, summary = _summary(rows, [f for f in FACTORS if f in varied(rows)])
    problems = [{"run_id": o["run_id"], "status": o["status"], "reason": o["reason"],
                 "params": ", ".join(f"{k}={o[k]}" for k in PARAM_KEYS if o.get(k) is not None)}
                for o in outcomes if o["status"] != "ok"]
    html = TEMPLATE.render(stalls=stalls.per_condition(outcomes),
        meta=load_metadata(campaign_dir), figures=figures, studies=studies, summary=summary, summary_columns=columns,
        joins=join_rows(campaign_dir, rows), join_columns=JOIN_COLUMNS, findings=report_section(campaign_dir),
        problems=problems, include_invalid=include_invalid, written_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        counts={"planned": planned, "recorded": len(outcomes), "ok": status["ok"],
                **{s: status[s] for s in STATUSES},
                "lag_retries": sum(o["lag_retries"] for o in outcomes)})
    (tmp / "index.html").write_text(html)
    out = campaign_dir / "report"
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out / "index.html"
