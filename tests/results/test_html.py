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
from pytest_diffperf.results.rows import RequestRow
from pytest_diffperf.serving.record import ServerRecord
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
    ab.rows = [RequestRow(side=side, process_pair=0, scenario="ab", e2e_ms=100.0,
                          steps_ms=[20.0, 21.0] if side == "base" else [45.0, 46.0])
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
        "<li>record this machine when it is quiet: <code>pytest --regen-baselines --diffperf-baselines=b.json -k noisy</code></li>"
        in part
    )
    assert (
        "<li>calibrate the noise: <code>diffperf calibrate --ab AA.json --history DIR -o noise.json, then --diffperf-noise=noise.json (docs/verdicts.md)</code></li>"
        in part
    )
    assert "<td>e2e</td><td class=n>1090.00</td>" in part and "<td>inconclusive</td>" in part  # as judged


def test_an_ab_report_names_both_sides_charts_each_stage_and_shows_the_environment_and_log_tails(tmp_path):
    """The reviewers' asks: "A/B: base X vs candidate Y" at the top; search, outcome filter and sorting (an inline
    script, nothing fetched); the stages in ms, base beside candidate; the versions, driver and device; the logs."""
    found = results(tmp_path / "x.png")
    ab = next(r for r in found if r.scenario == "ab")
    assert ab.ab is not None
    stage = ab.ab.metrics[0].model_copy(
        update={"name": "stage[DenoisingStage]", "base_ms": 125.0, "candidate_ms": 426.0, "ratio": 3.4}
    )
    logs = []
    for i, side in enumerate(("base", "candidate")):
        log = tmp_path / f"{side}.log"
        log.write_text("".join(f"{side} line {n}\n" for n in range(100)))
        logs.append(ServerRecord(side=side, process_pair=0, pid=10 + i, port=20000 + i, log=str(log)))
    ab.ab = ab.ab.model_copy(update={"metrics": [*ab.ab.metrics, stage], "servers": logs})
    gone = next(r for r in found if r.scenario == "fast")
    gone.server = ServerRecord(pid=1, port=2, log=str(tmp_path / "removed" / "server.log"))
    header = {"profile": "pr_test", "hardware": "h100", "base": "git=origin/main:python", "candidate": "current",
              "base_commit": "1a2b3c4d5e6f7a8b", "candidate_commit": "9f8e7d6c5b4a3928"}  # fmt: skip
    prov = Provenance(timestamp="2026-05-04T12:00:00+00:00", device="NVIDIA H100 80GB HBM3", driver="NVIDIA 570.86",
                      packages="torch 2.14.1, diffusers 0.37.0", python="3.11.7 (cpython)")  # fmt: skip
    page = html.render(found, header, prov)
    links = Links()
    links.feed(page)
    assert all(url.startswith(("#", "data:")) for url in links.urls), links.urls
    assert "<script src" not in page
    top = page[: page.index("<h2>")]
    assert (
        "<p class='sides'><b>A/B: base git=origin/main:python (1a2b3c4d5e6f) vs candidate current (9f8e7d6c5b4a)</b>"
        in top
    )
    assert "<input type='search' id='search'" in page and "<table id='summary'>" in page
    options = re.findall(r"<option value='(\w*)'>", page)
    assert options == ["", "error", "fail", "inconclusive", "pass"]  # every outcome of the run, and all
    assert "th.addEventListener('click'" in page and "i.name.includes(t)" in page  # sort and search, inline
    part = section(page, "ab")
    assert "A/B: each stage, base against candidate" in part and "125 -&gt; 426 ms +240.0% regressed" in part
    assert part.count("<svg") == 2  # the stages in ms, the ratios with their intervals
    assert "base server 1 log, last 30 lines" in part and "base line 99" in part and "base line 69" not in part
    assert "candidate line 70" in part
    assert "removed/server.log</code> (not here)" in section(page, "fast")
    env = page[page.index("<h2>Environment</h2>") :]
    for field, value in (("packages", "torch 2.14.1, diffusers 0.37.0"), ("driver", "NVIDIA 570.86"),
                         ("device", "NVIDIA H100 80GB HBM3"), ("python", "3.11.7 (cpython)")):  # fmt: skip
        assert f"<td>{field}</td><td>{value}</td>" in env
    assert "<p class='sides'>" not in html.render(found, {"profile": "pr_test", "hardware": "h100"})  # static


def test_the_provenance_names_the_installed_stack():
    from pytest_diffperf.results.provenance import collect

    prov = collect("reference", "cpu")
    assert prov.packages is not None and prov.packages.startswith("torch ") and "pytest " in prov.packages
    assert prov.driver is None or prov.driver.startswith("NVIDIA ")


def test_each_request_s_wall_time_is_shown_beside_the_server_s_cpu_time_and_wait(tmp_path):
    noisy = next(r for r in results(tmp_path / "x.png") if r.scenario == "noisy")
    noisy.rows = [
        RequestRow(scenario="noisy", request=0, e2e_ms=1090.0, client_ms=1101.5, cpu_ms=930.0, wait_ms=120.5),
        RequestRow(scenario="noisy", request=1, e2e_ms=1080.0, client_ms=1090.0, cpu_ms=None, wait_ms=None),
    ]
    part = section(html.render([noisy], {"profile": "pr_test", "hardware": "cpu"}), "noisy")
    assert "requests: wall time, the server&#x27;s CPU time, its wait for a CPU" in part
    assert "<td>0</td><td></td><td class=n>1090.00</td><td class=n>1101.50</td><td class=n>930.00</td>" in part
    assert "<td class=n>120.50</td>" in part
    noisy.rows = [
        row.model_copy(update={"cpu_ms": None}) for row in noisy.rows
    ]  # a server whose processes could not be read
    assert "server CPU ms" not in section(html.render([noisy], {"profile": "pr_test", "hardware": "cpu"}), "noisy")
