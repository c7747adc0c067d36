"""SGLang's ground-truth lookup as a release has it, read from that release's ``test/test_utils.py``.

The file is parsed (never imported): its pinned data repository and revision (and the NPU pin in the
``if current_platform.is_npu():`` blocks), ``CONSISTENCY_GT_CASE_ALIASES``, the official-GT case list or the
case map, ``OFFICIAL_CONSISTENCY_GT_SKIP_CASES``, and which functions it defines. Three generations of the
lookup, each as its releases wrote it (read in the wheels 0.5.11, 0.5.12, 0.5.14, 0.5.17, 0.5.20, 0.5.23):

- ``bases`` (0.5.11): every case tries ``SGL_TEST_FILES_CONSISTENCY_GT_BASES`` in order (``main`` of
  sgl-project/ci-data; the legacy fallback to another repository is not tried).
- ``listed`` (0.5.12-0.5.16): a pinned revision; official GT only for the cases of
  ``SGL_TEST_FILES_OFFICIAL_CONSISTENCY_GT_CASES``; from 0.5.14 an NPU pin and ``ascend/`` for cases named
  ``*npu*``.
- ``case_map`` (0.5.17 on): official GT where the pinned ``official_generated/case_map.json`` declares the
  file, ``<platform>/`` subfolders tried first (not on NPU), ``ascend/`` subtrees, case aliases, a skip list.

Image names try the output format's extension, then png, jpg, webp; a video's key frames must all exist.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..errors import DiffperfError
from ..platforms import Platform

OFFICIAL, SGLANG, ASCEND = "official_generated", "sglang_generated", "ascend"
CASE_MAP = f"{OFFICIAL}/case_map.json"
RAW = re.compile(r"^https://raw\.githubusercontent\.com/(?P<repo>[^/]+/[^/]+)/(?P<rev>[^/]+)/(?P<path>.+)$")
IMAGE_EXTS = ("png", "jpg", "webp")
VIDEO_LABELS = ("0", "mid", "last")
# SGLang's consistency platform of each plugin platform (get_consistency_platform: sm120 -> 5090, Blackwell ->
# b200, XPU -> intel_xpu_b60, anything else -> h100); NPU has no platform folder but its own subtrees.
SGLANG_PLATFORMS = {"h100": "h100", "b200": "b200", "5090": "5090", "xpu_b60": "intel_xpu_b60"}
Generation = Literal["bases", "listed", "case_map"]
Kind = Literal["image", "video", "audio", "action"]


@dataclass(frozen=True)
class Rules:
    """One release's lookup. Subtrees are folders below the GT root (``sglang_generated/ascend``)."""

    generation: Generation
    source: str  # the file read, or "default"
    root_url: str
    npu_root_url: str
    aliases: Mapping[str, str] = field(default_factory=dict)
    official_cases: frozenset[str] = frozenset()  # listed generation
    skip_official: frozenset[str] = frozenset()  # case_map generation
    ascend_by_case: bool = False  # listed generation: a case named *npu* reads sglang_generated/ascend first
    bases: tuple[str, ...] = (OFFICIAL, SGLANG)  # bases/listed generations: the subtrees tried for listed cases
    npu_bases: tuple[str, ...] = (OFFICIAL, SGLANG)
    default_base: str = SGLANG
    npu_default_base: str = SGLANG

    def pin(self, npu: bool) -> tuple[str, str, str] | None:
        """(repository, revision, path) of the root URL on raw.githubusercontent.com; None for another host."""
        found = RAW.match(self.npu_root_url if npu else self.root_url)
        return (found.group("repo"), found.group("rev"), found.group("path")) if found else None

    def gt_id(self, case_id: str) -> str:
        return self.aliases.get(case_id, case_id)


DEFAULT = Rules(
    "case_map",
    "default",
    "https://raw.githubusercontent.com/sgl-project/ci-data-diffusion/main/diffusion-ci/consistency_gt",
    "https://raw.githubusercontent.com/sgl-project/ci-data-diffusion/main/diffusion-ci/consistency_gt",
)


@dataclass(frozen=True)
class Attempt:
    """Files tried together in one subtree: the first that exists (``every``: all must exist, a video's frames).
    In an official subtree only the files the case map declares are tried."""

    subtree: str
    names: tuple[str, ...]
    every: bool


def sglang_platform(hardware: Platform | None) -> tuple[str, bool]:
    """SGLang's consistency platform folder for the plugin's platform, and whether it is NPU."""
    return SGLANG_PLATFORMS.get(hardware or "", "h100"), hardware == "npu"


def image_ext(output_format: str | None) -> str:
    """SGLang's ``output_format_to_ext``: unset -> jpg (the server's JPEG), jpeg -> jpg, other formats -> png."""
    if not output_format:
        return "jpg"
    fmt = output_format.lower()
    return "jpg" if fmt == "jpeg" else fmt if fmt in IMAGE_EXTS else "png"


