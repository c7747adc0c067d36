"""Reading the server's ``performance.log``: find the record of one request by its id."""

from __future__ import annotations

import json
import time
from pathlib import Path

from pydantic import ValidationError

from .. import protocol
from ..errors import DiffperfFailure


class PerfLogError(DiffperfFailure):
    """No usable perf record for a request."""


def find_record(log_path: Path, request_id: str) -> protocol.PerfRecord | None:
    try:
        lines = log_path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return None
    for number, line in enumerate(lines, 1):
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line still being written, or foreign output
        if not isinstance(data, dict) or data.get("request_id") != request_id:
            continue
        try:
            return protocol.PerfRecord.model_validate(data)
        except ValidationError as exc:
            raise PerfLogError(f"{log_path}:{number}: record for {request_id} is malformed: {exc}") from None
    return None


def wait_for_record(log_path: Path, request_id: str, timeout: float = 30.0) -> protocol.PerfRecord:
    deadline = time.monotonic() + timeout
    while True:
        record = find_record(log_path, request_id)
        if record is not None:
            return record
        if time.monotonic() > deadline:
            raise PerfLogError(
                f"no perf record for request {request_id} in {log_path} after {timeout:.0f} s "
                f"(is {protocol.STAGE_LOGGING_ENV}=1 reaching the server?)"
            )
        time.sleep(0.05)
