"""verify-sglang's ground-truth column: each vendored release's own lookup (run offline) against the plugin's."""

from __future__ import annotations

import importlib.util
import shutil
from collections import Counter

import pytest

from pytest_diffperf import cli
from pytest_diffperf.commands.verify_sglang_gt import compare_all, summary
from pytest_diffperf.platforms import Platform
from pytest_diffperf.sglang import caselist, harness
from pytest_diffperf.sglang.source import locate
from tests.support.paths import SGLANG_DATA

# SGLang's harness imports openai (the test extra): a plugin-only install (.ci/minimal) has none
pytestmark = pytest.mark.skipif(importlib.util.find_spec("openai") is None, reason="SGLang's harness imports openai")

RELEASES = {v: SGLANG_DATA / f"v{v}" / "src" for v in ("0.5.12", "0.5.17", "0.5.23")}
TEST_UTILS = ("sglang", "multimodal_gen", "test", "test_utils.py")
# (release, platform) -> compared cases, all equal (the other cases: not compared or not expressible)
EQUAL = {
    ("0.5.12", "h100"): 49, ("0.5.17", "h100"): 59, ("0.5.17", "5090"): 2, ("0.5.17", "npu"): 5,
    ("0.5.23", "h100"): 65, ("0.5.23", "b200"): 5, ("0.5.23", "5090"): 6, ("0.5.23", "npu"): 6,
}  # fmt: skip


def results(tree, hardware: Platform) -> dict[str, str]:
    source = locate(tree)
    loaded = harness.load(source, hardware)
    lists = caselist.from_modules(source, hardware, loaded.modules, caselist.load(source, hardware))
    return compare_all(loaded, [entry.case for entry in lists.select(None)], {}, hardware)


@pytest.mark.server
@pytest.mark.parametrize("release, hardware", sorted(EQUAL))
def test_each_release_s_own_lookup_matches_the_plugin_s(release, hardware):
    found = results(RELEASES[release], hardware)
    heads = Counter(r.split(" (")[0].split(":")[0] for r in found.values())
    assert heads["equal"] == EQUAL[release, hardware]
    assert set(heads) <= {"equal", "not compared", "not expressible"}, found


def test_action_outputs_are_listed_as_not_expressible_with_the_reason():
    found = results(RELEASES["0.5.23"], "h100")
    actions = {case: r for case, r in found.items() if "action" in r}
    assert actions and all(
        r == "not expressible: SGLang's lookup is equal (4 candidates), but action outputs are not run"
        for r in actions.values()
    )
    assert summary(found) == "65 equal, 18 not compared, 2 not expressible"


@pytest.mark.server
def test_a_release_whose_lookup_changed_is_different_and_exits_1(tmp_path, capsys):
    tree = tmp_path / "src"
    shutil.copytree(RELEASES["0.5.23"] / "sglang", tree / "sglang")
    utils = tree.joinpath(*TEST_UTILS)
    text = utils.read_text()
    old = 'exts = [preferred] + [e for e in ("png", "jpg", "webp") if e != preferred]'
    assert text.count(old) == 1
    utils.write_text(text.replace(old, 'exts = [preferred] + [e for e in ("webp", "png", "jpg") if e != preferred]'))
    assert cli.main(["verify-sglang", str(tree), "--suite", "1-gpu", "--openai-as-installed"]) == 1
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("qwen_image_t2i "))
    assert (
        "different: candidate 2: SGLang official_generated/h100/qwen_image_t2i_1gpu.webp, "
        "plugin official_generated/h100/qwen_image_t2i_1gpu.png  " in row
    )
    assert row.endswith(" equal (28 variants)")  # the judging column, last
    assert "diffperf verify-sglang: ground-truth lookup: " in out and " different" in out
