"""The HTML report: one self-contained file (inline CSS, SVG charts, images as data URIs) that works offline.

The run's totals and provenance (an A/B run's two builds named at the top); the summary table, searched, filtered
by outcome and sorted by any column (an inline script); the comparison with an earlier run; per
scenario its checks, a stage bar chart against the limits, its per-step times against the
baseline's steps, each request's wall time beside the server's CPU time and wait for a CPU, an A/B run's stages in ms (base beside candidate) and ratio intervals or the static intervals where the run has them, the
consistency images (output, ground truth, difference heatmap, as the consistency check draws
them), each server's log tail and, given a history, its trend with the change points found; the environment
(versions, driver, device, runner) and the run's settings close it. Written by ``pytest
--diffperf-html PATH`` and ``diffperf merge --html PATH``; needs the ``report`` extra (matplotlib).
"""

from __future__ import annotations

import base64
import html
import importlib.util
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import DiffperfError
from .history import Series
from .model import ScenarioResult
from .nextsteps import RunContext, next_lines
from .provenance import Provenance
from .runcompare import Delta
from .runcompare import table as comparison_table
from .stepsummary import totals
from .tables import change, e2e_change, e2e_of, num, pct, reason, summary_table

REPORT_EXTRA = "report"  # the extra that installs matplotlib

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1100px;
 padding:1em 1.5em;color:#1d2327;background:#fff}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
