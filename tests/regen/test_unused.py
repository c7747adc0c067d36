"""What no case uses: in `diffperf lint` (and `--prune`), on SGLang 0.5.23's real h100 files and the bundled
data, and at the end of a pytest run over a whole baseline file."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from pytest_diffperf.cli import main
from tests.support.paths import REPO, SGLANG_DATA

V0523 = SGLANG_DATA / "v0.5.23"
GPU_CASES = V0523 / "src" / "sglang" / "multimodal_gen" / "test" / "server" / "gpu_cases.py"
BUNDLED_OPTIONS = ["--diffperf-server=reference", "--diffperf-hardware=cpu", "--diffperf-clip-model=diffperf-tiny",
                   "--diffperf-clip-pretrained=none", "-p", "no:cacheprovider"]  # fmt: skip

needs_sglang = pytest.mark.skipif(not GPU_CASES.is_file(), reason="the vendored SGLang 0.5.23 files are absent")


def unused_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if ": warning: unused " in line]


@pytest.mark.server
@needs_sglang
def test_sglang_0_5_23_h100_two_scenarios_no_case_defines_and_thresholds_every_platform_uses(tmp_path, capsys):
    sglang = tmp_path / "sglang"
    for folder in ("perf_baselines", "consistency_thresholds", "ascend"):
        shutil.copytree(V0523 / folder, sglang / folder)
    args = [str(sglang / "perf_baselines"), str(sglang / "consistency_thresholds"), "--hardware=h100"]
    assert main(["lint", *args, f"--cases={GPU_CASES}"]) == 0
    h100 = sglang / "perf_baselines" / "h100.json"
    assert unused_lines(capsys.readouterr().out) == [
        f"{h100}:{sid}:-: warning: unused baseline scenario: no case defines it (diffperf lint --prune removes it)"
        for sid in ("ideogram4_fp8_t2i", "flux2_modelopt_fp8_t2i")
    ]
    # The 2 thresholds entries h100's cases do not name are B200's (b200 merges h100.json under its own file):
    # unused on h100, used on B200, so they stay.
    thresholds_before = (sglang / "consistency_thresholds" / "h100.json").read_bytes()
    before = h100.read_text()
    assert main(["lint", *args, f"--cases={GPU_CASES}", "--prune"]) == 0
    out = capsys.readouterr().out
    assert out.index(f"--- {h100}") < out.index("pruned 2 unused entries (1 file(s) changed)")
    after = json.loads(h100.read_text())
    assert set(json.loads(before)["scenarios"]) - set(after["scenarios"]) == {
        "ideogram4_fp8_t2i",
        "flux2_modelopt_fp8_t2i",
    }
    assert (sglang / "consistency_thresholds" / "h100.json").read_bytes() == thresholds_before
    removed = [line for line in before.splitlines() if line not in h100.read_text().splitlines()]
    assert removed[0].strip() == '"ideogram4_fp8_t2i": {' and len(removed) < len(before.splitlines()) // 10
    assert main(["lint", *args, f"--cases={GPU_CASES}"]) == 0  # nothing left to say
    assert unused_lines(capsys.readouterr().out) == []


@pytest.fixture
def bundled(tmp_path) -> Path:
    """A copy of the bundled data with a scenario, a thresholds entry and a ground-truth file no case uses."""
    data = tmp_path / "data"
    shutil.copytree(REPO / "data", data)
    baselines = json.loads((data / "perf_baselines" / "cpu.json").read_text())
    text = (data / "perf_baselines" / "cpu.json").read_text()
    entry = json.dumps(baselines["scenarios"]["sd_tiny_t2i"], indent=4).replace("\n", "\n        ")
    (data / "perf_baselines" / "cpu.json").write_text(
        text.replace('"scenarios": {', f'"scenarios": {{\n        "gone_t2i": {entry},', 1)
    )
    thresholds = json.loads((data / "consistency_threshold.json").read_text())
    thresholds.setdefault("cases", {})["gone_t2i"] = {"clip_threshold": 0.9}
    (data / "consistency_threshold.json").write_text(json.dumps(thresholds, indent=2))
    shutil.copy(data / "ground_truth" / "sd_tiny_t2i_1gpu.png", data / "ground_truth" / "gone_t2i_1gpu.png")
    manifest = json.loads((data / "ground_truth" / "manifest.json").read_text())
    manifest["files"]["gone_t2i_1gpu.png"] = manifest["files"]["sd_tiny_t2i_1gpu.png"]
    (data / "ground_truth" / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return data


def test_bundled_data_has_nothing_unused(capsys):
    data = REPO / "data"
    assert main(["lint", str(data), f"--gt-dir={data / 'ground_truth'}", "--hardware=cpu"]) == 0
    assert unused_lines(capsys.readouterr().out) == []


def test_lint_names_each_unused_entry_with_its_file_and_prune_removes_them(bundled, capsys):
    args = ["lint", str(bundled), f"--gt-dir={bundled / 'ground_truth'}", "--hardware=cpu"]  # the case file: in it
    assert main(args) == 0
    assert unused_lines(capsys.readouterr().out) == [
        f"{bundled}/ground_truth/gone_t2i_1gpu.png:gone_t2i:-: warning: unused ground-truth file: no case compares "
        "its output with it (diffperf lint --prune removes it)",
        f"{bundled}/perf_baselines/cpu.json:gone_t2i:-: warning: unused baseline scenario: no case defines it "
        "(diffperf lint --prune removes it)",
        f"{bundled}/consistency_threshold.json:gone_t2i:-: warning: unused thresholds entry: no such case "
        "(diffperf lint --prune removes it)",
    ]
    assert main([*args, "--strict"]) == 1
    snapshot = {p: p.read_bytes() for p in bundled.rglob("*") if p.is_file()}
    assert main([*args, "--prune", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"delete {bundled}/ground_truth/gone_t2i_1gpu.png" in out and '-        "gone_t2i": {' in out
    assert "pruned 3 unused entries (dry run, nothing changed)" in out
    assert {p: p.read_bytes() for p in bundled.rglob("*") if p.is_file()} == snapshot
    assert main([*args, "--prune"]) == 0
    assert (bundled / "perf_baselines" / "cpu.json").read_bytes() == (
        REPO / "data/perf_baselines/cpu.json"
    ).read_bytes()
    assert "gone_t2i" not in json.loads((bundled / "consistency_threshold.json").read_text()).get("cases", {})
    assert not (bundled / "ground_truth" / "gone_t2i_1gpu.png").exists()
    manifest = json.loads((bundled / "ground_truth" / "manifest.json").read_text())
    assert manifest == json.loads((REPO / "data/ground_truth/manifest.json").read_text())
    assert main(args) == 0
    assert unused_lines(capsys.readouterr().out) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--prune"], "diffperf lint: error: --prune: needs the cases to know what is unused: pass --cases FILE"),
        (["--dry-run", "--cases=data/cases.json"], "diffperf lint: error: --dry-run: only applies with --prune"),
    ],
)
def test_prune_user_errors(capsys, monkeypatch, args, message):
    monkeypatch.chdir(REPO)
    assert main(["lint", "data/perf_baselines/cpu.json", *args]) == 2
    assert capsys.readouterr().err.strip() == message


def files_of(folder: Path) -> dict[str, bytes | str]:
    """Every file under ``folder`` (a link as its target)."""
    return {
        str(p): f"-> {p.readlink()}" if p.is_symlink() else p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() or p.is_symlink()
    }


def refused_prune(capsys, bundled: Path, *args: str) -> str:
    """stderr of a --prune refused with exit 2, checked to have changed nothing under ``bundled``'s folder."""
    before = files_of(bundled.parent)
    assert main(["lint", str(bundled), "--hardware=cpu", "--prune", *args]) == 2
    assert files_of(bundled.parent) == before
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err.replace(str(bundled), "DATA")


