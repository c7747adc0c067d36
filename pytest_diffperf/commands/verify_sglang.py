"""`diffperf verify-sglang [SOURCE]`: SGLang's own harness of a release against what the plugin sends and starts.

For every case of the chosen suites, SGLang's ``get_generate_fn`` runs through the openai SDK the release
pins (``sglang.openaipin``: installed once into the plugin's cache, this command run again with it first on
the path, where another is installed) over an httpx ``MockTransport``, and its ``diffusion_server`` fixture runs up to ``Popen``
(``sglang.harness``); the plugin's request (``client.request_body`` as ``client.post_arguments``
encodes it) and command (``Launcher.command`` and ``env``) for the converted case are built the
same way, without a network; the ground-truth lookup (``verify_sglang_gt``) and the judging
(``verify_sglang_judging``: synthetic measurements through the release's own validator and the plugin's
limit engine) are compared too. Each case is equal, different (with the first difference), or not
expressible (with the reason); an unexplained difference exits 1. Offline, no GPU.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from .. import protocol
from .._util.jsonfile import validate
from .._util.text import format_table
from ..cases import Case, CaseFile
from ..serving import client
from ..serving.launchers import Launcher, ServerSpec
from ..sglang import caselist, harness, openaipin, release, semantics, standins
from ..sglang.casefile import convert_lists
from ..sglang.inference import PROBES
from ..sglang.source import locate
from . import verify_sglang_gt, verify_sglang_judging

PINNED_RUN_ENV = "DIFFPERF_VERIFY_OPENAI_PINNED"  # set in the run that has the release's openai pin first on the path


@dataclass(frozen=True)
class Verdict:
    case_id: str
    kind: str
    status: str  # equal | different | not expressible | skipped by SGLang | SGLang error
    detail: str = ""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "verify-sglang",
        help="check a release's own SGLang harness against what the plugin sends and starts, case by case",
        description="Load SGLang's own test harness of the release at SOURCE (get_generate_fn and the "
        "diffusion_server fixture), run it for every case of the suites without a network or a GPU, and compare "
        "the request body and the server command and environment with the plugin's for the converted case, and "
        "the judging: synthetic measurements through the release's own validator against the plugin's verdict. "
        "Step one on a new SGLang release. Exits 1 on any unexplained difference.",
        epilog="SOURCE: an sglang checkout, an unpacked wheel, its test/server folder's gpu_cases.py or "
        "testcase_configs.py, or 'sglang' (the installed package; default).",
    )
    parser.add_argument("source", nargs="?", default="sglang", metavar="SOURCE")
    parser.add_argument("--hardware", default="h100", help="platform the lists are read for (default h100)")
    parser.add_argument("--suite", action="append", metavar="NAME", help="an SGLang CI suite (repeatable)")
    parser.add_argument("--sglang-semantics", metavar="RELEASE", help="judge by this release's rules instead")
    parser.add_argument(
        "--openai-as-installed",
        action="store_true",
        help="run SGLang's harness with the installed openai even when the release pins another (default: the pin, "
        "installed once into the plugin's cache)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    started = time.monotonic()
    source = locate(args.source)
    harness.require_files(source)
    found = release.identify(source.root, installed=source.installed)
    pin = openaipin.pin_of(source, found.version)
    if openaipin.installed() != pin and not args.openai_as_installed:
        return _with_pin(args, found, pin)
    first = caselist.load(source, args.hardware)  # the task types of models no table knows, inferred
    loaded = harness.load(source, args.hardware, table=first.table, assumed=standins.Assumption(PROBES[0]))
    lists = caselist.from_modules(source, args.hardware, loaded.modules, first)
    data = convert_lists(lists, args.suite, args.sglang_semantics)
    case_file = validate(CaseFile, data, Path(str(args.source)), "")
    which = data["sglang_source"]
    rules = semantics.Semantics(release.parse(which["release"], "release"), which["release_from"])
    print(f"diffperf verify-sglang: SGLang {which['release']} ({which['release_from']}), {source.gpu_cases}")
    newer = semantics.newer_than_known(rules.release)
    if newer:
        print(f"diffperf verify-sglang: warning: SGLang {rules.release} is {newer}")
    for warning in which["warnings"]:
        print(f"diffperf verify-sglang: warning: {warning}")
    for note in which["notes"]:
        print(f"diffperf verify-sglang: note: {note}")
    if openaipin.installed() != pin:
        print(
            f"diffperf verify-sglang: warning: SGLang {found.version} pins openai=={pin}, the harness runs with openai "
            f"{openaipin.installed() or '(none)'}: its requests may differ from its CI's"
        )
    ours = {c.id: c for c in case_file.cases}
    reasons = {c.id: (c.reason, str((c.model_extra or {}).get("request", ""))) for c in case_file.not_expressible}
    verdicts: list[Verdict] = []
    with tempfile.TemporaryDirectory(prefix="diffperf-verify-") as tmp:
        image = _input_image(Path(tmp) / "input.jpg")
        for entry in lists.select(args.suite):
            verdicts.append(_verify(loaded, entry.case, ours.get(entry.case.id), reasons, image, Path(tmp), rules))
    sglang_cases = [e.case for e in lists.select(args.suite)]
    gt = verify_sglang_gt.compare_all(loaded, sglang_cases, ours, args.hardware)
    judging = verify_sglang_judging.compare_all(loaded, sglang_cases, ours, args.hardware)
    rows = [["case", "request", "status", "first difference / reason", "ground-truth lookup", "judging"]]
    rows += [
        [v.case_id, v.kind, v.status, v.detail, gt.get(v.case_id, ""), judging.get(v.case_id, "")] for v in verdicts
    ]
    print("\n".join(format_table(rows, right_from=None)))
    print(f"diffperf verify-sglang: ground-truth lookup: {verify_sglang_gt.summary(gt)}")
    print(f"diffperf verify-sglang: judging: {verify_sglang_judging.summary(judging)}")
    counts = {s: sum(v.status == s for v in verdicts) for s in dict.fromkeys(v.status for v in verdicts)}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items())
    print(f"diffperf verify-sglang: {len(verdicts)} case(s): {summary} ({time.monotonic() - started:.1f} s)")
    differs = verify_sglang_gt.differs(gt) or verify_sglang_judging.differs(judging)
    return 1 if counts.get("different") or counts.get("SGLang error") or differs else 0


def _verify(
    loaded: harness.Harness,
    tc: Any,
    case: Case | None,
    reasons: dict[str, tuple[str, str]],
    image: Path,
    tmp: Path,
    rules: semantics.Semantics,
) -> Verdict:
    if case is None:  # SGLang's harness is not run for it: it may need a server (websockets, plain HTTP)
        reason, kind = reasons.get(tc.id, ("not converted", ""))
        return Verdict(tc.id, kind, "not expressible", reason)
    try:
        return _compare(loaded, tc, case, image, tmp, rules)
    except harness.HarnessFailed as exc:  # SGLang's own code failed for this case: nothing to compare
        return Verdict(tc.id, "", "SGLang error", str(exc))


def _compare(
    loaded: harness.Harness, tc: Any, case: Case, image: Path, tmp: Path, rules: semantics.Semantics
) -> Verdict:
    """The case's request, then its command and environment, SGLang's against the plugin's."""
    theirs = harness.request_of(loaded, tc, image)
    if theirs.body is None:
        return Verdict(tc.id, theirs.function, "skipped by SGLang", theirs.skipped)
    mine = _plugin_request(case, image)
    if mine != theirs.body:
        return Verdict(tc.id, theirs.function, "different", "request: " + _first_difference(theirs.body, mine))
    started = harness.command_of(loaded, tc, tmp / "perf")
    if isinstance(started, str):
        return Verdict(tc.id, theirs.function, "skipped by SGLang", f"fixture: {started}")
    command, env = started
    spec = ServerSpec.for_case(case, "sglang")
    launcher = Launcher()
    our_command = launcher.command(spec, harness.PORT)
    explained = [
        row
        for row in semantics.TABLE
        if row.not_applied and not rules.has(row.name) and _flag_of(row.name) in our_command
    ]
    for row in explained:
        our_command = _without_flag(our_command, _flag_of(row.name))
    if our_command != command:
        return Verdict(tc.id, theirs.function, "different", "command: " + _first_difference(command, our_command))
    our_env = {**launcher.env(spec, perf_dir=tmp / "perf"), protocol.PERF_LOG_DIR_ENV: "-"}
    their_env = {**env, protocol.PERF_LOG_DIR_ENV: "-"}
    their_env.pop("SGLANG_TEST_SERVER_PORT", None)
    if our_env != their_env:
        return Verdict(tc.id, theirs.function, "different", "env: " + _first_difference(their_env, our_env))
    note = "; ".join(f"explained: the plugin adds {_flag_of(r.name)} (row {r.name})" for r in explained)
    return Verdict(tc.id, theirs.function, "equal", note)


