"""SGLang's case lists as the data of a case file (the JSON shape ``cases.CaseFile`` reads)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import caselist, release, task_types
from .convert import convert, unreadable
from .semantics import Semantics
from .source import locate


def semantics_for(lists: caselist.CaseLists, override: str | None = None) -> Semantics:
    """The rules of the lists' release, or of the release ``override`` names (--diffperf-sglang-semantics)."""
    if override:
        return Semantics(release.parse(override), "--diffperf-sglang-semantics")
    found = release.identify(lists.source.root, installed=lists.source.installed)
    return Semantics(found.version, found.how)


def case_file_data(
    given: Path | str,
    hardware: str | None = None,
    suites: Sequence[str] | None = None,
    *,
    table: task_types.TaskTypeTable | None = None,
    semantics: str | None = None,
) -> dict[str, Any]:
    """The converted cases of ``suites`` (default: those SGLang's CI runs on ``hardware``) of the SGLang source ``given``,
    judged by the rules of its release (or of release ``semantics``).

    ``not_expressible`` lists the cases the plugin cannot express yet, each with its reason.
    """
    return convert_lists(caselist.load(locate(given), hardware, table=table), suites, semantics)


def convert_lists(
    lists: caselist.CaseLists, suites: Sequence[str] | None = None, semantics: str | None = None
) -> dict[str, Any]:
    """``case_file_data`` of lists already loaded."""
    rules = semantics_for(lists, semantics)
    selected = lists.select(suites)
    for entry in selected:
        problem = unreadable(entry.case, f"{rules.release} ({rules.how})", str(lists.source.gpu_cases))
        if problem is not None:
            raise problem
    converted = [convert(entry.case, entry.suites, rules, lists.hardware) for entry in selected]
    return {
        "_comment": (
            f"Converted by `diffperf import-cases` from SGLang's case lists ({lists.source.gpu_cases}), "
            f"suites {', '.join(sorted({s for e in selected for s in e.suites}))}, as on {lists.hardware}."
        ),
        "sglang_source": {
            "path": str(lists.source.gpu_cases),
            "hardware": lists.hardware,
            "suites": list(suites)
            if suites
            else [s for s in caselist.DEFAULT_SUITES[lists.hardware] if s in lists.suites],
            "loaded_with": lists.mode,
            "notes": list(lists.notes),
            "release": str(rules.release),
            "release_from": rules.how,
            "semantics": rules.describe(),
        },
        "cases": [c.case for c in converted if c.case is not None],
        "not_expressible": [
            {"id": c.id, "reason": c.reason, "request": c.kind, "suites": list(c.suites)}
            for c in converted
            if c.case is None
        ],
    }