def test_prune_deletes_nothing_while_a_linted_case_file_does_not_parse(bundled, capsys):
    (bundled / "more_cases.json").write_text('{"cases": [')  # its cases would count as absent
    err = refused_prune(capsys, bundled, f"--gt-dir={bundled / 'ground_truth'}")
    assert err.startswith("diffperf lint: error: --prune: 1 error(s) in the linted files, the first: DATA/more_cases")
    assert "invalid JSON" in err and err.rstrip().endswith("(--prune removes nothing while an input is broken)")


def test_prune_against_a_case_file_without_cases_removes_nothing(bundled, capsys, tmp_path):
    empty = tmp_path / "none.json"
    empty.write_text('{"cases": []}')
    err = refused_prune(capsys, bundled, f"--cases={empty}")
    assert err.strip() == (
        f"diffperf lint: error: {empty}: defines no case: every entry would be unused; --prune removes nothing "
        "against it"
    )


def test_prune_never_follows_a_link_out_of_the_ground_truth_folder(bundled, capsys, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "gone_t2i_1gpu.png").write_bytes((bundled / "ground_truth" / "gone_t2i_1gpu.png").read_bytes())
    (bundled / "ground_truth" / "gone_t2i_1gpu.png").unlink()
    (bundled / "ground_truth" / "gone_t2i_1gpu.png").symlink_to(outside / "gone_t2i_1gpu.png")
    before = files_of(outside)
    err = refused_prune(capsys, bundled, f"--gt-dir={bundled / 'ground_truth'}")
    assert err.startswith("diffperf lint: error: DATA/ground_truth/gone_t2i_1gpu.png: leads out of the ground-truth")
    assert files_of(outside) == before


