"""Case definitions: a superset of SGLang's nightly ``comparison_configs.json``, or SGLang's own case lists.

One file drives both the pytest scenarios and ``diffperf compare``. SGLang's keys are read as
they are; the test-only keys (``run_perf_check``, ``perf_repeat_requests``, ...) are ours.
SGLang's Python case lists (``gpu_cases.py``, a checkout or wheel holding it, or ``sglang`` for the
installed package) are read too, converted by ``pytest_diffperf.sglang`` (docs/sglang.md).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    field_validator,
)

from ._util.findings import Finding, read_for_lint, schema_problems
from ._util.jsonfile import read_json_object, validate
from ._util.names import name_problem
from ._util.text import did_you_mean
from ._util.values import MAX_WAIT_S
from .errors import DiffperfError
from .platforms import Platform
from .sglang.casefile import case_file_data
from .sglang.source import is_sglang_source


def _plain_name(value: str) -> str:
    """A case id becomes part of file names (ground truth, artifacts): a plain name only."""
    problem = name_problem(value)
    if problem:
        raise ValueError(f"case id {problem}")
    return value


VIDEO_TASKS = ("text-to-video", "image-to-video", "text-image-to-video")
Task = Literal["text-to-image", "image-edit", "text-to-video", "image-to-video", "text-image-to-video"]


class FrameworkEntry(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    serve_args: str = ""
    extra_env: dict[str, str] = Field(default_factory=dict)
    # SGLang's ServerManager appends --uvicorn-access-log-exclude-prefixes /health from 0.5.18 on
    exclude_health_access_log: bool = True

    @field_validator("serve_args")
    @classmethod
    def _shell_words(cls, value: str) -> str:
        try:
            shlex.split(value)
        except ValueError as exc:
            raise ValueError(f"serve_args are shell words: {exc} in {value!r}") from None
        return value

    @field_validator("extra_env")
    @classmethod
    def _environment(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not name or "=" in name or "\0" in name:
                raise ValueError(f"{name!r} is not an environment variable name (no '=', no NUL, not empty)")
            if "\0" in text:
                raise ValueError(f"the value of {name} holds a NUL character, which no environment can hold")
        return value


class Case(BaseModel):
    model_config = ConfigDict(extra="allow", allow_inf_nan=False, strict=True)  # "5" is no number, "yes" no switch

    id: str
    model: str
    task: Task
    prompt: str
    width: PositiveInt | None = None
    height: PositiveInt | None = None
    num_frames: PositiveInt | None = None
    fps: PositiveInt | None = None  # sent for image-to-video tasks only (SGLang never sends it for text-to-video)
    seconds: PositiveInt | None = None  # video length: the server makes fps * seconds frames without num_frames
    num_inference_steps: PositiveInt | None = None
    guidance_scale: float | None = None
    negative_prompt: str | None = None
    seed: int | None = None
    num_gpus: PositiveInt = 1
    output_format: Literal["png", "jpeg", "jpg"] | None = None  # unset: the server's default (JPEG on SGLang)
    reference_image: bool | str | None = None  # a local file or an http(s) URL (downloaded once per session)
    sglang_request_extra: dict[str, Any] = Field(default_factory=dict)
    frameworks: dict[str, FrameworkEntry] = Field(default_factory=dict)
    # pytest-diffperf's own keys
    run_perf_check: bool = True
    # what run_perf_check false still judges: e2e and load (SGLang 0.5.21 on), or nothing (before; a missing
    # baseline scenario then does not fail either)
    judged_without_perf_check: Literal["e2e_and_load", "nothing"] = "e2e_and_load"
    # How 2+ measured requests are judged: the preset's statistic over all, each on its own (any one over a limit
    # fails), or the last alone (SGLang 0.5.20+ and 0.5.19)
    judged_requests: Literal["all", "each", "last"] = "all"
    required_baselines: list[str] = Field(default_factory=list)  # baseline keys whose absence fails the scenario
    # The step and decoding-stage allowances of the case's SGLang release (``perf.limits.ALLOWANCES``): 0.5.13 on,
    # 0.5.12, or the releases before
    limit_allowances: Literal["0.5.13", "0.5.12", "0.5.6"] = "0.5.13"
    run_consistency_check: bool = True
    perf_repeat_requests: PositiveInt = 1
    perf_warmup_requests: NonNegativeInt = 0
    timeout_s: Annotated[PositiveFloat, Field(le=MAX_WAIT_S)] | None = None

    _id = field_validator("id")(_plain_name)

    @property
    def is_video(self) -> bool:
        return self.task in VIDEO_TASKS

    def framework(self, launcher: str) -> FrameworkEntry:
        """The serve args and env for ``launcher``, falling back to the ``sglang`` entry."""
        return self.frameworks.get(launcher) or self.frameworks.get("sglang") or FrameworkEntry()


class NotExpressible(BaseModel):
    """A case of SGLang's lists the plugin cannot express yet, and why (collected and skipped with the reason)."""

    model_config = ConfigDict(extra="allow")

    id: str
    reason: str

    _id = field_validator("id")(_plain_name)


