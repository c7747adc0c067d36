"""``diffperf accept``: baselines written from the results files of runs that already happened.

The inputs are what ``diffperf merge`` takes (every shard's results file, or their merged file), merged
by its rules. Each accepted scenario's entry is built from its requests as ``--regen-baselines``
builds it (``results.entries``), decided by the same policy (``policy.decide``) and written by the
same ``Regenerator.write``: into the file the scenario came from, or the file its platform reads
(``writer.target_file``), under the file's lock, atomically.

What it refuses, before anything is written, one line per scenario naming its results file:
scenarios that errored, failed their consistency check, or were measured in an A/B run (unless
``side`` picks one side's requests), scenarios without measured requests, results files written
before their rows carried a baseline entry's figures (version < ``ENTRY_VERSION``), and, under
``improve`` (whose "no regression" is the run's own verdict), results judged with a tolerance
profile the baseline file does not define, and scenarios measured while other processes took the
machine (``busy``: unless ``--accept-busy``, then named in the files' metadata).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._util.jsonfile import describe_type
from .._util.names import name_problem
from .._util.values import BadValue
from ..errors import DiffperfError
from ..judging.interference import measured_busy
from ..perf.baselines import LEGACY_PROFILE, BaselineSet
from ..platforms import Platform, platform_value
from ..results.entries import measured_entry, rows_of
from ..results.merge import merge, read_results, results_of
from ..results.model import ENTRY_VERSION, ScenarioResult
from ..results.rows import RequestRow
from .busy import BUSY_KEY, QUIET, busy_note
from .guard import check_platforms
from .policy import RegenSettings
from .regenerator import Regenerator
from .writer import check_writable, run_metadata, target_file

SOURCE = "diffperf accept"
SIDES = ("candidate", "base")


@dataclass(frozen=True)
class Inputs:
    """The results files, read and merged, with each scenario's file and request rows."""

    merged: dict[str, Any]
    docs: list[tuple[Path, dict[str, Any]]]
    file_of: dict[str, Path]  # scenario -> the results file it came from
    rows: dict[str, list[RequestRow]]
    hardware: Platform | None  # the platform the runs judged (every input's: merge checks they agree)

    @classmethod
    def read(cls, paths: Sequence[Path]) -> Inputs:
        docs = []
        for path in paths:
            doc = read_results(path)
            if doc["version"] < ENTRY_VERSION:
                raise DiffperfError(
                    f"results version {doc['version']} lacks a baseline entry's figures (each request's stages, "
                    f"steps, memory peaks and its own server's load, which results files carry from version "
                    f"{ENTRY_VERSION} on); run the suite again with this pytest-diffperf's --diffperf-json",
                    source=str(path),
                    key="version",
                )
            docs.append((path, doc))
        merged = merge(docs)
        file_of = {s["scenario"]: path for path, doc in docs for s in doc["scenarios"]}
        rows: dict[str, list[RequestRow]] = {}
        for path, doc in docs:
            for scenario, found in rows_of(doc, path).items():
                rows.setdefault(scenario, []).extend(found)
        return cls(merged, docs, file_of, rows, _hardware(merged, docs[0][0]))

    def run_line(self) -> str:
        """The source run as ``regenerated_by`` names it: the files, and when and where it ran."""
        provenance = self.merged.get("provenance") or {}
        names = ", ".join(p.name for p, _ in self.docs)
        facts = [provenance.get("ci_run"), provenance.get("timestamp"), provenance.get("runner")]
        where = "; ".join(f"runner {f}" if f == facts[2] else str(f) for f in facts if f)
        return f"{names} ({where})" if where else names


def _hardware(merged: dict[str, Any], path: Path) -> Platform | None:
    """The results' platform (``--diffperf-hardware``'s, as the run wrote it): DiffperfError naming the file."""
    text = merged.get("hardware")
    if text is None:
        return None
    try:
        if not isinstance(text, str):
            raise BadValue(f"expected a platform name, got {describe_type(text)}")
        return platform_value(text)
    except BadValue as exc:
        raise DiffperfError(str(exc), source=str(path), key="hardware") from None


@dataclass
class Plan:
    """What accept does: each scenario's measured entry, and what it leaves alone or refuses."""

    entries: dict[str, tuple[dict[str, Any], str | None]] = field(default_factory=dict)  # id -> (entry, regression)
    notes: list[str] = field(default_factory=list)  # scenarios left as they are, and why
    refused: dict[str, str] = field(default_factory=dict)  # id -> one line: results file, scenario, why
    busy: list[str] = field(default_factory=list)  # accepted though measured busy (--accept-busy): id and figures


