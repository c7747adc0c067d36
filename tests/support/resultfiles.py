"""One real run's results file as the previous version wrote it, and as this version writes it."""

from __future__ import annotations

import copy
import json

from pytest_diffperf.results.model import RESULTS_VERSION
from tests.support.paths import DATA

# The bundled flux scenarios on a 2-core VM, measured by static mode; version 3: consistency said passed/failed.
PREVIOUS = DATA / "results" / "flux_tiny_cpu.json"


def previous() -> dict:
    return json.loads(PREVIOUS.read_text())


def current(doc: dict | None = None) -> dict:
    """``doc`` (default: the real run) rewritten as this version writes it: its version, pass and fail."""
    doc = copy.deepcopy(doc or previous())
    doc["version"] = RESULTS_VERSION
    for scenario in doc["scenarios"]:
        if scenario.get("consistency"):
            status = scenario["consistency"]["status"]
            scenario["consistency"]["status"] = {"passed": "pass", "failed": "fail"}.get(status, status)
    return doc
