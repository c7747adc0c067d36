"""Render a diffperf HTML report in a real headless Chromium and screenshot it (a check by eye).

    python scripts/screenshot_report.py report.html report.png [--width 1280] [--height 5000]

Needs Debian's ``chromium`` package (``apt-get install -y chromium``) or ``--browser PATH``. The
browser runs offline (no network, a throw-away profile), so anything the report fails to carry
inline shows up missing in the picture. The test suite checks the report's content without a browser.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="the HTML report")
    parser.add_argument("output", type=Path, help="the PNG to write")
    parser.add_argument("--width", type=int, default=1280, help="window width in CSS pixels (default: 1280)")
    parser.add_argument("--height", type=int, default=5000, help="window height: the part of the page shot")
    parser.add_argument("--browser", help=f"the Chromium binary (default: the first of {', '.join(BROWSERS)} on PATH)")
    args = parser.parse_args(argv)
    browser = args.browser or next((b for b in map(shutil.which, BROWSERS) if b), None)
    if browser is None:
        print("no Chromium found: apt-get install -y chromium, or pass --browser", file=sys.stderr)
        return 2
    if not args.report.is_file():
        print(f"{args.report}: file not found", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="diffperf-chromium-") as profile:
        command = [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-extensions",
            "--no-first-run",
            "--hide-scrollbars",
            "--proxy-server=127.0.0.1:9",  # nothing reachable: the report must be self-contained
            f"--user-data-dir={profile}",
            f"--window-size={args.width},{args.height}",
            "--virtual-time-budget=5000",
            f"--screenshot={args.output.resolve()}",
            args.report.resolve().as_uri(),
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0 or not args.output.is_file():
        print(done.stderr[-2000:], file=sys.stderr)
        return 1
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