h3{font-size:1.05em;margin:.2em 0}
table{border-collapse:collapse;margin:.5em 0;font-size:13px}
th,td{border:1px solid #dcdcde;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f6f7f7}td.n{text-align:right;font-variant-numeric:tabular-nums}
.badge{display:inline-block;border-radius:10px;padding:1px 9px;margin-right:5px;font-weight:600;color:#fff}
.pass{background:#2e7d32}.fail{background:#c62828}.error{background:#6a1b9a}.inconclusive{background:#ef6c00}
.unguarded{background:#f9a825}.unjudged,.skipped{background:#78909c}
.next{margin:.3em 0}.next ul{margin:.2em 0}
tr.o-fail td:first-child,tr.o-error td:first-child{border-left:4px solid #c62828}
section.scenario{border:1px solid #dcdcde;border-radius:6px;margin:1em 0;padding:.6em 1em}
section.scenario summary{cursor:pointer;font-weight:600}
.charts{display:flex;flex-wrap:wrap;gap:8px}.charts svg{max-width:100%;height:auto}
img.consistency{max-width:100%;image-rendering:pixelated;border:1px solid #ddd}
.muted{color:#646970}.reason{color:#8a2424}code{font-size:12px}
.controls{display:flex;gap:1em;align-items:center;flex-wrap:wrap;margin:.6em 0}
.controls input[type=search]{padding:3px 6px;min-width:16em}
#summary th{cursor:pointer;user-select:none;white-space:nowrap}#summary th:after{content:" \\2195";color:#aaa}
.sides{font-size:1.05em;margin:.2em 0 .6em}pre.log{max-height:24em;overflow:auto;background:#f6f7f7;padding:6px}
"""
# Search, the outcome filter and "only not passed" over the summary's rows and the scenario sections; a click on a
# summary column's head sorts by it (numbers as numbers), again the other way. Inline: the page works offline.
SCRIPT = """(()=>{const $=i=>document.getElementById(i),q=$('search'),o=$('outcome'),f=$('only-failures');
const items=[...document.querySelectorAll('#summary tr[class^="o-"],section.scenario')].map(e=>{const row=e.tagName==='TR';
return {e,row,name:(row?e.cells[0]:e.querySelector('summary')).textContent.split(':')[0].trim().toLowerCase(),
outcome:row?e.className.split(' ')[0].slice(2):e.querySelector('.badge').textContent.trim(),passed:e.classList.contains('passed')}});
function apply(){const t=q.value.trim().toLowerCase(),w=o.value;let n=0;for(const i of items){
const show=i.name.includes(t)&&(!w||i.outcome===w)&&!(f.checked&&i.passed);i.e.hidden=!show;if(show&&i.row)n++}
$('shown').textContent=n+' of '+items.filter(i=>i.row).length+' scenarios shown'}
q.addEventListener('input',apply);o.addEventListener('change',apply);f.addEventListener('change',apply);
document.querySelectorAll('#summary th').forEach((th,c)=>th.addEventListener('click',()=>{const table=th.closest('table'),
rows=[...table.querySelectorAll('tr')].slice(1),dir=th.dataset.dir==='up'?-1:1;th.dataset.dir=dir>0?'up':'down';
const key=r=>{const s=r.cells[c].textContent.trim(),x=parseFloat(s.replace(/[+%,]/g,''));return isNaN(x)?s:x};
rows.sort((a,b)=>{const x=key(a),y=key(b);return (typeof x==='number'&&typeof y==='number'?x-y:String(x).localeCompare(String(y)))*dir})
.forEach(r=>table.appendChild(r))}));apply()})();"""
LOG_LINES = 30  # of each server's log, in the report
NOT_FAILED = frozenset({"pass", "skipped", "unguarded", "unjudged"})


def require_matplotlib(option: str) -> None:
    """DiffperfError naming the extra when matplotlib, which draws the charts, is not installed."""
    if importlib.util.find_spec("matplotlib") is None:
        raise DiffperfError(
            f"the HTML report needs matplotlib: pip install 'pytest-diffperf[{REPORT_EXTRA}]'", source=option
        )


def render(
    results: Sequence[ScenarioResult],
    header: Mapping[str, Any],
    provenance: Provenance | Mapping[str, Any] | None = None,
    *,
    history: Sequence[Series] = (),
    comparison: Sequence[Delta] = (),
    compared_to: str = "",
    baseline_steps: Mapping[str, Mapping[int, float]] | None = None,
    image_dirs: Sequence[Path] = (),
    notes: Sequence[str] = (),
    run: RunContext | None = None,
) -> str:
    """The report's HTML text (``run``: what the ``next:`` lines name; default: the header's files)."""
    from . import charts

    run = run if run is not None else RunContext.of(header)
    prov = (
        provenance
        if isinstance(provenance, Provenance)
        else Provenance.model_validate(dict(provenance or {"timestamp": ""}))
    )
    title = f"diffperf: profile {header.get('profile')} on {header.get('hardware')}"
    sides = sides_line(header)
    trends = {s.scenario: s for s in history}
    body = [
        f"<h1>{_e(title)}</h1>",
        f"<p class='sides'><b>{_e(sides)}</b></p>" if sides else "",
        f"<p>{_badges(results)} <span class='muted'>{_e(totals(results))}</span></p>",
        *(f"<p class='reason'>{_e(note)}</p>" for note in notes),
        f"<p class='muted'>{_e(prov.line())}</p>" if prov.timestamp else "",
        "<h2>Summary</h2>",
        _controls(results),
        _summary(results),
    ]
    if comparison:
        body += [f"<h2>Against {_e(compared_to)}</h2>", _table(comparison_table(comparison), numeric=(1, 2, 3))]
    changed = [(s, c) for s in history for c in s.changes]
    if history:
        body.append(f"<h2>Trend over {len(history[0].labels)} run(s)</h2>")
        body.append(
            _table(
                [["scenario", "run", "before", "after", "Δ", "p"]]
                + [
                    [s.scenario, s.labels[c.index], num(c.before), num(c.after), pct(c.change), f"{c.p_value:.4f}"]
                    for s, c in changed
                ],
                numeric=(2, 3, 4, 5),
            )
            if changed
            else "<p class='muted'>no change point in any scenario's series.</p>"
        )
    body.append("<h2>Scenarios</h2>")
    for result in results:
        body.append(
            _scenario(
                result,
                charts,
                trends.get(result.scenario),
                (baseline_steps or {}).get(result.scenario),
                image_dirs,
                run,
            )
        )
    body += ["<h2>Environment</h2>", _table([["field", "value"], *([k, v] for k, v in prov.pairs())])]
    body += ["<h2>Run settings</h2>", _table([["setting", "value"], *([k, _text(v)] for k, v in header.items())])]
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>\n"
        + "\n".join(part for part in body if part)
        + f"\n<script>{SCRIPT}</script>\n</body></html>\n"
    )


def _scenario(
    r: ScenarioResult,
    charts: Any,
    trend: Series | None,
    steps: Mapping[int, float] | None,
    image_dirs: Sequence[Path],
    run: RunContext,
) -> str:
    passed = "passed" if r.outcome in NOT_FAILED else "notpassed"
    open_ = "" if r.outcome in NOT_FAILED else " open"
    actual, _ = e2e_of(r)
    delta = e2e_change(r)
    head = f"{_e(r.scenario)}: <span class='badge {_e(r.outcome)}'>{_e(r.outcome)}</span>"  # no emoji: fonts lack them
    if actual is not None:
        head += f" e2e {num(actual)} ms" + (f" ({pct(delta)})" if delta is not None else "")
    parts = [f"<section class='scenario {passed}' id='{_id(r.scenario)}'><details{open_}><summary>{head}</summary>"]
    why = reason(r)
    if why:
        parts.append(f"<p class='reason'>{_e(why)}</p>")
    steps_next = next_lines(r, run)
    if steps_next:
        items = "".join(f"<li>{_e(what)}: <code>{_e(how)}</code></li>" for what, how in steps_next)
        parts.append(f"<div class='next'>next:<ul>{items}</ul></div>")
    if r.message and r.outcome not in NOT_FAILED:
        parts.append(f"<details><summary>message</summary><pre>{_e(r.message)}</pre></details>")
    if r.checks:
        rows = [["check", "actual", "expected", "Δ", "limit", "allowed", "verdict"]]
        rows += [
            [
                c.name,
                num(c.actual),
                num(c.expected),
                pct(change(c.actual, c.expected)),
                num(c.limit),
                pct(change(c.limit, c.expected)),
                r.check_verdict(c),
            ]
            for c in r.checks
        ]
        parts.append("<details><summary>every check</summary>" + _table(rows, numeric=(1, 2, 3, 4, 5)) + "</details>")
    parts += _requests(r)
    svgs = [charts.stage_chart(r), charts.steps_chart(r, steps)]
    if r.ab is not None:
        parts.append(f"<p><b>A/B</b>: {_e(r.ab.headline)}</p>")
        svgs += [charts.ab_stages_chart(r.ab), charts.ab_chart(r.ab)]
    if r.noise is not None:
        svgs.append(charts.noise_chart(r.noise))
    if trend is not None:
        svgs.append(
            charts.trend_chart(trend.labels, trend.values, [(c.index, c.before, c.after) for c in trend.changes])
        )
    shown = [s for s in svgs if s]
    if shown:
        parts.append("<div class='charts'>" + "".join(f"<div>{s}</div>" for s in shown) + "</div>")
    if r.consistency:
        parts.append(_consistency(r.consistency, image_dirs))
    parts += _logs(r)
    parts.append("</details></section>")
    return "\n".join(parts)


def sides_line(header: Mapping[str, Any]) -> str | None:
    """An A/B run's two builds, each with its commit: ``A/B: base git=origin/main (1a2b3c4d5e6f) vs candidate
    current (9f8e7d6c5b4a)``; None for a static run."""
    if not header.get("base"):
        return None

    def side(name: str) -> str:
        commit = header.get(f"{name}_commit")
        return f"{name} {header.get(name)}" + (f" ({str(commit)[:12]})" if commit else "")

    return f"A/B: {side('base')} vs {side('candidate')}"


def _controls(results: Sequence[ScenarioResult]) -> str:
    outcomes = sorted({r.outcome for r in results})
    options = "".join(f"<option value='{_e(o)}'>{_e(o)}</option>" for o in outcomes)
    return (
        "<div class='controls'><input type='search' id='search' placeholder='search scenarios' "
        "aria-label='search scenarios'>"
        f"<select id='outcome' aria-label='outcome'><option value=''>every outcome</option>{options}</select>"
        "<label><input type='checkbox' id='only-failures'> only those that did not pass</label>"
        "<span id='shown' class='muted'></span><span class='muted'>(click a column's head to sort)</span></div>"
    )


def _requests(r: ScenarioResult) -> list[str]:
    """Each measured request's wall time beside the server's CPU time and its threads' wait for a CPU."""
    if not any(row.cpu_ms is not None for row in r.rows):
        return []
    rows = [["request", "side", "e2e ms", "client ms", "server CPU ms", "waited for a CPU ms"]]
    rows += [
        [
            _text(row.request),
            _text(row.side or ""),
            num(row.e2e_ms),
            num(row.client_ms),
            num(row.cpu_ms),
            num(row.wait_ms),
        ]
        for row in r.rows
    ]
    summary = "requests: wall time, the server's CPU time, its wait for a CPU"
    return [f"<details><summary>{_e(summary)}</summary>" + _table(rows, numeric=(2, 3, 4, 5)) + "</details>"]


def _logs(r: ScenarioResult) -> list[str]:
    """Each server's log: its path and, where the file is still there, its last ``LOG_LINES`` lines."""
    logs = [("server", r.server.log)] if r.server else []
    if r.ab is not None:
        logs += [(f"{s.side} server {(s.process_pair or 0) + 1}", s.log) for s in r.ab.servers]
    out = []
    for what, log in logs:
        path = Path(str(log)) if log else None
        if path is None:
            continue
        try:
            tail = path.read_text(encoding="utf-8", errors="replace").splitlines()[-LOG_LINES:]
        except OSError:
            out.append(f"<p class='muted'>{_e(what)} log: <code>{_e(str(path))}</code> (not here)</p>")
            continue
        out.append(
            f"<details><summary>{_e(what)} log, last {len(tail)} lines: <code>{_e(str(path))}</code></summary>"
            f"<pre class='log'>{_e(chr(10).join(tail))}</pre></details>"
        )
    return out


def _consistency(consistency: Mapping[str, Any], image_dirs: Sequence[Path]) -> str:
    status = str(consistency.get("status"))
    out = [f"<h3>Output against ground truth: {_e(status)}</h3>"]
    worst = consistency.get("worst") or {}
    thresholds = consistency.get("thresholds") or {}
    if worst:
        rows = [["metric", "worst frame", "threshold"]]
        rows += [[k, _text(v), _text(thresholds.get(k, "-"))] for k, v in worst.items()]
        out.append(_table(rows, numeric=(1, 2)))
    images = [p for p in (_find(Path(str(a)), image_dirs) for a in consistency.get("artifacts") or []) if p]
    pngs = [p for p in images if p.suffix.lower() == ".png"]
    for png in pngs:
        data = base64.b64encode(png.read_bytes()).decode("ascii")
        out.append(
            f"<p><img class='consistency' alt='output, ground truth and difference: {_e(png.name)}' "
            f"src='data:image/png;base64,{data}'></p>"
        )
    if not pngs and status != "skipped":
        out.append(
            "<p class='muted'>no comparison image (the consistency check draws one with --diffperf-artifacts)</p>"
        )
    return "\n".join(out)


def _find(path: Path, image_dirs: Sequence[Path]) -> Path | None:
    """The artifact, or a file of its name in one of ``image_dirs`` (a CI job's downloaded artifacts)."""
    if path.is_file():
        return path
    return next((d / path.name for d in image_dirs if (d / path.name).is_file()), None) or next(
        (hit for d in image_dirs for hit in d.rglob(path.name) if hit.is_file()), None
    )


def _summary(results: Sequence[ScenarioResult]) -> str:
    table = summary_table(results)
    rows = ["<table id='summary'><tr>" + "".join(f"<th>{_e(h)}</th>" for h in table[0]) + "</tr>"]
    for result, row in zip(results, table[1:], strict=True):
        passed = "passed" if result.outcome in NOT_FAILED else ""
        cells = [f"<td><a href='#{_id(result.scenario)}'>{_e(row[0])}</a></td>"]
        cells.append(f"<td><span class='badge {_e(row[1])}'>{_e(row[1])}</span></td>")
        cells += [f"<td class='n'>{_e(c)}</td>" for c in row[2:5]] + [f"<td>{_e(c)}</td>" for c in row[5:]]
        rows.append(f"<tr class='o-{_e(result.outcome)} {passed}'>" + "".join(cells) + "</tr>")
    return "\n".join([*rows, "</table>"])


def _badges(results: Sequence[ScenarioResult]) -> str:
    counts: dict[str, int] = {}
    for r in results:
        counts[r.outcome] = counts.get(r.outcome, 0) + 1
    return "".join(f"<span class='badge {_e(o)}'>{n} {_e(o)}</span>" for o, n in counts.items())


def _table(rows: Sequence[Sequence[str]], numeric: Sequence[int] = ()) -> str:
    head = "<tr>" + "".join(f"<th>{_e(str(h))}</th>" for h in rows[0]) + "</tr>"
    body = [
        "<tr>"
        + "".join(f"<td{' class=n' if i in numeric else ''}>{_e(str(c))}</td>" for i, c in enumerate(row))
        + "</tr>"
        for row in rows[1:]
    ]
    return "<table>" + head + "".join(body) + "</table>"


def _id(scenario: str) -> str:
    return "s-" + "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in scenario)


def _text(value: object) -> str:
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "-"
    return "-" if value is None else str(value)


def _e(text: str) -> str:
    return html.escape(text, quote=True)
