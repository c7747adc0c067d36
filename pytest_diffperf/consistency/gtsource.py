"""``--diffperf-gt-dir``'s value: a local folder, ``sglang`` (the case lists' release's pinned data repository),
``github:OWNER/REPO@REV[:PATH]``, or an http(s) URL of a ``consistency_gt`` folder.

Parsed once at the edge (light: no network library is imported here).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .._util.values import BadValue

PINNED = "sglang"  # the word: the release's own pinned source, read from its test_utils.py
GT_PATH = "diffusion-ci/consistency_gt"  # where SGLang's data repositories keep the ground truth
GITHUB = re.compile(r"^github:(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)@(?P<rev>[\w./-]+?)(?::(?P<path>[^:]*))?$")
REMOTE_PREFIXES = ("github:", "http://", "https://")


@dataclass(frozen=True)
class GTSpec:
    """Where ground truth comes from, as the user named it.

    ``folder``: a local folder. ``pinned``: the release's pinned repository. ``repo``/``revision``/``path``: an
    explicit GitHub source. ``url``: an explicit URL of a ``consistency_gt`` folder.
    """

    text: str
    folder: Path | None = None
    pinned: bool = False
    repo: str | None = None
    revision: str | None = None
    path: str = GT_PATH
    url: str | None = None

    def __str__(self) -> str:
        return self.text


def is_remote_text(text: str) -> bool:
    """Whether an option value names a remote source (kept as given, never made a path)."""
    return text == PINNED or text.startswith(REMOTE_PREFIXES)


def parse_gt_source(text: str) -> GTSpec:
    """The spec ``text`` names; BadValue saying what is expected otherwise (a path arrives absolute)."""
    if text == PINNED:
        return GTSpec(text, pinned=True)
    if text.startswith("github:"):
        found = GITHUB.match(text)
        if not found:
            example = f"github:sgl-project/ci-data-diffusion@c7258eb:{GT_PATH}"
            raise BadValue(f"expected github:OWNER/REPO@REVISION[:PATH] (e.g. {example}), got {text!r}")
        path = (found.group("path") or GT_PATH).strip("/")
        if ".." in path.split("/"):
            raise BadValue(f"the PATH of {text!r} may not hold '..'")
        return GTSpec(text, repo=found.group("repo"), revision=found.group("rev"), path=path)
    if text.startswith(("http://", "https://")):
        if len(text.split("/")) < 4 or not text.split("/")[2]:
            raise BadValue(f"expected the URL of a consistency_gt folder (http(s)://HOST/...), got {text!r}")
        return GTSpec(text, url=text.rstrip("/"))
    return GTSpec(text, folder=Path(text))


def is_data_repo_layout(folder: Path) -> bool:
    """Whether a local folder is a data repository's ``consistency_gt`` (one of its two subtrees is there)."""
    return (folder / "sglang_generated").is_dir() or (folder / "official_generated").is_dir()
