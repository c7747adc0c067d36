"""Files for people: a side-by-side PNG and a JSON per compared case, a run summary, and the
ready-to-copy folder of outputs when GT is missing.

Layout under the artifacts folder: ``consistency/<case>_<n>gpu.png`` / ``.json``,
``consistency/summary.json`` and ``missing-gt/<GT file names>``.
"""

from __future__ import annotations

import io
import json
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from .._util import tempdirs
from .._util.atomicfile import write_atomic
from .._util.names import inside
from .result import ConsistencyResult, frame_line, thresholds_line

SUBDIR = "consistency"
MISSING_SUBDIR = "missing-gt"
HEAT_GAIN = 8  # heatmap brightness = 8 x the largest channel difference (saturates at 32 levels)
TILE = (128, 384)  # tiles are scaled to a width in this range
_GAP, _LINE = 8, 14


def case_paths(artifacts_dir: Path, case_id: str, num_gpus: int) -> tuple[Path, Path]:
    """The comparison PNG and metrics JSON of a case."""
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", f"{case_id}_{num_gpus}gpu")
    folder = artifacts_dir / SUBDIR
    return folder / f"{stem}.png", folder / f"{stem}.json"


def write_case(artifacts_dir: Path, result: ConsistencyResult, outs: list[np.ndarray], gts: list[np.ndarray]) -> None:
    """Write the case's comparison PNG (output | GT | difference per frame) and its JSON."""
    png, js = case_paths(artifacts_dir, result.case_id, result.num_gpus)
    write_atomic(png, _comparison(result, outs, gts))
    write_atomic(js, (json.dumps(result.to_dict(), indent=2) + "\n").encode())


def heatmap(out: np.ndarray, gt: np.ndarray) -> np.ndarray:
    """Amplified absolute difference (largest over channels) as a black-red-yellow-white image."""
    diff = np.abs(out.astype(np.int16) - gt.astype(np.int16)).max(axis=2).astype(np.float32)
    v = np.clip(diff * HEAT_GAIN, 0, 255) * 3
    return np.stack([np.clip(v - o, 0, 255) for o in (0, 255, 510)], axis=2).astype(np.uint8)


def _comparison(result: ConsistencyResult, outs: list[np.ndarray], gts: list[np.ndarray]) -> bytes:
    font = ImageFont.load_default()
    h, w = outs[0].shape[:2]
    tw = min(max(w, TILE[0]), TILE[1])
    th = max(1, round(h * tw / w))
    header = [f"{result.case_id} ({result.num_gpus} GPU): {result.status.upper()}"]
    if result.thresholds is not None:
        header.append("thresholds: " + thresholds_line(result.thresholds))
    row_h = _LINE + th + _LINE + _GAP
    text_w = max(font.getlength(line) for line in header + [frame_line(f) for f in result.frames])
    width = max(3 * tw + 4 * _GAP, int(text_w) + 2 * _GAP)
    height = _GAP + len(header) * _LINE + _GAP + row_h * len(outs)
    canvas = Image.new("RGB", (width, height), (245, 245, 245))
    draw = ImageDraw.Draw(canvas)
    y = _GAP
    for line in header:
        draw.text((_GAP, y), line, fill=(0, 0, 0), font=font)
        y += _LINE
    y += _GAP
    for frame, out, gt in zip(result.frames, outs, gts, strict=True):
        tiles = (("output", out), ("ground truth", gt), (f"|diff| x{HEAT_GAIN}", heatmap(out, gt)))
        for col, (title, pixels) in enumerate(tiles):
            x = _GAP + col * (tw + _GAP)
            draw.text((x, y), title, fill=(60, 60, 60), font=font)
            resample = Image.Resampling.NEAREST if tw >= w else Image.Resampling.BILINEAR
            canvas.paste(Image.fromarray(pixels).resize((tw, th), resample), (x, y + _LINE))
        color = (180, 0, 0) if frame.failed else (0, 110, 0)
        draw.text((_GAP, y + _LINE + th + 2), frame_line(frame), fill=color, font=font)
        y += row_h
    buf = io.BytesIO()
    canvas.save(buf, format="PNG")
    return buf.getvalue()


def write_summary(results: Iterable[ConsistencyResult | dict[str, Any]], artifacts_dir: Path) -> Path:
    """Write ``consistency/summary.json`` for a run: counts by status and every result.

    ``results`` may be ConsistencyResult objects or their ``to_dict()`` (as sent by xdist workers).
    """
    rows = [r.to_dict() if isinstance(r, ConsistencyResult) else r for r in results]
    rows.sort(key=lambda r: (r["case_id"], r["num_gpus"]))
    doc = {"counts": dict(Counter(r["status"] for r in rows)), "results": rows}
    path = artifacts_dir / SUBDIR / "summary.json"
    write_atomic(path, (json.dumps(doc, indent=2) + "\n").encode())
    return path


def ready_folder(artifacts_dir: Path | None, files: dict[str, bytes]) -> Path:
    """Write outputs under their GT names into ``missing-gt/`` (artifacts folder, else a new private temp folder)."""
    base = artifacts_dir or tempdirs.make("diffperf-")
    folder = base / MISSING_SUBDIR
    for name, data in files.items():
        write_atomic(inside(folder, name, source=str(folder)), data)
    return folder
