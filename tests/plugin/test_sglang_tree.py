"""One scenario set on SGLang's real tree: ``diffperf plan``, pytest, ``--diffperf-shard K/N``, ``diffperf merge
--expect-all`` and ``diffperf lint`` agree on every platform, however the paths are written and from wherever
they run; NPU/MUSA scenarios carry their own file's node id; SGLang's conftest files stay out of the session.

The tree is SGLang 0.5.23's ``test/server`` folder as its wheel has it (``tests/support/sglang_tree``). Nothing
starts a server: collection (``--co``) or ``--diffperf-dry-run``.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from pytest_diffperf.platforms import fragment_platform
from pytest_diffperf.results.provenance import server_version
from tests.support import sglang_tree
from tests.support.cli import diffperf
from tests.support.sglang import available

pytestmark = pytest.mark.skipif(not available(), reason="the vendored SGLang files are absent")

# Each platform's scenario count: its baseline file's (NPU/MUSA: their fragment's) plus its cases without one.
# Before the one scenario set, a relative path counted 110 on h100 and none on npu.
# Scenarios of each platform's run; not among them: those whose cases are in suites the platform does not run
# (5090.json's lingbot_video_moe_t2v of 1-gpu, xpu_b60.json's fsdp-inference of 2-gpu, MUSA's 6 nightly ones).
COUNTS = {"h100": 87, "b200": 5, "5090": 6, "xpu_b60": 5, "rocm": 84, "npu": 13, "musa": 4}
SHARDS = 3


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SGLang's test/server folder (shared: the tests only read it)."""
    return sglang_tree.build(tmp_path_factory.mktemp("wheel"))


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """A working directory outside SGLang's tree."""
    return tmp_path


def plan(cwd: Path, baselines: str, cases: str, hardware: str) -> dict:
    result = diffperf("plan", baselines, f"--cases={cases}", f"--hardware={hardware}", f"--shards={SHARDS}", cwd=cwd)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def planned(matrix: dict) -> list[str]:
    return [sid for entry in matrix["include"] for sid in entry["scenarios"]]


def pytest_args(baselines: str, cases: str, hardware: str, *more: str) -> list[str]:
    return [
        "--diffperf=pr_test",
        f"--diffperf-baselines={baselines}",
        f"--diffperf-cases={cases}",
        f"--diffperf-hardware={hardware}",
        "-p", "no:cacheprovider",
        *more,
    ]  # fmt: skip


def node_ids(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if "::" in line]


def own_file(server: Path, scenario: str, hardware: str) -> str:
    """Where a scenario is defined, relative to the test/server folder (a case without one: its platform's file)."""
    stem = "h100" if hardware in ("rocm", "npu", "musa") else hardware
    fragment = {"npu": "ascend/perf_baselines_npu.json", "musa": "musa/perf_baselines_musa.json"}.get(hardware)
    for rel in (fragment, f"perf_baselines/{stem}.json"):
        if rel and scenario in json.loads((server / rel).read_text())["scenarios"]:
            return rel
    return fragment or f"perf_baselines/{stem}.json"


@pytest.mark.parametrize("hardware", sglang_tree.PLATFORMS)
def test_plan_is_the_same_for_a_relative_an_absolute_and_a_file_path(server, elsewhere, hardware):
    relative = plan(server, "perf_baselines", "gpu_cases.py", hardware)
    absolute = plan(elsewhere, str(server / "perf_baselines"), str(server / "gpu_cases.py"), hardware)
    stem = "h100" if hardware in ("rocm", "npu", "musa") else hardware
    root = server.parents[3]  # the folder holding sglang/: a wheel unpacked
    as_file = plan(root, str((server / "perf_baselines" / f"{stem}.json").relative_to(root)), ".", hardware)
    assert relative == absolute == as_file
    ids = planned(relative)
    assert len(ids) == len(set(ids)) == COUNTS[hardware]
    fragments = {own_file(server, sid, hardware) for sid in ids} - {f"perf_baselines/{stem}.json"}
    if hardware in ("npu", "musa"):
        assert {fragment_platform(Path(f)) for f in fragments} == {hardware}  # its fragment's scenarios alone
    else:
        assert fragments == set()  # no NPU or MUSA scenario on a GPU platform


@pytest.mark.parametrize("hardware", sglang_tree.PLATFORMS)
def test_pytest_collects_the_planned_scenarios_each_under_its_own_file(pytester, server, monkeypatch, hardware):
    monkeypatch.chdir(server)  # the maintainer's place: SGLang's test/server folder
    result = pytester.runpytest(*pytest_args("perf_baselines", "gpu_cases.py", hardware, "--co", "-q"))
    assert result.ret == 0, result.stdout.str()
    collected = node_ids(result)
    assert sorted(n.split("::")[1] for n in collected) == sorted(
        planned(plan(server, "perf_baselines", "gpu_cases.py", hardware))
    )
    assert [n.split("::")[0] for n in collected] == [own_file(server, n.split("::")[1], hardware) for n in collected]


