"""Self-contained HTML pages for a run report and for a comparison (no external assets)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import jinja2

from .store import atomic_write_bytes

__all__ = ["compare_html", "report_html", "write_html"]

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2rem;max-width:72rem;color:#222}
h1{font-size:1.4rem}h2{font-size:1.15rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:right}
th{background:#f4f4f4}td.l,th.l{text-align:left}
.v-regression,.v-blocked{color:#fff;background:#b00020}.v-improvement{color:#fff;background:#1b5e20}
.v-inconclusive,.v-insufficient_evidence{background:#ffe082}.v-equivalent_within_threshold,.v-significant_below_threshold,.v-pass{background:#c8e6c9}
.badge{padding:.1rem .5rem;border-radius:.3rem;font-weight:600}.muted{color:#666}
"""

_ENV = jinja2.Environment(
    autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True
)


def _num(v: Any, digits: int = 4, signed: bool = False) -> str:
    if v is None:
        return "N/A"
    return f"{v:+.{digits}f}" if signed else f"{v:.{digits}f}"


_ENV.filters["num"] = _num

_REPORT = _ENV.from_string(
    """<!doctype html><html><head><meta charset="utf-8"><title>rolleval report {{ r.run_id }}</title>
<style>{{ style }}</style></head><body>
<h1>rolleval report</h1>
<p class="muted">run {{ r.run_id }} · model {{ r.model }} · rolleval {{ r.rolleval_version }}</p>
{% for name, t in r.tasks.items() %}
<h2>{{ name }}</h2>
<p>grader {{ t.grader }} · policy {{ t.denominator_policy }} · {{ t.problems.total }} problems ·
rollouts requested {{ t.rollouts.requested }}, gradable {{ t.rollouts.gradable }}, correct {{ t.rollouts.correct }}</p>
<table><tr><th class="l">metric</th><th>value</th><th>{{ (t.inference.confidence_level * 100)|round|int }}% CI</th><th>numerator / denominator</th></tr>
{% for m, e in t.metrics.items() %}
<tr><td class="l">{{ m }}</td>
{% if e.status == "ok" %}<td>{{ e.value|num }}</td><td>{% if e.ci and e.ci.status == "ok" %}[{{ e.ci.low|num }}, {{ e.ci.high|num }}]{% else %}{{ e.ci.reason if e.ci else "" }}{% endif %}</td>
<td>{{ "%.2f"|format(e.numerator) }} / {{ e.denominator }}{% if e.denominator != e.n_total %} (of {{ e.n_total }}){% endif %}</td>
{% else %}<td>N/A</td><td class="l" colspan="2">{{ e.reason }}</td>{% endif %}</tr>
{% endfor %}</table>
<table><tr><th class="l">health</th><th>count</th><th>of</th><th>rate</th></tr>
{% for h in ["n_unextracted", "n_truncated", "n_short", "infra_errors", "timeouts", "grader_errors", "missing"] %}
<tr><td class="l">{{ h }}</td><td>{{ t.health[h].count }}</td><td>{{ t.health[h].of }}</td><td>{{ "N/A" if t.health[h].rate is none else "%.1f%%"|format(100 * t.health[h].rate) }}</td></tr>
{% endfor %}</table>
{% endfor %}
</body></html>
"""
)

_COMPARE = _ENV.from_string(
    """<!doctype html><html><head><meta charset="utf-8"><title>rolleval compare</title>
<style>{{ style }}</style></head><body>
<h1>rolleval compare: <span class="badge v-{{ c.verdict }}">{{ c.verdict|replace("_", " ") }}</span></h1>
<p class="muted">metric {{ c.metric }} · unit: problem · {{ c.multiplicity }} · exit {{ c.exit_code }}</p>
<p>baseline <code>{{ c.baseline }}</code><br>candidate <code>{{ c.candidate }}</code></p>
{% for r in c.reasons %}<p>note: {{ r }}</p>{% endfor %}
<table><tr><th class="l">task</th><th class="l">verdict</th><th>effect</th><th>CI</th><th>p</th><th>threshold</th><th>MDE (power)</th><th>problems compared</th></tr>
{% for t in c.tasks %}
<tr><td class="l">{{ t.task }}</td><td class="l"><span class="badge v-{{ t.verdict }}">{{ t.verdict|replace("_", " ") }}</span></td>
<td>{{ t.effect|num(4, True) }}</td><td>[{{ t.ci_low|num(4, True) }}, {{ t.ci_high|num(4, True) }}]{% if t.ci_status == "degenerate" %} degenerate{% endif %}{% if t.unit == "cluster" %} ({{ t.n_clusters }} clusters){% endif %}</td>
<td>{{ "N/A" if t.pvalue is none else "%.3g"|format(t.pvalue) }}</td><td>±{{ t.threshold }}</td><td>{{ t.mde|num }}{% if t.power is defined %} ({{ (100 * t.power)|round|int }}%){% endif %}</td><td>{{ t.problems.compared }} of {{ t.problems.compared + t.problems.dropped_total }}</td></tr>
{% endfor %}</table>
{% for t in c.tasks %}
<h2>{{ t.task }}</h2>
<p>{{ t.reason }}</p>
<p>problems compared {{ t.problems.compared }}; dropped {{ t.problems.dropped_total }}{% for k, d in t.problems.dropped.items() %}; {{ d.count }} {{ k|replace("_", " ") }}{% endfor %}</p>
{% for w in t.warnings %}<p class="badge v-inconclusive">warning: {{ w }}</p>{% endfor %}
<p class="muted">{{ t.method }}; confidence {{ t.confidence_level }}, seed {{ t.seed }}</p>
<table><tr><th class="l">health</th><th>baseline</th><th>candidate</th><th>delta</th></tr>
{% for k, v in t.health.items() %}<tr><td class="l">{{ k }}</td><td>{{ v.baseline|num }}</td><td>{{ v.candidate|num }}</td><td>{{ v.delta|num(4, True) }}</td></tr>{% endfor %}
</table>
{% if t.self_consistency %}<p>self-consistency: effect {{ t.self_consistency.effect|num(4, True) }} [{{ t.self_consistency.ci_low|num(4, True) }}, {{ t.self_consistency.ci_high|num(4, True) }}] ({{ t.self_consistency.verdict|replace("_", " ") }}; not gating)</p>{% endif %}
<table><tr><th class="l">problem that moved</th><th>baseline</th><th>candidate</th><th>delta</th><th>Holm p</th></tr>
{% for m in t.movers[:10] %}<tr><td class="l">{{ m.id }}</td><td>{{ m.baseline_rate|num(2) }}</td><td>{{ m.candidate_rate|num(2) }}</td><td>{{ m.delta|num(2, True) }}</td><td>{{ "N/A" if m.adjusted_pvalue is none else "%.3g"|format(m.adjusted_pvalue) }}</td></tr>{% endfor %}
</table>
{% endfor %}
</body></html>
"""
)


def report_html(report: dict[str, Any]) -> str:
    """A run report (``report.json`` content) as one HTML page."""
    return _REPORT.render(r=report, style=_STYLE)


def compare_html(result: dict[str, Any]) -> str:
    """A comparison (``CompareResult.to_dict()``) as one HTML page."""
    return _COMPARE.render(c=result, style=_STYLE)


def write_html(path: str | os.PathLike[str], html: str) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(p, html.encode("utf-8"))
    return p