NOT_APPLIED_FLAGS = {"strict_ports": "--strict-ports", "model_type_flag": "--model-type"}


def _flag_of(row: str) -> str:
    return NOT_APPLIED_FLAGS[row]


def _without_flag(command: list[str], flag: str) -> list[str]:
    """``command`` without ``flag`` (and its value where it takes one: --model-type diffusion)."""
    at = command.index(flag)
    return command[:at] + command[at + (2 if flag == "--model-type" else 1) :]


def _plugin_request(case: Case, image: Path) -> harness.Body:
    """The plugin's request for ``case``, encoded as ``client`` sends it and parsed as the server parses it."""
    body = client.request_body(case)
    reference = image if isinstance(case.reference_image, str) else None
    url = f"http://127.0.0.1:{harness.PORT}{client.endpoint(case)}"
    prepared = requests.Request("POST", url, **client.post_arguments(body, case, reference)).prepare()
    content = prepared.body if isinstance(prepared.body, bytes) else str(prepared.body or "").encode()
    return harness.decode(prepared.path_url, str(prepared.headers["Content-Type"]), content)


def _first_difference(theirs: Any, mine: Any) -> str:
    """Where two requests, commands or environments first differ, SGLang's side first."""
    if isinstance(theirs, harness.Body) and isinstance(mine, harness.Body):
        for name in ("path", "multipart", "files", "fields"):
            a, b = getattr(theirs, name), getattr(mine, name)
            if a != b:
                return f"{name} " + (_first_difference(a, b) if isinstance(a, dict) else f"SGLang {a!r}, plugin {b!r}")
    if isinstance(theirs, dict) and isinstance(mine, dict):
        for key in [*theirs, *(k for k in mine if k not in theirs)]:
            if theirs.get(key, "<absent>") != mine.get(key, "<absent>"):
                return f"{key}: SGLang {theirs.get(key, '<absent>')!r}, plugin {mine.get(key, '<absent>')!r}"
    if isinstance(theirs, list) and isinstance(mine, list):
        for index, (a, b) in enumerate(zip(theirs, mine, strict=False)):
            if a != b:
                return f"argument {index}: SGLang {a!r}, plugin {b!r}"
        longer, who = (theirs, "SGLang") if len(theirs) > len(mine) else (mine, "plugin")
        return f"{who} has more: {' '.join(longer[min(len(theirs), len(mine)) :])}"
    return f"SGLang {theirs!r}, plugin {mine!r}"


