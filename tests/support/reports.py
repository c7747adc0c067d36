"""For the report tests: scenario results of every kind (pass, fail, inconclusive with the run's noise, A/B,
error), a real PNG, and the URLs an HTML page refers to."""

from __future__ import annotations

import html.parser
import re
from pathlib import Path

from pytest_diffperf.results.model import (
    ABMetricRecord,
    ABRecord,
    CheckRecord,
    NoiseRecord,
    NoisyCheckRecord,
    ScenarioResult,
)


def check(name: str, kind: str, actual: float, expected: float, limit: float, verdict: str = "pass") -> CheckRecord:
    return CheckRecord(name=name, kind=kind, actual=actual, expected=expected, limit=limit, rel=0.1, pad=20,
                       verdict=verdict)  # fmt: skip


def results(png: Path) -> list[ScenarioResult]:
    steps = [{"scenario": "slow", "request": 0, "e2e_ms": 1400.0, "sampled_steps_ms": {"0": 300.0, "3": 310.0}}]
    slow = ScenarioResult(
        scenario="slow",
        verdict="fail",
        rows=steps,
        checks=[
            check("e2e", "e2e", 1400.0, 1000.0, 1100.0, "fail"),
            check("stage[DenoisingStage]", "stage", 1200.0, 800.0, 880.0, "fail"),
            check("stage[DecodingStage]", "stage", 100.0, 100.0, 150.0),
            check("step[0]", "step", 300.0, 200.0, 400.0),
            check("runtime_peak_allocated_mb", "vram", 900.0, 1000.0, 1050.0),
        ],
        measured={"e2e_ms": 1400.0},
        message="PERFORMANCE: 2 check(s) failed",
        consistency={"status": "fail", "message": "CONSISTENCY: slow: frame 0 ssim 0.41 < 0.95",
                     "artifacts": [str(png)], "worst": {"ssim": 0.41}, "thresholds": {"ssim": 0.95}},
    )  # fmt: skip
    fast = ScenarioResult(
        scenario="fast",
        verdict="pass",
        checks=[check("e2e", "e2e", 500.0, 510.0, 700.0), check("runtime_peak_allocated_mb", "vram", 990, 1000, 1000)],
    )
    noisy = ScenarioResult(
        scenario="noisy",
        verdict="inconclusive",
        checks=[check("e2e", "e2e", 1090.0, 1000.0, 1100.0)],
        message="PERFORMANCE: inconclusive (3 fresh server(s), 9 requests): the run's noise supports neither",
        noise=NoiseRecord(
            verdict="inconclusive", attempts=3, requests=9, wall_s=30.0,
            checks=[NoisyCheckRecord(name="e2e", actual=1090.0, low=1040.0, high=1150.0, expected=1000.0,
                                     limit=1100.0, verdict="inconclusive", processes=3, requests=9)],
        ),
    )  # fmt: skip
    metric = ABMetricRecord(name="e2e", gated=True, tolerance=0.05, ratio=1.12, low=1.08, high=1.16,
                            verdict="regressed", base_ms=1000.0, candidate_ms=1120.0, process_pairs=2,
                            request_pairs=8)  # fmt: skip
    ab = ScenarioResult(
        scenario="ab",
        verdict="fail",
        message="PERFORMANCE: A/B against the base (current): regressed: e2e +12.0 % [+8.0, +16.0]",
        ab=ABRecord(verdict="regressed", headline="regressed: e2e +12.0 % [+8.0, +16.0], 40 s", base="current",
                    candidate="args=--inject-delay DenoisingStage=150", process_pairs=2, requests=32, wall_s=40.0,
                    stop=None, metrics=[metric]),
    )  # fmt: skip
    broken = ScenarioResult(scenario="broken", verdict="error", message="server http://x exited with code 1\ntail")
    return [fast, slow, noisy, ab, broken]


def png_file(path: Path) -> Path:
    """A real PNG (what the consistency check draws), written with matplotlib's image writer."""
    import matplotlib.image
    import numpy as np

    matplotlib.image.imsave(path, np.zeros((4, 12, 3)))
    return path


class Links(html.parser.HTMLParser):
    """Every URL an HTML page refers to (src, href, and url(...) in style text), and its tags."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.urls += [value or "" for name, value in attrs if name in ("src", "href", "xlink:href", "data")]

    def handle_data(self, data: str) -> None:
        self.urls += re.findall(r"url\(([^)]*)\)", data)
