"""A suite's scenario set: the one selection pytest (collection and ``--diffperf-shard``), ``diffperf plan``,
``diffperf merge --expect-all``, ``diffperf lint --hardware`` and ``diffperf import-cases`` make.

It depends on the baseline files, the case lists and the platform alone: not on how a path is written
(relative or absolute, a folder or a file) nor on the working directory.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ..cases import Case, CaseFile, load_case_file
from ..errors import DiffperfError
from ..platforms import Platform
from ..sglang.source import is_sglang_source
from .baselines import BaselineSet, load_baselines, select_scenarios


@dataclass(frozen=True)
class Flags:
    """The options that name the case lists and the suites (pytest's or a command's), for messages."""

    cases: str = "--diffperf-cases"
    suites: str = "--diffperf-suites"
    semantics: str = "--diffperf-sglang-semantics"


CLI_FLAGS = Flags("--cases", "--suites")


@dataclass(frozen=True)
class ScenarioSet:
    """The scenarios of one platform: the baseline's judged there, then cases without one, then SGLang's cases
    the plugin cannot express yet (collected to be skipped with the reason)."""

    baselines: BaselineSet
    case_file: CaseFile
    hardware: Platform | None

    @cached_property
    def cases(self) -> dict[str, Case]:
        return {case.id: case for case in self.case_file.cases}

    @cached_property
    def not_expressible(self) -> dict[str, str]:
        """SGLang's cases the plugin cannot run yet: id -> why."""
        return {entry.id: entry.reason for entry in self.case_file.not_expressible}

    @cached_property
    def other_suites(self) -> dict[str, list[str]]:
        """Scenarios that are SGLang's cases of suites this run does not read (a baseline file shared by several
        platforms holds them: 0.5.10, 0.5.13, 0.5.14): id -> those suites. Not this run's scenarios."""
        source = (self.case_file.model_extra or {}).get("sglang_source") or {}
        other: dict[str, list[str]] = source.get("other_suites") or {}
        return {sid: other[sid] for sid in self.baselines.scenarios if sid in other and sid not in self.cases}

    @cached_property
    def ids(self) -> list[str]:
        chosen = select_scenarios(self.baselines, self.cases, self.hardware, list(self.not_expressible))
        return [sid for sid in chosen if sid not in self.other_suites]

    def home(self, scenario_id: str) -> Path:
        """The file whose node id the scenario carries: the file that defines it, else (a case without a
        baseline) the platform's own file (an NPU/MUSA fragment on its platform, where there is one)."""
        if scenario_id in self.baselines.source:
            return self.baselines.source[scenario_id]
        own = self.baselines.platform_file(self.hardware)
        return own if own in self.baselines.files else self.baselines.primary

    @cached_property
    def files(self) -> list[Path]:
        """The files pytest collects the scenarios from, in the order of their first scenario."""
        return list(dict.fromkeys(self.home(sid) for sid in self.ids))


def read_case_lists(
    cases: Path | str | None,
    hardware: Platform | None,
    suites: str | None = None,
    flags: Flags = Flags(),
    *,
    semantics: str | None = None,
) -> CaseFile:
    """A JSON case file, or SGLang's case lists read as on the platform for ``suites`` (comma-separated),
    judged by the rules of their release or of release ``semantics``."""
    wanted = [s.strip() for s in (suites or "").split(",") if s.strip()] or None
    if cases is None:
        for given, flag in ((wanted, flags.suites), (semantics, flags.semantics)):
            if given:
                raise DiffperfError(f"needs SGLang's case lists: pass {flags.cases} too", source=flag)
        return CaseFile(cases=[])
    if wanted and not is_sglang_source(cases):
        raise DiffperfError(
            f"suites are read from SGLang's case lists, and {cases} is a JSON case file: "
            f"drop {flags.suites}, or pass gpu_cases.py (or diffperf import-cases --suite) instead",
            source=flags.suites,
        )
    if semantics and not is_sglang_source(cases):
        raise DiffperfError(
            f"applies to SGLang's case lists, and {cases} is a JSON case file (its cases carry their rules "
            "already): drop the option",
            source=flags.semantics,
        )
    return load_case_file(Path(cases), hardware, wanted, semantics=semantics)


def load_scenario_set(
    baselines: Path | str,
    hardware: Platform | None,
    cases: Path | str | None = None,
    suites: str | None = None,
    flags: Flags = Flags(),
) -> ScenarioSet:
    """Read the baseline files and the case lists of one platform into its scenario set."""
    return ScenarioSet(load_baselines(baselines, hardware), read_case_lists(cases, hardware, suites, flags), hardware)