@pytest.mark.parametrize("hardware", ["h100", "npu"])
def test_from_elsewhere_with_absolute_paths_pytest_collects_the_same(pytester, server, monkeypatch, hardware):
    absolute = pytest_args(str(server / "perf_baselines"), str(server / "gpu_cases.py"), hardware, "--co", "-q")
    outside = pytester.runpytest(*absolute)  # in pytester's folder
    monkeypatch.chdir(server)
    inside = pytester.runpytest(*pytest_args("perf_baselines", "gpu_cases.py", hardware, "--co", "-q"))
    names = [sorted(n.split("::")[1] for n in node_ids(r)) for r in (outside, inside)]
    assert names[0] == names[1] and len(names[0]) == COUNTS[hardware]


@pytest.mark.server
@pytest.mark.parametrize("hardware", ["h100", "npu"])
def test_each_shard_runs_its_plan_entry_and_merge_expects_exactly_them(
    pytester, server, elsewhere, monkeypatch, hardware
):
    matrix = plan(server, "perf_baselines", "gpu_cases.py", hardware)
    results = []
    monkeypatch.chdir(server)
    for entry in matrix["include"]:
        out = elsewhere / f"results-{entry['shard']}.json"
        shard = f"--diffperf-shard={entry['shard']}/{entry['of']}"
        run = pytester.runpytest(
            *pytest_args(
                "perf_baselines", "gpu_cases.py", hardware, shard, "--diffperf-dry-run", f"--diffperf-json={out}"
            )
        )
        ran = [s["scenario"] for s in json.loads(out.read_text())["scenarios"]]
        assert sorted(ran) == sorted(entry["scenarios"]), run.stdout.str()
        results.append(str(out))
    expect = [f"--expect-all={server / 'perf_baselines'}", f"--hardware={hardware}"]
    # the dry runs judged nothing: green only when asked; what a run fails before judging (no case, no baseline
    # scenario) fails here too
    unmatched = {"h100": "5 fail, 82 skipped", "npu": "13 skipped"}[hardware]
    merged = diffperf("merge", *results, *expect, cwd=elsewhere)
    assert merged.returncode == (1 if "fail" in unmatched else 5), merged.stdout
    assert f"scenarios: {unmatched}" in merged.stdout and "ran in no shard" not in merged.stdout, merged.stdout
    with_cases = diffperf(
        "merge", *results, "--expect-all=perf_baselines", f"--hardware={hardware}", "--cases=gpu_cases.py",
        "--allow-empty", cwd=server,
    )  # fmt: skip
    assert with_cases.returncode == (1 if "fail" in unmatched else 0), with_cases.stdout
    assert "ran in no shard" not in with_cases.stdout, with_cases.stdout
    short = diffperf("merge", *results[:-1], *expect, "--cases", str(server / "gpu_cases.py"), cwd=elsewhere)
    last = matrix["include"][-1]["scenarios"]
    assert short.returncode == 1
    assert f"{len(last)} scenario(s) of {server / 'perf_baselines'} ran in no shard: " in short.stdout
    assert set(short.stdout.split("ran in no shard: ")[1].splitlines()[0].split(", ")) == set(last)


@pytest.mark.parametrize("hardware", ["h100", "npu"])
def test_the_header_s_lint_count_is_the_lint_command_s(pytester, server, elsewhere, monkeypatch, hardware):
    monkeypatch.chdir(server)
    result = pytester.runpytest(*pytest_args("perf_baselines", "gpu_cases.py", hardware, "--co"))  # with the header
    (line,) = [line for line in result.outlines if line.startswith("diffperf: lint: ")]
    counted = int(line.removeprefix("diffperf: lint: ").split()[0])
    lint = diffperf("lint", "perf_baselines", f"--hardware={hardware}", cwd=server)
    assert lint.stdout.splitlines()[-1] == f"0 error(s), {counted} warning(s)"
    absolute = diffperf("lint", str(server / "perf_baselines"), f"--hardware={hardware}", cwd=elsewhere)
    assert absolute.stdout.splitlines()[-1] == lint.stdout.splitlines()[-1]
    scenarios = {line.split(":")[1] for line in lint.stdout.splitlines()[:-1]}
    assert scenarios <= set(planned(plan(server, "perf_baselines", "gpu_cases.py", hardware)))