class CaseFile(BaseModel):
    model_config = ConfigDict(extra="allow")

    measurement_repeats: PositiveInt = 3
    cases: list[Case]
    not_expressible: list[NotExpressible] = Field(default_factory=list)


def load_case_file(
    path: Path, hardware: Platform | None = None, suites: Sequence[str] | None = None, *, semantics: str | None = None
) -> CaseFile:
    """Read and validate a case file (case ids must be unique).

    ``path`` is a JSON case file, or SGLang's case lists: ``gpu_cases.py``, a folder holding it (a
    checkout or unpacked wheel) or ``sglang`` (the installed package); those are read as on
    ``hardware`` (default h100), for ``suites`` (default: the ones SGLang's CI runs there), judged by the
    rules of their release or of release ``semantics``.
    """
    sglang = is_sglang_source(path)
    data = case_file_data(path, hardware, suites, semantics=semantics) if sglang else read_json_object(path)
    parsed = validate(CaseFile, data, path, "")
    seen: set[str] = set()
    for index, case in enumerate(parsed.cases):
        if case.id in seen:
            raise DiffperfError(f"duplicate case id {case.id!r}", source=str(path), key=f"cases.{index}.id")
        seen.add(case.id)
    return parsed


def load_cases(path: Path, hardware: Platform | None = None, suites: Sequence[str] | None = None) -> dict[str, Case]:
    """Read and validate a case file (see ``load_case_file``); returns cases by id, in file order."""
    return {case.id: case for case in load_case_file(path, hardware, suites).cases}


def unmatched(case_ids: Sequence[str], scenario_ids: Sequence[str]) -> tuple[list[str], list[str]]:
    """(scenarios without a case, cases without a scenario), each in its own order."""
    cases, scenarios = set(case_ids), set(scenario_ids)
    return [s for s in scenario_ids if s not in cases], [c for c in case_ids if c not in scenarios]


# Keys of SGLang's comparison_configs.json (and of `diffperf import-cases` output) the plugin reads past.
SGLANG_FILE_KEYS = frozenset({"test_image_url", "sglang_source"})
SGLANG_CASE_KEYS = frozenset({"comfyui_workflow", "sglang_suites", "sglang_checks_not_run"})
NOT_EXPRESSIBLE_KEYS = frozenset({"request", "suites"})
SGLANG_ARGS_FRAMEWORKS = frozenset({"sglang", "reference"})  # entries in SGLang's form: serve_args, extra_env


def is_case_document(data: object) -> bool:
    """A case file's shape: a top-level ``cases`` list."""
    return isinstance(data, dict) and isinstance(data.get("cases"), list)


def lint_case_doc(path: Path, data: dict[str, Any]) -> list[Finding]:
    """Every problem of a case file: schema errors, duplicate ids, and unknown keys (errors: a typo such as
    ``perf_repeat_request`` would otherwise be ignored), each with a did-you-mean."""
    file = str(path)
    out = [Finding("error", file, "", key, message) for key, message in schema_problems(CaseFile, data)]
    out += _unknown(file, "", "", data, set(CaseFile.model_fields) | SGLANG_FILE_KEYS)
    seen: dict[str, int] = {}
    for index, case in enumerate(data.get("cases") or []):
        if not isinstance(case, dict):
            continue
        cid = str(case.get("id", ""))
        where = f"cases.{index}"
        if cid in seen:
            out.append(Finding("error", file, cid, f"{where}.id", f"duplicate case id (also cases.{seen[cid]})"))
        seen.setdefault(cid, index)
        out += _unknown(file, cid, where, case, set(Case.model_fields) | SGLANG_CASE_KEYS)
        frameworks = case.get("frameworks")
        for name, entry in frameworks.items() if isinstance(frameworks, dict) else ():
            if name in SGLANG_ARGS_FRAMEWORKS and isinstance(entry, dict):
                out += _unknown(file, cid, f"{where}.frameworks.{name}", entry, set(FrameworkEntry.model_fields))
    for index, entry in enumerate(data.get("not_expressible") or []):
        if isinstance(entry, dict):
            known = set(NotExpressible.model_fields) | NOT_EXPRESSIBLE_KEYS
            out += _unknown(file, str(entry.get("id", "")), f"not_expressible.{index}", entry, known)
    return out


def _unknown(file: str, scenario: str, where: str, obj: dict[str, Any], known: set[str]) -> list[Finding]:
    """An error per key that is neither known nor a comment (``_comment``, any ``_`` key)."""
    return [
        Finding("error", file, scenario, f"{where}.{key}" if where else key, f"unknown key{did_you_mean(key, known)}")
        for key in obj
        if key not in known and not key.startswith("_")
    ]


def lint_case_file(path: Path) -> list[Finding]:
    """Lint a JSON case file (its syntax problems too)."""
    data, out = read_for_lint(path)
    return out if data is None else out + lint_case_doc(path, data)
