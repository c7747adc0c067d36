"""Other frameworks: launchers registered in-process or declared as entry points, with or without perf logs."""

from __future__ import annotations

import base64
import json
import sys
import textwrap

import pytest
import requests

from pytest_diffperf import protocol
from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.launchers import ReferenceLauncher, get_launcher
from pytest_diffperf.serving import launchers as launchers_module
from pytest_diffperf.serving import measure as runner
from pytest_diffperf.serving.client import Output, check_media, request_body
from tests.support.compare import compare_here, write_cases
from tests.support.suite import TOLERANCES, refservers, tiny_case

pytestmark = pytest.mark.server  # starts server processes


class NoLogLauncher(ReferenceLauncher):
    """The reference server with stage logging off: it writes no perf records, though expected to."""

    name = "nolog"

    def env(self, spec, perf_dir):
        env = super().env(spec, perf_dir)
        del env[protocol.STAGE_LOGGING_ENV]
        return env


class PlainHttpLauncher(ReferenceLauncher):
    """A framework without a perf log, with its own request adapter (a plain POST)."""

    name = "plainhttp"
    writes_perf_log = False

    def request(self, base_url, case, timeout):
        reply = requests.post(base_url + protocol.IMAGES_PATH, json=request_body(case), timeout=timeout).json()
        output = Output(reply["id"], "image", base64.b64decode(reply["data"][0]["b64_json"]), "png")
        check_media(output, case)
        return output


def test_missing_perf_records_are_counted_and_frameworks_without_a_log_have_no_server_figures(
    tmp_path, capsys, monkeypatch, launchers
):
    monkeypatch.setattr(runner, "PERF_RECORD_TIMEOUT_S", 0.5)
    launchers(NoLogLauncher(), PlainHttpLauncher())
    write_cases(tmp_path / "cases.json", [tiny_case("a")])
    code = compare_here(
        "--config", str(tmp_path / "cases.json"), "--frameworks", "nolog", "plainhttp", "--measurement-repeats", "2",
        "--output", str(tmp_path / "out.json"), "--log-dir", str(tmp_path / "logs"),
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, out + err
    nolog, plain = json.loads((tmp_path / "out.json").read_text())["results"]
    for row in (nolog, plain):
        assert row["error"] is None and len(row["latency_samples_s"]) == 2 and row["latency_s"] > 0
        assert row["server_latency_s"] is row["server_stage_medians_ms"] is row["median_denoise_step_ms"] is None
    assert (nolog["missing_perf_records"], plain["missing_perf_records"]) == (2, 0)
    assert "a (nolog): no perf record for request 1: server http://127.0.0.1:" in err
    assert "no perf record for request" in err and "after 0 s" in err
    assert "2 perf record(s) missing" in out
    assert not refservers()


def test_a_plugin_run_refuses_a_launcher_without_perf_log(pytester, monkeypatch):
    monkeypatch.setitem(launchers_module.LAUNCHERS, "plainhttp", PlainHttpLauncher())
    sampling = {"step_fractions": [0.0, 1.0]}
    baseline = {"metadata": {"hardware": "cpu"}, "tolerances": TOLERANCES, "sampling": sampling, "scenarios": {}}
    (pytester.path / "baselines.json").write_text(json.dumps(baseline))
    result = pytester.runpytest(
        "--diffperf=pr_test", "--diffperf-baselines=baselines.json", "--diffperf-hardware=cpu",
        "--diffperf-server=plainhttp", "-p", "no:cacheprovider",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: diffperf: --diffperf-server: launcher 'plainhttp' writes no perf log, which the checks need"]
    )


FAKE_MODULE = """
import shlex
from pytest_diffperf.launchers import Launcher


class FakeLauncher(Launcher):
    name = "fake"
    sglang_args = False
    writes_perf_log = False

    def command(self, spec, port):
        return ["fake-serve", spec.model, "--listen", f"127.0.0.1:{port}", *shlex.split(spec.serve_args)]

    def env(self, spec, perf_dir):
        return dict(spec.extra_env)

    def request(self, base_url, case, timeout):
        raise NotImplementedError

    def preview(self, case):
        return f"POST /prompt {case.prompt!r}"


class Misnamed(FakeLauncher):
    name = "other"


not_a_launcher = object()
"""


@pytest.fixture
def distribution(tmp_path, monkeypatch):
    """An installed distribution (a .dist-info on sys.path) declaring launchers in the entry-point group."""
    site = tmp_path / "site"
    (site / "fake_fw-0.1.dist-info").mkdir(parents=True)
    (site / "fake_fw-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-fw\nVersion: 0.1\n")
    (site / "fake_fw-0.1.dist-info" / "entry_points.txt").write_text(
        textwrap.dedent(
            """\
            [pytest_diffperf.launchers]
            fake = fake_fw_launchers:FakeLauncher
            misnamed = fake_fw_launchers:Misnamed
            notone = fake_fw_launchers:not_a_launcher
            broken = fake_fw_missing_module:Launcher
            """
        )
    )
    (site / "fake_fw_launchers.py").write_text(FAKE_MODULE)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(launchers_module, "LAUNCHERS", dict(launchers_module.LAUNCHERS))
    monkeypatch.delitem(sys.modules, "fake_fw_launchers", raising=False)
    return site


def test_an_entry_point_launcher_runs_the_cases_that_list_it(tmp_path, capsys, distribution):
    case = tiny_case("a", frameworks={"fake": {"serve_args": "--fast", "extra_env": {"FAKE_MODE": "1"}}, "sglang": {}})
    write_cases(tmp_path / "cases.json", [case, tiny_case("b")])
    assert compare_here("--config", str(tmp_path / "cases.json"), "--dry-run") == 0
    blocks = capsys.readouterr().out.split("\n\n")[1:]
    assert blocks[0].splitlines() == [
        "a (fake): tiny/flux-t2i, text-to-image",
        "  server:  fake-serve tiny/flux-t2i --listen 127.0.0.1:30000 --fast",
        "  env:     FAKE_MODE=1",
        "  request: POST /prompt 'a red bicycle'",
    ]
    assert [b.splitlines()[0] for b in blocks[1:]] == [f"{c} (sglang): tiny/flux-t2i, text-to-image" for c in "ab"]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("misnamed", "the launcher is named 'other', the entry point 'misnamed'"),
        ("notone", "expected a Launcher subclass or instance, got <object object at"),
        ("broken", "cannot load: ModuleNotFoundError: No module named 'fake_fw_missing_module'"),
    ],
)
def test_a_bad_entry_point_is_a_clear_error(distribution, name, message):
    with pytest.raises(DiffperfError) as info:
        get_launcher(name)
    assert str(info.value).startswith(f"entry point {name} = fake_fw_")
    assert f"(pytest_diffperf.launchers): {message}" in str(info.value)


def test_unknown_launcher_lists_entry_point_names(distribution):
    with pytest.raises(DiffperfError, match=r"unknown launcher 'nope'; known: broken, fake, misnamed, notone, reference, sglang$"):  # fmt: skip
        get_launcher("nope")


def test_a_framework_no_selected_case_lists_is_an_error(tmp_path, capsys, distribution):
    write_cases(tmp_path / "cases.json", [tiny_case("a")])
    assert compare_here("--config", str(tmp_path / "cases.json"), "--frameworks", "fake", "--dry-run") == 2
    out, err = capsys.readouterr()
    assert out == "" and err == "diffperf compare: error: --frameworks: no selected case lists any of: fake\n"
