"""SGLang's case lists as the data of a case file (the JSON shape ``cases.CaseFile`` reads)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import DiffperfError
from ..platforms import Platform
from . import caselist, release, task_types
from .convert import Converted, convert, unreadable
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
    hardware: Platform | None = None,
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
    converted = [_convert(lists, entry, rules) for entry in selected]
    models = {entry.case.server_args.model_path for entry in selected}
    chosen = {entry.case.id for entry in selected}
    other_suites: dict[str, list[str]] = {}
    for name, cases in lists.suites.items():
        for case in cases:
            if case.id not in chosen:
                other_suites.setdefault(case.id, []).append(name)
    notes = [*lists.notes, *(note for model, note in lists.inferred.items() if model in models)]
    return {
        "_comment": (
            f"Converted by `diffperf import-cases` from SGLang's case lists ({lists.source.gpu_cases}), "
            f"suites {', '.join(sorted({s for e in selected for s in e.suites}))}, as on {lists.hardware}."
        ),
        "sglang_source": {
            "path": str(lists.source.gpu_cases),
            "hardware": lists.hardware,
            "suites": list(suites) if suites else lists.default_suites,
            "loaded_with": lists.mode,
            "notes": notes,
            "other_suites": other_suites,  # the release's cases not in these suites (a shared baseline file's)
            "warnings": [
                f"suite {name!r} ({len(lists.suites[name])} case(s)) is not one pytest-diffperf maps to a platform: "
                f"not run unless named (--diffperf-suites {name})"
                for name in lists.unmapped
                if not suites or name not in suites
            ],
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


def _convert(lists: caselist.CaseLists, entry: caselist.SuiteCase, rules: Semantics) -> Converted:
    """The case converted, or not expressible: its model's task type undecided, or a field or kind unknown."""
    case = entry.case
    reason = lists.undecided.get(case.id) or unreadable(case, f"{rules.release} ({rules.how})")
    if reason is not None:
        return Converted(case.id, entry.suites, "unknown", reason=reason)
    try:
        return convert(case, entry.suites, rules, lists.hardware)
    except (TypeError, ValueError, AttributeError) as exc:  # a field of a type SGLang's own harness would not send
        raise DiffperfError(
            f"a field of case {case.id!r} has an unexpected type ({type(exc).__name__}: {exc})",
            source=str(lists.source.gpu_cases),
            key=case.id,
        ) from None
