"""Every ``sglang serve`` command line SGLang's own harness builds for its GPU cases parses in the reference CLI.

The command lines come from SGLang's real ``diffusion_server`` fixture and ``ServerManager.start``
(test_server_common.py:160-199, test_server_utils.py:401-414), run on every case of the vendored
``gpu_cases.py`` with the process spawn replaced by a recorder.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_diffperf.refserver import cli, sglang_flags
from tests.support import sglang

pytestmark = pytest.mark.skipif(not sglang.available(), reason="vendored SGLang sources absent")


class _Spawned(Exception):
    def __init__(self, command: list[str]):
        super().__init__(command)
        self.command = command


@pytest.fixture(scope="module")
def harness():
    return sglang.load_harness()


def _command_lines(harness, monkeypatch, tmp_path) -> dict[str, list[str]]:
    monkeypatch.setenv("SGLANG_PERF_LOG_DIR", str(tmp_path))
    utils, cases = harness.utils, harness.gpu_cases

    def record(command, **kwargs):
        raise _Spawned(command)

    monkeypatch.setattr(utils, "subprocess", SimpleNamespace(Popen=record, PIPE=-1, STDOUT=-2))
    fixture = harness.diffusion_server
    lines = {}
    every = [c for name in dir(cases) if name.endswith("_CASES") for c in getattr(cases, name)]
    for case in every:
        with pytest.raises(_Spawned) as spawned:
            next(fixture(case))
        lines[case.id] = spawned.value.command
    return lines


def test_every_gpu_case_command_line_is_accepted_or_rejected_with_a_message(harness, monkeypatch, tmp_path, capsys):
    lines = _command_lines(harness, monkeypatch, tmp_path)
    assert len(lines) >= 80
    flags_seen: set[str] = set()
    rejected = []
    for case_id, command in lines.items():
        assert command[:2] == ["sglang", "serve"], case_id
        argv = ["serve", *command[2:]]
        argv[argv.index("--model-path") + 1] = "tiny/flux-t2i"  # the reference server serves its own models
        parser = cli.build_parser()
        if "--lora-path" in argv:
            with pytest.raises(SystemExit):
                parser.parse_known_args(argv)
            assert "--lora-path: LoRA adapters are not supported" in capsys.readouterr().err
            rejected.append(case_id)
            continue
        args, extra = parser.parse_known_args(argv)
        _accepted, unknown = sglang_flags.drop_component_flags(extra)
        assert unknown == [], f"{case_id}: {unknown}"
        flags_seen.update(t.split("=", 1)[0] for t in command if t.startswith("--"))
        assert args.uvicorn_access_log_exclude_prefixes == ["/health"]
        assert args.strict_ports is True
    assert 0 < len(rejected) < 10, rejected
    # the harness's own flags and the families of case extras the table has to cover
    assert {"--warmup-sampling-params", "--uvicorn-access-log-exclude-prefixes", "--num-gpus", "--ulysses-degree"} <= (
        flags_seen
    )


def test_warmup_quality_pin_is_accepted_and_parsed(harness, monkeypatch, tmp_path):
    lines = _command_lines(harness, monkeypatch, tmp_path)
    pinned = [c for c in lines.values() if "--warmup-sampling-params" in c and "--lora-path" not in c]
    assert pinned
    for command in pinned:
        argv = ["serve", *command[2:]]
        argv[argv.index("--model-path") + 1] = "tiny/flux-t2i"
        args, _ = cli.build_parser().parse_known_args(argv)
        assert "quality" in args.warmup_sampling_params
        runs = cli.warmup_runs(args)
        assert all("quality" in run for run in runs)


def test_lora_path_is_rejected_with_a_message(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["serve", "--model-path", "tiny/flux-t2i", "--lora-path", "some/adapter"])
    assert exit_info.value.code == 2
    assert "--lora-path: LoRA adapters are not supported by the reference server" in capsys.readouterr().err


def test_unknown_flag_is_rejected(capsys):
    with pytest.raises(SystemExit):
        cli.main(["serve", "--model-path", "tiny/flux-t2i", "--no-such-flag", "1"])
    assert "unrecognized arguments: --no-such-flag 1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--strict-ports"], True),
        (["--strict-ports", "true"], True),
        (["--strict-ports", "false"], False),
        ([], False),
    ],
)
def test_strict_ports_is_a_store_boolean(argv, expected):
    args, _ = cli.build_parser().parse_known_args(["serve", "--model-path", "tiny/flux-t2i", *argv])
    assert args.strict_ports is expected


def test_component_flags_keep_their_values():
    accepted, unknown = sglang_flags.drop_component_flags(
        ["--vae-path=fal/x", "--transformer-path", "a/b", "--vae-config.use-parallel-decode", "--other"]
    )
    assert accepted == ["--vae-path=fal/x", "--transformer-path", "a/b", "--vae-config.use-parallel-decode"]
    assert unknown == ["--other"]