def test_a_path_given_to_pytest_brings_the_fragment_beside_it(pytester, server, monkeypatch):
    monkeypatch.chdir(server)
    args = pytest_args("perf_baselines", "gpu_cases.py", "npu", "--co", "-q")
    folder = node_ids(pytester.runpytest(*args, "perf_baselines"))
    assert len(folder) == COUNTS["npu"] and all(n.startswith("ascend/perf_baselines_npu.json::") for n in folder)
    one = node_ids(pytester.runpytest(*args, "ascend/perf_baselines_npu.json::flux_image_t2i_npu"))
    assert one == ["ascend/perf_baselines_npu.json::flux_image_t2i_npu"]


def _imported(config: pytest.Config, server: Path) -> list[str]:
    """The SGLang conftest modules registered as pytest plugins (imported files)."""
    return [
        str(p.__file__)
        for p in config.pluginmanager.get_plugins()
        if getattr(p, "__file__", None) and Path(str(p.__file__)).is_relative_to(server)
    ]


def test_sglang_s_conftest_files_are_not_imported_into_the_session(pytester, server, monkeypatch):
    monkeypatch.chdir(server)
    seen: dict[str, list[str]] = {}

    class Probe:
        def pytest_collection_finish(self, session: pytest.Session) -> None:
            seen["plugins"] = _imported(session.config, server)

    result = pytester.runpytest(*pytest_args("perf_baselines", "gpu_cases.py", "npu", "--co"), plugins=[Probe()])
    assert result.ret == 0, result.stdout.str()
    assert seen["plugins"] == []
    result.stdout.fnmatch_lines(
        [f"diffperf: SGLang's own conftest files are not loaded (they serve its own tests): "
         f"{server / 'conftest.py'}, {server / 'ascend' / 'conftest.py'}",
         "*<BaselineFile perf_baselines_npu.json>",  # in ascend/, whose conftest imports the sglang package
         f"*{COUNTS['npu']} tests collected*"]
    )  # fmt: skip
    if importlib.util.find_spec("sglang") is None:  # the control: without the plugin pytest imports them, and fails
        plain = pytester.runpytest("-p", "no:cacheprovider", "--co", "-q", "ascend", plugins=[Probe()])
        plain.stderr.fnmatch_lines(["ImportError while loading conftest *ascend/conftest.py*"])
        assert seen["plugins"] == [] and plain.ret != 0


def test_a_user_s_own_conftest_beside_the_baselines_still_loads(pytester, server):
    (pytester.path / "perf_baselines").mkdir()
    (pytester.path / "perf_baselines" / "h100.json").write_bytes((server / "perf_baselines" / "h100.json").read_bytes())
    pytester.makeconftest("def pytest_report_header(config):\n    return ['users own conftest loaded']\n")
    result = pytester.runpytest(*pytest_args("perf_baselines", str(server / "gpu_cases.py"), "h100", "--co"))
    assert "users own conftest loaded" in result.stdout.str()
    assert result.ret == 0
    assert "SGLang's own conftest files are not loaded" in result.stdout.str()  # those of the case lists' folder


@pytest.mark.parametrize(
    ("hardware", "judged"),
    [
        ("h100", ["perf_baselines/h100.json"]),
        ("npu", ["perf_baselines/h100.json", "ascend/perf_baselines_npu.json"]),
        ("musa", ["perf_baselines/h100.json", "musa/perf_baselines_musa.json"]),
    ],
)
def test_one_truthful_header(pytester, server, monkeypatch, hardware, judged):
    """The release detected once and shown once; only the files judged on this platform listed (as paths)."""
    monkeypatch.chdir(server)
    result = pytester.runpytest(*pytest_args("perf_baselines", "gpu_cases.py", hardware, "--co"))
    header = [line for line in result.outlines if line.startswith("diffperf: ")]
    (files,) = [line for line in header if line.startswith("diffperf: baselines=")]
    assert files == "diffperf: baselines=" + ", ".join(str(server / f) for f in judged)
    assert [line for line in header if "0.5.23" in line] == [
        f"diffperf: SGLang's case lists {server / 'gpu_cases.py'} of release 0.5.23 (its harness has "
        f"lead_sampling_params: 0.5.23 or later) as on {hardware} (loaded with stand-ins): "
        + line.split(" (loaded with stand-ins): ")[1]
        for line in header
        if line.startswith("diffperf: SGLang's case lists ")
    ]
    (provenance,) = [line for line in header if line.startswith("diffperf: pytest-diffperf ")]
    installed = server_version("sglang")  # the server's version, not the case lists'
    assert f"sglang {installed or '(not installed here)'}, " in provenance
    assert "version unknown" not in result.stdout.str()
