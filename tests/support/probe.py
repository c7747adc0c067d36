"""pytest run in a fresh interpreter where some packages cannot be imported, as if not installed."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

PROBE = """
import json, sys
for name in sys.argv[2].split(",") if sys.argv[2] else []:
    sys.modules[name] = None  # as if the package were not installed: importing it raises ImportError
import pytest
code = pytest.main(sys.argv[3:])
print(json.dumps({"code": int(code), "loaded": [m for m in sys.argv[1].split(",") if sys.modules.get(m)]}))
"""


def run_pytest(
    cwd: Path, *args: str, watch: Sequence[str] = (), block: Sequence[str] = (), env: dict[str, str] | None = None
) -> tuple[dict, str]:
    """``pytest ARGS`` in ``cwd`` with ``block`` unimportable: its exit code and which of ``watch`` it
    imported (the last line of its output), and the rest of its output."""
    argv = [sys.executable, "-c", PROBE, ",".join(watch), ",".join(block), *args]
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300, env=env)
    *output, last = done.stdout.strip().splitlines()
    return json.loads(last), "\n".join(output) + done.stderr