def plan(
    inputs: Inputs,
    baselines: BaselineSet,
    settings: RegenSettings,
    select: Callable[[str], bool],
    side: str | None,
    accept_busy: bool = False,
) -> Plan:
    """Each selected scenario's measured entry, or why it is left alone or refused (measured busy: unless
    ``accept_busy``, then listed in ``busy``)."""
    out = Plan()
    profile = inputs.merged.get("profile")
    profiles = set(baselines.tolerances) - {LEGACY_PROFILE}
    for result in results_of(inputs.merged):
        sid = result.scenario
        if not select(sid):
            continue
        key_problem = name_problem(sid)  # the loader's key rule: a key it refuses is never written
        if key_problem:
            out.refused[sid] = f"{inputs.file_of[sid]}: scenario {sid!r} cannot be a baseline key: {key_problem}"
            continue
        where = f"{inputs.file_of[sid]}: scenario {sid}"
        if result.verdict == "skipped":
            out.notes.append(f"{sid}: skipped in the run ({result.message or 'no reason given'}): left as it is")
            continue
        problem = _refusal(result, side)
        busy = measured_busy(result.interference, result.ab.busy_pairs if result.ab else 0) if problem is None else None
        if busy is not None and not accept_busy:
            problem = f"{busy}: figures of a busy machine are no baseline (they hide slowdowns); {QUIET}"
        if problem is None and settings.policy == "improve" and profile and profiles and profile not in profiles:
            source = baselines.source.get(sid, baselines.primary)
            problem = (
                f"judged with profile {profile!r}, which {source} does not define ({', '.join(sorted(profiles))}): "
                "improve takes the run's verdict as 'no regression', and that verdict used other tolerances"
            )
        if problem is None:
            try:
                entry = measured_entry(result, inputs.rows.get(sid, []), side if result.ab is not None else None)
            except DiffperfError as exc:
                problem = str(exc)
            else:
                out.entries[sid] = (entry, _regression(result, profile))
                out.busy += [f"{sid} {busy}"] if busy is not None else []
                continue
        out.refused[sid] = f"{where}: {problem}"
    return out


def _refusal(result: ScenarioResult, side: str | None) -> str | None:
    if result.verdict == "error":
        return f"errored in the run ({result.message.splitlines()[0] if result.message else 'no message'})"
    if result.consistency_status == "fail":
        return "failed its consistency check: figures of a wrong output are not a baseline"
    if result.ab is not None and side is None:
        return "was measured in an A/B run (base and candidate servers): pass --from candidate (or --from base)"
    if result.measurement is None:
        return "has no measured requests in the run"
    return None


def _regression(result: ScenarioResult, profile: str | None) -> str | None:
    """The run's failing checks, for improve's "no regression" (None when it judged none)."""
    if result.verdict != "fail":
        return None
    failed = [c.name for c in result.checks if c.verdict in ("fail", "missing")]
    return f"{', '.join(failed) or 'its checks'} failed (profile {profile})"


def regenerator(
    inputs: Inputs,
    baselines: BaselineSet,
    settings: RegenSettings,
    scenario_ids: Sequence[str],
    *,
    force: bool,
    description: str | None,
    announce: Callable[[str], None],
    busy: Sequence[str] = (),
) -> Regenerator:
    """The regenerator that writes the accepted scenarios, after the platform check of every target file
    against the device each results file was measured on (``guard``) and, unless a dry run, their writability."""
    hardware = inputs.hardware
    warnings = []
    for path, doc in inputs.docs:
        mine = {s["scenario"] for s in doc["scenarios"]} & set(scenario_ids)
        provenance = doc.get("provenance") or {}
        targets = {target_file(baselines, hardware, sid) for sid in mine}
        device = provenance.get("device") or f"an unknown device (no provenance in {path})"
        warnings += check_platforms(targets, hardware, device, provenance.get("measured_platform"), force, accept=True)
    provenance = inputs.merged.get("provenance") or {}
    device, platform = provenance.get("device"), provenance.get("measured_platform")
    metadata = run_metadata(
        settings.policy, hardware, baselines.primary.parent,
        measured_on=f"{device} ({platform or 'platform unknown'})" if device else "",
        description=description, tool=SOURCE, source_run=inputs.run_line(), commit=provenance.get("commit"),
        device=device, runner=provenance.get("runner"),
    )  # fmt: skip
    if busy:
        metadata[BUSY_KEY] = busy_note(busy)
    if not settings.dry_run:
        for sid in scenario_ids:
            check_writable(target_file(baselines, hardware, sid))
    return Regenerator(settings, baselines, hardware, metadata, announce, tuple(warnings))
