"""``--diffperf-dry-run``: each scenario's server command, environment and request, printed; nothing is started.

The commands are checked against ``Launcher.server_command`` for the ports printed, and against
``diffperf compare --dry-run``; under xdist, each worker's ports come from its own range.
"""

from __future__ import annotations

import json
import re
import shlex
import sys

import pytest

from pytest_diffperf.cases import Case
from pytest_diffperf.launchers import ReferenceLauncher, ServerSpec
from pytest_diffperf.serving.client import request_body
from pytest_diffperf.serving.process import ServerPorts
from tests.support.compare import compare_here
from tests.support.suite import GENEROUS, refservers, results, tiny_case

URL = "https://example.invalid/inputs/kitten.jpg"  # never fetched: a dry run downloads nothing
PORT_FLAGS = ("--port", "--scheduler-port", "--master-port")


def fullmatch(pattern: str, text: str) -> re.Match[str]:
    match = re.fullmatch(pattern, text)
    assert match is not None, text
    return match


def plans(out: str) -> dict[str, list[str]]:
    """The dry-run section's blocks, by scenario: the title's parenthesis first, then the block's lines."""
    section = out.split(" diffperf dry run ", 1)[1].split("\n=", 1)[0]
    blocks = section.strip("= \n").split("\n\n")[1:]
    found = {}
    for block in blocks:
        title, *lines = block.splitlines()
        scenario, where = fullmatch(r"(\S+) \((.*)\)", title).groups()
        found[scenario] = [where, *lines]
    return found


def ports_of(command: list[str]) -> ServerPorts:
    return ServerPorts(*(int(command[command.index(flag) + 1]) for flag in PORT_FLAGS))


def server_line(block: list[str]) -> list[str]:
    line = next(line for line in block if line.startswith("  server:  "))
    return shlex.split(line.removeprefix("  server:  "))


@pytest.fixture
def cases(suite):
    edit = tiny_case(
        "edit",
        model="tiny/flux-kontext-edit",
        task="image-edit",
        prompt="make it night",
        reference_image=URL,
        sglang_request_extra={"cache_dit_params": {"warmup": 2}},
    )
    listed = [
        tiny_case("a"),
        tiny_case("b", seed=2),
        tiny_case("off", run_perf_check=False),
        edit,
        tiny_case("new", "--inject-delay DenoisingStage=1"),
    ]
    scenarios = dict.fromkeys(("a", "b", "off", "edit", "orphan"), GENEROUS)
    return listed, suite(listed, scenarios)


def test_each_scenario_is_planned_and_skipped_and_nothing_starts(pytester, cases):
    listed, args = cases
    result = pytester.runpytest(*args, "--diffperf-dry-run", "-rfs")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the scenario without a case and the case without a baseline
    result.assert_outcomes(skipped=4, failed=2)
    assert not refservers()
    verdicts = {s["scenario"]: s["verdict"] for s in results(pytester)["scenarios"]}
    assert verdicts == {"a": "skipped", "b": "skipped", "off": "skipped", "edit": "skipped"} | {
        "orphan": "fail",
        "new": "fail",
    }  # fmt: skip: what a run makes of them, counted as such by diffperf merge
    result.stdout.fnmatch_lines(
        [
            "  new (fail): case 'new' has no baseline scenario in",
            "      */baselines.json:",
            "      a run measures it and fails, printing the baseline to add (pytest",
            "FAILED baselines.json::orphan - scenario 'orphan' has a baseline in *",
            "FAILED baselines.json::new - case 'new' has no baseline scenario in *",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "diffperf: dry run: nothing is started; each scenario's plan is printed at the end",
            "diffperf: 1 scenario(s) without a case (they fail): orphan",
            "diffperf: 1 case(s) without a baseline scenario (they fail, printing the baseline to add; pytest --regen-baselines -k ID writes it): new",
            "*6 scenario(s); nothing was started",
            "SKIPPED*a: dry run, nothing started",
        ]
    )
    found = plans(result.stdout.str())
    assert list(found) == ["a", "b", "off", "edit", "orphan", "new"]  # server groups adjacent, as a run goes
    by_id = {c["id"]: Case.model_validate(c) for c in listed}

    a = found["a"]
    assert a[0] == "this run"
    command = server_line(a)
    spec = ServerSpec.for_case(by_id["a"], "reference")
    assert command == ReferenceLauncher().server_command(spec, ports_of(command))  # the pool's own command
    assert command[:4] == [sys.executable, "-m", "pytest_diffperf.refserver", "serve"]
    found_workdir = re.search(r"diffperf: server logs in (\S+)/server-N/", result.stdout.str())
    assert found_workdir is not None, result.stdout.str()
    workdir = found_workdir.group(1)
    assert a[2] == f"  env:     SGLANG_DIFFUSION_STAGE_LOGGING=1 SGLANG_PERF_LOG_DIR={workdir}/server-1"
    assert a[3] == f"  request: POST /v1/images/generations {json.dumps(request_body(by_id['a']))}"
    assert a[4:] == ["  requests: 0 warmup + 1 measured, 120 s each", "  judged:  every check of its baseline, profile pr_test"]  # fmt: skip

    assert found["b"][1] == "  server:  the one of a (same settings)"
    assert found["off"][-1] == "  judged:  e2e and load only (run_perf_check false), profile pr_test"

    edit = found["edit"]
    assert edit[2].endswith(f"SGLANG_PERF_LOG_DIR={workdir}/server-2")
    fields = {**{k: v if isinstance(v, str) else json.dumps(v) for k, v in request_body(by_id["edit"]).items()}}
    assert edit[3] == f"  request: POST /v1/images/edits multipart fields {json.dumps(fields)} file image={URL}"
    assert fields["cache_dit_params"] == '{"warmup": 2}'  # JSON, as the server's form parser reads it

    assert found["orphan"] == ["this run", "  not run: no case definition (a run fails it, naming the case to add)"]
    assert found["new"][-1] == "  judged:  fails: no baseline scenario (a run prints the baseline to add)"
    assert not list((pytester.path).glob("**/server.log"))


