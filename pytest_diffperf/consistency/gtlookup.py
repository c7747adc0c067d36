"""A case's ground truth found as SGLang's release finds it, in a data repository's tree (remote or a local
clone): official before sglang-generated, platform folders, ``ascend/``, aliases, extension fallbacks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .._util import git
from ..errors import DiffperfError
from ..platforms import Platform
from .groundtruth import Located
from .gtsource import PINNED, GTSpec, is_data_repo_layout
from .gttree import GTTree, github_tree, local_tree, url_tree
from .sglangrules import DEFAULT, Kind, Rules, attempts, regen_name, regen_subtree, sglang_platform


@dataclass(frozen=True)
class SGLangGT:
    """Ground truth read by a release's rules: the tree, the rules, SGLang's platform folder, NPU or not."""

    tree: GTTree
    rules: Rules
    platform: str
    npu: bool
    how: str  # where the source came from, for the header ("pinned by ...", "given")

    def describe(self) -> str:
        rules = "the newest lookup" if self.rules.source == "default" else f"the lookup of {self.rules.source}"
        if self.rules.generation != "case_map":  # platform folders arrived with the case map (0.5.17)
            first = "no platform folder"
        else:
            first = "ascend/ first" if self.npu else f"{self.platform}/ first"
        cached = f"; cached in {self.tree.root}" if self.tree.fetcher is not None else ""
        return f"GT {self.tree.label} ({self.how}; {rules}: {self.rules.generation}, {first}{cached})"

    def candidates(
        self, case_id: str, num_gpus: int, kind: Kind, output_format: str | None, labels: tuple[str, ...]
    ) -> list[list[str]]:
        """Every group of files tried, in order, as paths below the GT root."""
        declared = (
            self.tree.case_map(case_id).get(case_id, frozenset())
            if self.rules.generation == "case_map"
            else frozenset()
        )
        found = attempts(
            self.rules, case_id, num_gpus, kind, output_format, platform=self.platform, npu=self.npu,
            declared=declared, labels=labels,
        )  # fmt: skip
        return [[f"{a.subtree}/{name}" for name in a.names] for a in found]

    def locate(
        self, case_id: str, num_gpus: int, kind: Kind, output_format: str | None, labels: tuple[str, ...]
    ) -> Located:
        """The files found (fetched into the cache when remote), or none found with every candidate tried."""
        key = f"{kind}:{case_id}:{num_gpus}:{output_format or ''}:{self.platform}:{self.npu}:{','.join(labels)}"
        known = self.tree.remembered(key)
        if known:
            paths = [self.tree.file(rel, case_id) for rel in known]
            if all(paths):
                return Located(self.tree.root, paths)
        groups = self.candidates(case_id, num_gpus, kind, output_format, labels)
        every = kind == "video"
        for rels in groups:
            if every:
                paths = []
                for rel in rels:
                    paths.append(self.tree.file(rel, case_id))
                    if paths[-1] is None:
                        break
                if all(paths) and len(paths) == len(rels):
                    self.tree.remember(key, rels)
                    return Located(self.tree.root, paths)
                continue
            for rel in rels:
                path = self.tree.file(rel, case_id)
                if path is not None:
                    self.tree.remember(key, [rel])
                    return Located(self.tree.root, [path])
        size = len(labels) if every else 1
        tried = tuple(self.tree.where(rel) for rels in groups for rel in rels)
        return Located(self.tree.root, [None] * size, tried)

    def regen_files(self, case_id: str, num_gpus: int, kind: Kind, ext: str, labels: tuple[str, ...]) -> list[str]:
        """Where SGLang's GT generation puts a case's new files (below the GT root), named its way."""
        names = regen_name(self.rules, case_id, num_gpus, kind, ext, labels)
        return [f"{regen_subtree(self.npu)}/{name}" for name in names]


def open_source(
    spec: GTSpec, rules: Rules | None, hardware: Platform | None, env: Mapping[str, str]
) -> tuple[Path, SGLangGT | None]:
    """The GT folder and, where SGLang's rules apply (a remote source, or a local data-repository clone), how
    to look cases up. ``rules``: the case lists' release's (None: the plugin's JSON cases, the newest rules)."""
    platform, npu = sglang_platform(hardware)
    given_rules = rules or DEFAULT
    if spec.folder is not None:
        if not is_data_repo_layout(spec.folder):
            return spec.folder, None
        how = "a local data-repository tree" + (_clone_note(spec.folder, rules, npu) if rules else "")
        return spec.folder, SGLangGT(local_tree(spec.folder), given_rules, platform, npu, how)
    if spec.pinned:
        if rules is None:
            raise DiffperfError(
                f"{PINNED} reads the ground-truth pin of the case lists' release: --diffperf-cases must name SGLang's "
                "case lists (gpu_cases.py, a checkout or wheel, or sglang); with other cases name the source: "
                "github:OWNER/REPO@REVISION[:PATH] or a URL",
                source="--diffperf-gt-dir",
            )
        pin = rules.pin(npu)
        if pin is None:
            url = rules.npu_root_url if npu else rules.root_url
            return _opened(url_tree(url, env), rules, platform, npu, "the pin of SGLang's test_utils.py")
        repo, revision, path = pin
        how = f"the {'NPU pin' if npu else 'pin'} of SGLang's test_utils.py"
        return _opened(github_tree(repo, revision, path, env), rules, platform, npu, how)
    if spec.repo is not None and spec.revision is not None:
        return _opened(github_tree(spec.repo, spec.revision, spec.path, env), given_rules, platform, npu, "given")
    assert spec.url is not None
    return _opened(url_tree(spec.url, env), given_rules, platform, npu, "given")


def _clone_note(folder: Path, rules: Rules, npu: bool) -> str:
    """Whether a clone of the data repository is at the release's pin (its GT may be stale when not)."""
    pin = rules.pin(npu)
    top = git.toplevel(folder)
    if pin is None or top is None or (top / pin[2]).resolve() != folder.resolve():
        return ""  # not a checkout of a data repository at SGLang's GT path
    repo, revision, _ = pin
    head = git.head_commit(folder)
    if head == revision:
        return f" at the release's pin {revision[:12]}"
    at = head[:12] if head else "no commit"
    return (
        f" at {at}, NOT the release's pin {revision[:12]} of {repo}: its ground truth may be stale "
        f"(git -C {top} fetch origin {revision} && git -C {top} checkout {revision}, or --diffperf-gt-dir=sglang)"
    )


def _opened(tree: GTTree, rules: Rules, platform: str, npu: bool, how: str) -> tuple[Path, SGLangGT]:
    return tree.root, SGLangGT(tree, rules, platform, npu, how)