def test_prune_never_rewrites_a_manifest_linked_from_elsewhere(bundled, capsys, tmp_path):
    manifest = bundled / "ground_truth" / "manifest.json"
    elsewhere = tmp_path / "manifest.json"
    elsewhere.write_bytes(manifest.read_bytes())
    manifest.unlink()
    manifest.symlink_to(elsewhere)
    before = elsewhere.read_bytes()
    err = refused_prune(capsys, bundled, f"--gt-dir={bundled / 'ground_truth'}")
    assert err.startswith("diffperf lint: error: DATA/ground_truth/manifest.json: leads out of the ground-truth")
    assert elsewhere.read_bytes() == before


def test_prune_that_would_leave_a_file_the_loader_refuses_changes_nothing(bundled, capsys):
    path = bundled / "perf_baselines" / "cpu.json"
    doc = json.loads(path.read_text())
    doc["runner_overrides"] = {"ci-": {"gone_t2i": {"expected_e2e_ms": 1.0}}}  # names the pruned scenario
    path.write_text(json.dumps(doc, indent=4))
    err = refused_prune(capsys, bundled)
    assert err.startswith("diffperf lint: error: DATA/perf_baselines/cpu.json: runner_overrides.ci-.gone_t2i: ")


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_a_gt_dir_that_is_no_folder_is_one_line(bundled, capsys, kind):
    given = bundled / ("nope" if kind == "missing" else "cases.json")
    err = refused_prune(capsys, bundled, f"--gt-dir={given}")
    what = "not found" if kind == "missing" else "is not a folder"
    assert err.strip() == f"diffperf lint: error: --gt-dir: {given}: {what}; expected the ground-truth folder".replace(
        str(bundled), "DATA"
    )


@pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in ("torch", "open_clip", "skimage")),
    reason="the run checks the bundled outputs: needs the consistency extra (not in a plugin-only install)",
)
def test_a_run_over_the_whole_file_ends_with_what_no_case_uses_and_k_does_not(pytester, bundled):
    shutil.copytree(bundled, pytester.path / "data")
    options = [
        "--diffperf=pr_test", "--diffperf-baselines=data/perf_baselines/cpu.json", "--diffperf-cases=data/cases.json",
        "--diffperf-gt-dir=data/ground_truth", "--diffperf-thresholds=data/consistency_threshold.json",
        *BUNDLED_OPTIONS, "--collect-only",
    ]  # fmt: skip
    result = pytester.runpytest(*options)
    result.stdout.fnmatch_lines(
        [
            "*= diffperf: unused entries =*",
            "*/data/perf_baselines/cpu.json: gone_t2i: unused baseline scenario: no case defines it*",
            "*/data/consistency_threshold.json: gone_t2i: unused thresholds entry: no such case*",
            "*/data/ground_truth/gone_t2i_1gpu.png: gone_t2i: unused ground-truth file: *",
            "diffperf: diffperf lint */data/perf_baselines/cpu.json */data/consistency_threshold.json "
            "--cases=*/data/cases.json --gt-dir=*/data/ground_truth --prune --hardware cpu removes them",
        ]
    )
    assert "unused entries" not in pytester.runpytest(*options, "-k", "flux").stdout.str()