def base_names(
    rules: Rules, case_id: str, num_gpus: int, kind: Kind, output_format: str | None, labels: tuple[str, ...]
) -> list[str]:
    """The GT names of a case, before platform folders (``_base_consistency_gt_candidates`` and kin)."""
    stem = f"{rules.gt_id(case_id)}_{num_gpus}gpu"
    if kind == "video":
        return [f"{stem}_frame_{label}.png" for label in labels]
    if kind == "audio":
        return [f"{stem}_audio.wav"]
    if kind == "action":
        return [f"{stem}.json"]
    preferred = image_ext(output_format)
    return [f"{stem}.{e}" for e in (preferred, *[e for e in IMAGE_EXTS if e != preferred])]


def attempts(
    rules: Rules,
    case_id: str,
    num_gpus: int,
    kind: Kind,
    output_format: str | None,
    *,
    platform: str,
    npu: bool,
    declared: frozenset[str] = frozenset(),
    labels: tuple[str, ...] = VIDEO_LABELS,
) -> list[Attempt]:
    """Every group of files the release tries for a case, in its order (``declared``: the case map's outputs
    of this case)."""
    names = base_names(rules, case_id, num_gpus, kind, output_format, labels)
    every = kind == "video"
    if rules.generation != "case_map":
        bases = _listed_bases(rules, case_id, npu)
        return [Attempt(base, tuple(names), every) for base in bases]
    ascend = npu or "npu" in case_id
    sets = [names] if ascend else [[f"{platform}/{n}" for n in names], names]
    out: list[Attempt] = []
    for group in sets:
        for base in _case_map_bases(rules, case_id, ascend, bool(declared)):
            official = base.startswith(OFFICIAL)
            kept = [n for n in group if not official or n in declared or n.rsplit("/", 1)[-1] in declared]
            if not kept or (every and len(kept) != len(group)):
                continue
            out.append(Attempt(base, tuple(kept), every))
    return out


def _case_map_bases(rules: Rules, case_id: str, ascend: bool, has_declared: bool) -> tuple[str, ...]:
    """``_remote_consistency_gt_base_urls`` (0.5.17 on)."""
    sg_asc, off_asc = f"{SGLANG}/{ASCEND}", f"{OFFICIAL}/{ASCEND}"
    if case_id not in rules.skip_official and has_declared:
        return (off_asc, sg_asc, OFFICIAL, SGLANG) if ascend else (OFFICIAL, SGLANG)
    return (sg_asc, SGLANG) if ascend else (SGLANG,)


def _listed_bases(rules: Rules, case_id: str, npu: bool) -> tuple[str, ...]:
    """``_find_remote_consistency_gt_files``'s bases before the case map (0.5.11-0.5.16)."""
    default = rules.npu_default_base if npu else rules.default_base
    if rules.generation == "bases":
        return rules.npu_bases if npu else rules.bases
    if rules.ascend_by_case and "npu" in case_id:
        return (f"{SGLANG}/{ASCEND}", default)
    if case_id in rules.official_cases:
        return rules.npu_bases if npu else rules.bases
    return (default,)


def regen_name(rules: Rules, case_id: str, num_gpus: int, kind: Kind, ext: str, labels: tuple[str, ...]) -> list[str]:
    """Names SGLang's GT generation gives new files (``_consistency_gt_filenames`` applies the aliases to images
    and frames; ``_save_gt_output`` names audio and action files by the case id)."""
    if kind in ("audio", "action"):
        return base_names(DEFAULT, case_id, num_gpus, kind, None, labels)
    return base_names(rules, case_id, num_gpus, kind, ext, labels)[: len(labels) if kind == "video" else 1]


def regen_subtree(npu: bool) -> str:
    """Where SGLang's GT-generation workflow puts new files in the data repository."""
    return f"{SGLANG}/{ASCEND}" if npu else SGLANG


# --- reading a release's test_utils.py ---------------------------------------------------------------------


