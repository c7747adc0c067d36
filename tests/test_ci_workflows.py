"""docs/ci.md's GitHub Actions workflows, run: every ``run:`` step of every job, as written, in a git repository
that holds SGLang 0.5.23's tree at SGLang's paths (``python/sglang/multimodal_gen/test/server``), as a dry run.

A job whose matrix is a plan's output runs once per entry; ``${{ ... }}`` expressions get what GitHub would
give; pytest runs with ``--diffperf-dry-run`` (``PYTEST_ADDOPTS``) and ``-n 0`` for ``-n 4``; ``pip install``
steps are left out, and ``gh`` is a stand-in that lists one run and downloads the nightly's results. Every job
runs whatever its ``if:`` says, so that every command is tried; each workflow starts from a clean checkout.
Nothing starts a server, but the module runs about 25 pytest processes on SGLang's 87-scenario tree (minutes):
it is marked ``server`` to stay out of the fast tests.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import sglang_tree
from tests.support.paths import REPO
from tests.support.sglang import available

pytestmark = [
    pytest.mark.skipif(not available(), reason="the vendored SGLang files are absent"),
    pytest.mark.server,  # slow (no server starts): see the module's docstring
]

SERVER = "python/sglang/multimodal_gen/test/server"
WORKFLOW = re.compile(
    r"^### [^\n]*`\.github/workflows/([\w-]+\.yml)`\n(?:(?!```|### )[^\n]*\n)*```yaml\n(.*?)^```", re.M | re.S
)
GH = """\
#!/usr/bin/env bash
# gh, as the refresh workflow calls it: the last green nightly is run 1, its artifacts the nightly's results
case "$1 $2" in
  "run list") echo 1 ;;
  "run download")
    for arg in "$@"; do case "$arg" in --dir=*) dir="${arg#--dir=}" ;; esac; done
    mkdir -p "$dir/diffperf-results-1" && cp "$NIGHTLY_RESULTS"/results-*.json "$dir/diffperf-results-1/" ;;
  *) echo "gh stand-in: $*" >&2; exit 2 ;;
