"""Fixtures for the refserver tests: real reference-server processes on 127.0.0.1 (no mocks)."""

from __future__ import annotations

import pytest

from tests.support.refserver import Server, Servers


@pytest.fixture(scope="module")
def start_server(tmp_path_factory):
    """Factory: ``start_server(model, *args, wait=True)``, a new server; killed when the module's tests are done."""
    servers = Servers(lambda: tmp_path_factory.mktemp("refserver"))
    yield servers.start
    servers.stop()


@pytest.fixture(scope="session")
def flux(shared_server) -> Server:
    """The baseline server: tiny/flux-t2i, defaults, plus a load delay so /health is seen at 503 first."""
    return shared_server("tiny/flux-t2i", "--inject-load-delay", "1000")
