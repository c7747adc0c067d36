"""Fixtures for the refserver tests: real reference-server processes on 127.0.0.1 (no mocks)."""

from __future__ import annotations

import pytest

from tests.support.refserver import Server


@pytest.fixture(scope="session")
def start_server(tmp_path_factory):
    """Factory: ``start_server(model, *args, wait=True)``; every server is killed at session end."""
    servers: list[Server] = []

    def start(model: str, *args: str, wait: bool = True, port: int | None = None) -> Server:
        server = Server(tmp_path_factory.mktemp("refserver"), model, list(args), port)
        servers.append(server)
        return server.wait_ready() if wait else server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture(scope="session")
def flux(start_server) -> Server:
    """The baseline server: tiny/flux-t2i, defaults, plus a load delay so /health is seen at 503 first."""
    return start_server("tiny/flux-t2i", "--inject-load-delay", "1000")