def _with_pin(args: argparse.Namespace, found: release.Release, pin: str) -> int:
    """This command again, in a process that imports openai ``pin`` (installed once into the plugin's cache)."""
    if os.environ.get(PINNED_RUN_ENV) == pin:  # the pinned folder did not take precedence: compare as it is
        args.openai_as_installed = True
        return run(args)
    folder = openaipin.pinned_folder(pin)
    print(
        f"diffperf verify-sglang: SGLang {found.version} pins openai=={pin} (openai {openaipin.installed() or 'none'} "
        f"is installed): its harness runs with openai {pin} from {folder}",
        flush=True,
    )
    command = [sys.executable, "-m", "pytest_diffperf.cli", "verify-sglang", str(args.source)]
    command += ["--hardware", args.hardware, *(f"--suite={s}" for s in args.suite or ())]
    command += [f"--sglang-semantics={args.sglang_semantics}"] if args.sglang_semantics else []
    path = os.pathsep.join([str(folder), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "PYTHONPATH": path, PINNED_RUN_ENV: pin}
    return subprocess.run(command, env=env, check=False).returncode


def _input_image(path: Path) -> Path:
    """A small JPEG standing in for each downloaded reference image (the same bytes reach both sides)."""
    from PIL import Image

    Image.new("RGB", (16, 16), (127, 127, 127)).save(path, format="JPEG")
    return path
