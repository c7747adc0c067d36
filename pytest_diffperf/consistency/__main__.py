"""``python -m pytest_diffperf.consistency record GT_DIR``: re-record the hashes of every GT file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import DiffperfError
from .manifest import MANIFEST, rebuild


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_diffperf.consistency")
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help=f"write {MANIFEST} with the sha256 of every GT image in GT_DIR")
    rec.add_argument("gt_dir", type=Path, metavar="GT_DIR")
    args = parser.parse_args(argv)
    if not args.gt_dir.is_dir():
        print(f"error: {args.gt_dir} is not a folder", file=sys.stderr)
        return 2
    try:
        recorded = rebuild(args.gt_dir)
    except DiffperfError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"recorded {len(recorded.files)} file(s) in {args.gt_dir / MANIFEST}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