def read_rules(test_utils: Path) -> Rules:
    """The lookup of the release whose ``test_utils.py`` this is; DiffperfError naming the file if it has none."""
    try:
        tree = ast.parse(test_utils.read_text(encoding="utf-8"), filename=str(test_utils))
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        raise DiffperfError(f"cannot read SGLang's test utilities: {exc}", source=str(test_utils)) from None
    plain, npu, functions = _module_values(tree)
    source = str(test_utils)

    def root(values: dict[str, object]) -> str | None:
        found = values.get("SGL_TEST_FILES_CONSISTENCY_GT_ROOT")
        sglang_base = values.get("SGL_TEST_FILES_SGLANG_CONSISTENCY_GT_BASE")
        if isinstance(found, str):
            return found
        if isinstance(sglang_base, str) and sglang_base.endswith(f"/{SGLANG}"):
            return sglang_base.removesuffix(f"/{SGLANG}")
        return None

    root_url, npu_root_url = root(plain), root(npu)
    if root_url is None or npu_root_url is None:
        raise DiffperfError(
            "no consistency ground-truth source in this release's test utilities "
            "(SGL_TEST_FILES_CONSISTENCY_GT_ROOT or SGL_TEST_FILES_SGLANG_CONSISTENCY_GT_BASE): it predates "
            "SGLang's consistency check (0.5.11); pass --diffperf-gt-dir=github:OWNER/REPO@REV instead",
            source=source,
        )
    aliases = plain.get("CONSISTENCY_GT_CASE_ALIASES")
    common: dict[str, object] = {
        "source": source,
        "root_url": root_url,
        "npu_root_url": npu_root_url,
        "aliases": aliases if isinstance(aliases, dict) else {},
    }
    if "_load_official_consistency_gt_outputs" in functions:
        skip = plain.get("OFFICIAL_CONSISTENCY_GT_SKIP_CASES")
        return Rules("case_map", skip_official=skip if isinstance(skip, frozenset) else frozenset(), **common)  # type: ignore[arg-type]
    listed = plain.get("SGL_TEST_FILES_OFFICIAL_CONSISTENCY_GT_CASES")
    return Rules(
        "listed" if isinstance(listed, frozenset) else "bases",
        official_cases=listed if isinstance(listed, frozenset) else frozenset(),
        ascend_by_case="_is_ascend_consistency_case" in functions.get("_find_remote_consistency_gt_files", set()),
        bases=_subtrees(plain.get("SGL_TEST_FILES_CONSISTENCY_GT_BASES"), root_url),
        npu_bases=_subtrees(npu.get("SGL_TEST_FILES_CONSISTENCY_GT_BASES"), npu_root_url),
        default_base=_subtree(plain.get("SGL_TEST_FILES_CONSISTENCY_GT_BASE"), root_url) or SGLANG,
        npu_default_base=_subtree(npu.get("SGL_TEST_FILES_CONSISTENCY_GT_BASE"), npu_root_url) or SGLANG,
        **common,  # type: ignore[arg-type]
    )


def _subtree(url: object, root_url: str) -> str | None:
    return url.removeprefix(f"{root_url}/") if isinstance(url, str) and url.startswith(f"{root_url}/") else None


def _subtrees(urls: object, root_url: str) -> tuple[str, ...]:
    """The bases below the root (a base in another repository, 0.5.11's legacy fallback, is not tried)."""
    found = [_subtree(u, root_url) for u in urls] if isinstance(urls, tuple) else []
    return tuple(s for s in found if s) or (OFFICIAL, SGLANG)


def _module_values(tree: ast.Module) -> tuple[dict[str, object], dict[str, object], dict[str, set[str]]]:
    """Module-level constants as a CUDA and as an NPU process sees them, and each function's referenced names."""
    plain: dict[str, object] = {}
    npu: dict[str, object] = {}
    functions: dict[str, set[str]] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef):
            functions[stmt.name] = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}
        elif isinstance(stmt, ast.If) and _is_npu_test(stmt.test):
            for inner in stmt.body:
                _assign(inner, [npu])
        else:
            _assign(stmt, [plain, npu])
    return plain, npu, functions


def _is_npu_test(test: ast.expr) -> bool:
    return isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.func.attr == "is_npu"


def _assign(stmt: ast.stmt, envs: list[dict[str, object]]) -> None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        name, value = stmt.targets[0].id, stmt.value
    elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
        name, value = stmt.target.id, stmt.value
    else:
        return
    for env in envs:
        env[name] = _evaluate(value, env)


def _evaluate(node: ast.expr, env: dict[str, object]) -> object:
    """A constant expression of the kinds these files use (str, f-string of names, tuple, dict, frozenset)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, ast.JoinedStr):
        parts = [_evaluate(v.value if isinstance(v, ast.FormattedValue) else v, env) for v in node.values]
        return "".join(parts) if all(isinstance(p, str) for p in parts) else None  # type: ignore[arg-type]
    if isinstance(node, ast.Tuple):
        return tuple(_evaluate(e, env) for e in node.elts)
    if isinstance(node, ast.Dict):
        keys = [_evaluate(k, env) if k is not None else None for k in node.keys]
        values = [_evaluate(v, env) for v in node.values]
        return {k: v for k, v in zip(keys, values, strict=True) if isinstance(k, str) and isinstance(v, str)}
    if isinstance(node, (ast.Set, ast.List)):
        return [_evaluate(e, env) for e in node.elts]
    is_frozenset = isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "frozenset"
    if isinstance(node, ast.Call) and is_frozenset and len(node.args) == 1:
        items = _evaluate(node.args[0], env)
        return frozenset(i for i in items if isinstance(i, str)) if isinstance(items, list) else None
    return None
