"""A server's record is the results file's strict model where the server starts: its keys as the file has them,
a figure no reader accepts refused where it is made."""

from __future__ import annotations

import json
import math

import pytest
from pydantic import ValidationError

from pytest_diffperf.results.model import ScenarioResult
from pytest_diffperf.serving.pool import ServerStart
from pytest_diffperf.serving.record import ServerRecord


def start(**changes: object) -> ServerStart:
    fields: dict[str, object] = {"group": "g", "pid": 41, "port": 30000, "log": "gw0/server-1/server.log"}
    return ServerStart(**{**fields, **changes})  # type: ignore[arg-type]


def test_a_failed_start_is_recorded_with_the_top_level_lists_keys_in_their_order():
    record = start(ready=False, error="exited with code 1", command="sglang serve", ended="exit code 1").record()
    assert isinstance(record, ServerRecord)
    assert record.model_dump() == {
        "pid": 41, "port": 30000, "load_ms": None, "log": "gw0/server-1/server.log", "devices": {},
        "command": "sglang serve", "ended": "exit code 1", "ready": False, "error": "exited with code 1",
    }  # fmt: skip
    assert list(json.loads(record.model_dump_json())) == list(record.model_dump())


@pytest.mark.parametrize(("key", "value"), [("load_ms", math.nan), ("load_ms", -1.0), ("port", 0), ("pid", 0)])
def test_a_start_no_reader_accepts_is_refused_where_it_is_recorded(key, value):
    with pytest.raises(ValidationError, match=key):
        start(**{key: value}).record()


def test_a_scenarios_server_reads_back_as_written():
    server = start(ready=True, load_ms=812.5, devices={"CUDA_VISIBLE_DEVICES": "0"}).record()
    again = ScenarioResult.model_validate_json(
        ScenarioResult(scenario="s", verdict="error", server=server).model_dump_json()
    )
    assert again.server == server and list(again.model_dump()["server"]) == list(server.model_dump())