esac
"""


def workflows() -> dict[str, dict[str, Any]]:
    found = {name: yaml.safe_load(text) for name, text in WORKFLOW.findall((REPO / "docs" / "ci.md").read_text())}
    assert set(found) == {"diffperf-pr.yml", "diffperf-nightly.yml", "diffperf-refresh.yml", "diffperf-npu.yml"}
    return found


@pytest.fixture(scope="module")
def sglang(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """SGLang's repository: its tree committed 5 days ago on main (origin/main too), and one commit of today."""
    repo = tmp_path_factory.mktemp("sglang")
    sglang_tree.build(repo / "python")
    (repo / "python" / "sglang" / "__init__.py").touch()  # a checkout's package (the vendored files leave it out)

    def git(*args: str, **env: str) -> str:
        identity = {
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
        }
        run = subprocess.run(["git", *args], cwd=repo, env=os.environ | identity | env, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        return run.stdout.strip()

    git("init", "-q", "-b", "main")
    git("add", "-A")
    old = "2020-01-01T00:00:00"
    git("commit", "-qm", "the tree", GIT_AUTHOR_DATE=old, GIT_COMMITTER_DATE=old)
    git("update-ref", "refs/remotes/origin/main", "HEAD")
    (repo / "python" / "NOTES").write_text("a later change\n")
    git("add", "-A")
    git("commit", "-qm", "a later change")
    bin_dir = tmp_path_factory.mktemp("bin")
    (bin_dir / "gh").write_text(GH)
    (bin_dir / "gh").chmod(0o755)
    return {"repo": repo, "bin": bin_dir, "sha": git("rev-parse", "HEAD")}


def expand(script: str, matrix: dict[str, Any]) -> str:
    """A step's script as the runner gets it: expressions replaced, ``-n 4`` as ``-n 0``, ``pip install`` left out."""
    values = {"github.base_ref": "main", "inputs.policy": "improve", "github.run_id": "1"}
    values |= {f"matrix.{k}": str(v) for k, v in matrix.items() if not isinstance(v, list)}

    def value(found: re.Match[str]) -> str:
        assert found.group(1) in values, found.group(0)
        return values[found.group(1)]

    script = re.sub(r"\$\{\{\s*([\w.]+)\s*\}\}", value, script).replace(" -n 4 ", " -n 0 ")
    return "\n".join(line for line in script.splitlines() if not line.startswith("pip install"))


def run_workflow(
    workflow: dict[str, Any], sglang: dict[str, Any], outputs: Path, extra_env: dict[str, str]
) -> list[dict]:
    """Each job's steps, in order (matrix jobs once per entry of their plan's output); what each step did."""
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_STEP_SUMMARY", "PYTEST_XDIST_WORKER")}
    env |= {"PYTEST_ADDOPTS": "--diffperf-dry-run -p no:cacheprovider", "GITHUB_OUTPUT": str(outputs)}
    env |= {"GITHUB_SHA": sglang["sha"], "PATH": f"{sglang['bin']}{os.pathsep}{env['PATH']}", **extra_env}
    subprocess.run(["git", "clean", "-fdxq"], cwd=sglang["repo"], check=True)  # a fresh checkout
    done = []
    for job_name, job in workflow["jobs"].items():
        matrix = job.get("strategy", {}).get("matrix", {"include": [{}]})
        if isinstance(matrix, str):  # ${{ fromJSON(needs.plan.outputs.NAME) }}
            name = re.fullmatch(r"\$\{\{ fromJSON\(needs\.plan\.outputs\.(\w+)\) \}\}", matrix)
            assert name is not None, matrix
            written = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
            matrix = json.loads(written[name.group(1)])
        for entry in matrix["include"]:
            for step in job["steps"]:
                script = expand(step.get("run", ""), entry)
                if not script.strip():
                    continue
                ran = subprocess.run(
                    ["bash", "-eo", "pipefail", "-c", script], cwd=sglang["repo"], env=env, capture_output=True,
                    text=True, timeout=600,
                )  # fmt: skip
                done.append({"job": job_name, "shard": entry.get("shard"), "rc": ran.returncode,
                             "out": ran.stdout + ran.stderr, "script": script})  # fmt: skip
    return done


def by_job(done: list[dict]) -> dict[str, list[int]]:
    codes: dict[str, list[int]] = {}
    for step in done:
        codes.setdefault(step["job"], []).append(step["rc"])
    return codes


def show(done: list[dict]) -> str:
    return "\n\n".join(f"{s['job']} {s['shard']}: rc {s['rc']}\n$ {s['script']}\n{s['out'][-3000:]}" for s in done)


def test_the_pull_request_workflow_on_sglangs_tree(sglang, tmp_path):
    done = run_workflow(workflows()["diffperf-pr.yml"], sglang, tmp_path / "outputs", {})
    # plan: 6 shards; every shard, static and A/B (the base a worktree of origin/main's python/), dry: rc 0
    # but the shards holding what a run fails before judging (2 scenarios without a case, 3 cases without a
    # baseline in SGLang 0.5.23's h100 lists); each merge counts 87 scenarios, those 5 failing
    assert by_job(done)["plan"] == [0], show(done)
    shards = [s for s in done if s["job"] in ("static", "ab")]
    assert len(shards) == 12 and {s["rc"] for s in shards} <= {0, 1}, show(done)
    assert [s["rc"] for s in done if s["job"] == "merge"] == [1, 1], show(done)
    for merge in (s for s in done if s["job"] == "merge"):
        assert "diffperf merge: 6 file(s), 87 scenarios: 5 fail, 82 skipped" in merge["out"], show(done)
        assert "ran in no shard" not in merge["out"]
    ab = next(s for s in done if s["job"] == "ab")
    assert "--diffperf-base=git=origin/main:python" in ab["script"].replace('"', "")
    results = json.loads((sglang["repo"] / "results" / "ab-1.json").read_text())
    assert results["base"] == "git=origin/main:python" and results["hardware"] == "h100"


def test_the_nightly_workflow_on_sglangs_tree(sglang, tmp_path):
    done = run_workflow(workflows()["diffperf-nightly.yml"], sglang, tmp_path / "outputs", {})
    codes = by_job(done)
    assert codes["plan"] == [0] and len(codes["shard"]) == 6, show(done)
    # merge (5 fail: exit 1), the night kept, trend of one night of dry runs: no e2e to follow, one error (exit 2);
    # bisect over the later commit
    assert codes["history"] == [1, 0, 2], show(done)
    (trend,) = [s for s in done if s["job"] == "history" and "diffperf trend" in s["script"]]
    assert "no run of the history has e2e_ms for any scenario" in trend["out"], show(done)
    assert len(list((sglang["repo"] / "history").glob("*.json"))) == 1
    assert (sglang["repo"] / "report.html").is_file()
    (bisect,) = [s for s in done if s["job"] == "bisect"]
    assert "diffperf bisect" in bisect["out"] and bisect["rc"] in (0, 1), show(done)


def test_the_baseline_refresh_workflow_on_sglangs_tree(sglang, tmp_path):
    nightly = tmp_path / "nightly"  # a night's shard 1, as the nightly's shard job writes it (dry)
    args = [
        "--diffperf=long_term", f"--diffperf-baselines={SERVER}/perf_baselines", f"--diffperf-cases={SERVER}/gpu_cases.py",
        "--diffperf-hardware=h100", "--diffperf-shard=1/6", f"--diffperf-json={nightly / 'results-1.json'}",
        "--diffperf-dry-run", "-p", "no:cacheprovider",
    ]  # fmt: skip
    subprocess.run([sys.executable, "-m", "pytest", *args], cwd=sglang["repo"], capture_output=True, check=False)
    assert (nightly / "results-1.json").is_file()
    done = run_workflow(
        workflows()["diffperf-refresh.yml"], sglang, tmp_path / "outputs", {"NIGHTLY_RESULTS": str(nightly)}
    )
    download, accept = done
    assert download["rc"] == 0, show(done)
    assert list((sglang["repo"] / "results").iterdir()) == [sglang["repo"] / "results" / "results-1.json"]
    # a dry run measured nothing: refused, nothing written
    assert accept["rc"] != 0 and "diffperf accept: error: no scenario of the results to accept" in accept["out"], show(
        done
    )
    assert "skipped in the run" in accept["out"]
    assert subprocess.run(["git", "status", "--porcelain", "python"], cwd=sglang["repo"], capture_output=True,
                          text=True, check=True).stdout == ""  # fmt: skip


def test_the_npu_and_musa_workflow_on_sglangs_tree(sglang, tmp_path):
    done = run_workflow(workflows()["diffperf-npu.yml"], sglang, tmp_path / "outputs", {})
    codes = by_job(done)
    assert codes["plan"] == [0] and len(codes["npu"]) == 3 and set(codes["npu"]) == {0}, show(done)
    (merge,) = [s for s in done if s["job"] == "merge"]
    # a dry run judged nothing: not green
    assert merge["rc"] == 5 and "13 scenarios: 13 skipped" in merge["out"], show(done)
    assert "nothing was judged" in merge["out"]
    outputs = dict(line.split("=", 1) for line in (tmp_path / "outputs").read_text().splitlines())
    musa = json.loads(outputs["musa"])["include"]
    assert sum(len(entry["scenarios"]) for entry in musa) == 4  # the 1-gpu-musa suite's (its nightly suite's 6: not)
