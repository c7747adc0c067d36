"""The HTML report, read without a browser: self-contained (inline SVG from matplotlib, images as data URIs,
no URL leaving the page), every outcome, the A/B and noise intervals, the consistency images, the trend."""

from __future__ import annotations

import base64
import importlib.util
import re

import pytest

from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.results import history, html
from pytest_diffperf.results.provenance import Provenance
from tests.support.reports import Links, png_file, results

pytest.importorskip("matplotlib")


def section(page: str, scenario: str) -> str:
    start = page.index(f"id='s-{scenario}'")
    return page[start : page.index("</section>", start)]


def test_report(tmp_path):
    png = png_file(tmp_path / "slow_1gpu.png")
    found = results(png)
    runs = [
        history.Run(tmp_path / f"{i}.json", {"provenance": {"timestamp": f"2026-05-0{i + 1}T12:00:00"},
                                              "scenarios": [r.document() for r in found]})
        for i in range(3)
    ]  # fmt: skip
    page = html.render(
        found,
        {"profile": "pr_test", "hardware": "h100"},
        Provenance(timestamp="2026-05-04T12:00:00+00:00", commit="abc1234def", device="NVIDIA H100"),
        history=history.series(runs),
        baseline_steps={"slow": {0: 200.0, 3: 210.0}},
    )
    links = Links()
    links.feed(page)
    assert all(url.startswith(("#", "data:")) for url in links.urls), links.urls
    assert "<script src" not in page and "<link" not in page and "@import" not in page

    slow = section(page, "slow")
    assert slow.count("<svg") == 3  # stages against limits, steps against the baseline's, the trend
    assert "Matplotlib" in slow  # drawn by the plotting library, not by hand
    (data,) = re.findall(r"src='data:image/png;base64,([^']+)'", slow)
    assert base64.b64decode(data) == png.read_bytes()
    assert "Output against ground truth: fail" in slow and "<details open>" in slow
    assert "A/B</b>: regressed: e2e +12.0 % [+8.0, +16.0], 40 s" in section(page, "ab")
    assert "<svg" in section(page, "ab") and "<svg" in section(page, "noisy")
    for outcome in ("pass", "fail", "inconclusive", "error"):
        assert f"<span class='badge {outcome}'>" in page
    assert "<h2>Trend over 3 run(s)</h2>" in page and "no change point in any scenario's series" in page
    assert "<td>commit</td><td>abc1234def</td>" in page
    assert "<tr class='o-pass passed'>" in page and "<section class='scenario passed' id='s-fast'>" in page


def test_a_missing_image_is_said(tmp_path):
    found = results(tmp_path / "gone.png")
    page = html.render(found, {"profile": "pr_test", "hardware": "h100"})
    assert "no comparison image (the consistency check draws one with --diffperf-artifacts)" in section(page, "slow")


def test_without_matplotlib_the_extra_is_named(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)  # the module html.py imports
    with pytest.raises(DiffperfError) as info:
        html.require_matplotlib("--diffperf-html")
    assert str(info.value) == "--diffperf-html: the HTML report needs matplotlib: pip install 'pytest-diffperf[report]'"


def test_ab_charts_a_log_axis_each_metrics_own_tolerance_and_the_sides_apart(tmp_path):
    """A wide stage interval (-90 % to +550 %) on a log axis beside e2e's does not squeeze it; each metric's own
    tolerance (e2e 10 %, the stage 50 %);
    the per-step chart names base and candidate requests (the stored baseline left out)."""
    from pytest_diffperf.results import charts

    ab = next(r for r in results(tmp_path / "x.png") if r.scenario == "ab")
    assert ab.ab is not None
    e2e = ab.ab.metrics[0].model_copy(update={"tolerance": 0.1})
    stage = e2e.model_copy(update={"name": "stage[LatentPreparationStage]", "tolerance": 0.5, "ratio": 0.8,
                                   "low": 0.1, "high": 6.5, "verdict": "inconclusive"})  # fmt: skip
    ab.ab.metrics = [e2e, stage]
    ab.rows = [{"side": side, "process_pair": 0, "steps_ms": [20.0, 21.0] if side == "base" else [45.0, 46.0]}
               for side in ("base", "candidate")]  # fmt: skip
    chart = charts.ab_chart(ab.ab)
    assert chart is not None and "each metric's tolerance" in chart and "change (log scale)" in chart
    assert "LatentPreparationStage (inconclusive)" in chart and "e2e (regressed)" in chart
    ticks = re.findall(r">([-+]?\d+%?)</text>", chart)
    # log-spaced ratios, as changes, over the estimates and bands: the wide stage interval is cut at the edges
    assert ticks == ["-20%", "0", "+25%", "+50%"]
    steps = charts.steps_chart(ab, {0: 20.0, 1: 20.0})
    assert steps is not None
    assert ">base</text>" in steps and ">candidate</text>" in steps and ">baseline</text>" not in steps
    page = html.render([ab], {"profile": "pr_test", "hardware": "cpu", "base": "current"})
    assert "per-step times: base and candidate requests" in page


def test_an_inconclusive_scenarios_section_says_whole_why_and_what_next(tmp_path):
    noisy = next(r for r in results(tmp_path / "x.png") if r.scenario == "noisy")
    page = html.render([noisy], {"profile": "pr_test", "hardware": "cpu", "baselines": ["b.json"]})
    part = section(page, "noisy")
    assert "<p class='reason'>PERFORMANCE: inconclusive (3 fresh server(s), 9 requests): the run&#x27;s noise " \
           "supports neither</p>" in part  # fmt: skip
    assert (
        "<li>record this machine: <code>pytest --regen-baselines --diffperf-baselines=b.json -k noisy</code></li>"
        in part
    )
    assert "<li>calibrate the noise: <code>--diffperf-noise=FILE (docs/verdicts.md)</code></li>" in part
    assert "<td>e2e</td><td class=n>1090.00</td>" in part and "<td>inconclusive</td>" in part  # as judged
