"""File paths named by requests (``perf_dump_path``, ``input_reference``) only inside ``--request-files-dir``."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")
from fastapi import HTTPException

from pytest_diffperf.refserver.request_inputs import request_path


def test_no_folder_given_refuses_every_path(tmp_path):
    with pytest.raises(HTTPException) as err:
        request_path(str(tmp_path / "perf.json"), "perf_dump_path", None)
    assert err.value.status_code == 400
    assert "--request-files-dir" in err.value.detail


def test_paths_inside_the_folder_only(tmp_path):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "out").symlink_to(tmp_path)  # a link that leaves the folder
    assert request_path(str(allowed / "sub" / "perf.json"), "perf_dump_path", str(allowed)).startswith(str(allowed))
    for outside in (tmp_path / "perf.json", allowed / ".." / "perf.json", allowed / "out" / "perf.json"):
        with pytest.raises(HTTPException, match="outside --request-files-dir"):
            request_path(str(outside), "perf_dump_path", str(allowed))