def test_a_dry_run_without_a_run_is_a_usage_error(pytester):
    result = pytester.runpytest("--diffperf-dry-run")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: diffperf: --diffperf-dry-run: plans a run's scenarios: pass --diffperf PROFILE too"]
    )


def test_a_scenario_skipped_for_its_devices_says_why(pytester, suite, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")
    args = suite([tiny_case("two_gpus", num_gpus=2)], {"two_gpus": GENEROUS})
    result = pytester.runpytest(*args, "--diffperf-dry-run")
    assert result.ret == 0
    assert plans(result.stdout.str())["two_gpus"][1:] == [
        "  not run: needs 2 devices (num_gpus) but this run has 1 (CUDA_VISIBLE_DEVICES=7)"
    ]


@pytest.mark.server
def test_diffperf_compare_shows_the_same_command(pytester, cases, capsys):
    _listed, args = cases
    found = plans(pytester.runpytest(*args, "--diffperf-dry-run").stdout.str())
    assert compare_here("--config", str(pytester.path / "cases.json"), "--frameworks", "reference", "--dry-run") == 0
    out = capsys.readouterr().out
    blocks = {b.splitlines()[0].split(" ", 1)[0]: b.splitlines() for b in out.split("\n\n")[1:]}
    for scenario in ("a", "edit", "new"):
        theirs = shlex.split(blocks[scenario][1].removeprefix("  server:  "))
        ours = server_line(found[scenario])
        assert ports_of(theirs) == ServerPorts(30000, 30002, 30003)  # the compare dry run's illustrative ports
        for flag in PORT_FLAGS:
            ours[ours.index(flag) + 1] = theirs[theirs.index(flag) + 1]
        assert ours == theirs, scenario
        assert blocks[scenario][3] == found[scenario][3], scenario  # the request line


@pytest.mark.server  # a real pytest run with two xdist worker processes
def test_xdist_workers_plan_their_servers_on_ports_of_their_own_ranges(pytester, suite):
    listed = [tiny_case("a1"), tiny_case("b1", "--inject-delay DenoisingStage=1")]
    args = suite(listed, {c["id"]: GENEROUS for c in listed})
    result = pytester.runpytest_subprocess(*args, "-n", "2", "--diffperf-dry-run")
    assert result.ret == 0
    result.assert_outcomes(skipped=2)
    found = plans(result.stdout.str())
    taken: dict[str, set[int]] = {}
    for scenario, block in found.items():
        worker, start, stop = fullmatch(r"xdist worker (gw\d), ports (\d+)-(\d+)", block[0]).groups()
        ports = ports_of(server_line(block))
        used = {ports.http, ports.http + 1, ports.scheduler, ports.master}  # port + 1: the server's broker
        assert len(used) == 4, scenario
        assert all(int(start) <= port <= int(stop) for port in used), (scenario, block[0], used)
        taken[worker] = used
    assert sorted(taken) == ["gw0", "gw1"]  # one server group per worker
    assert not taken["gw0"] & taken["gw1"]
