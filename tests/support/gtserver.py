"""A data repository served over HTTP on 127.0.0.1, laid out as raw.githubusercontent.com serves one
(``/<owner>/<repo>/<revision>/<path>``), with faults injected per file: 404, 429, 503, a truncated body."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

GT_PATH = "diffusion-ci/consistency_gt"


@dataclass
class DataRepo:
    """``root``: a folder holding ``<owner>/<repo>/<revision>/...``; ``faults``: URL path -> faults still to serve
    (``"404"``, ``"429"``, ``"503"``, ``"truncate"``, or ``"always-429"`` for good)."""

    root: Path
    faults: dict[str, list[str]] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    url: str = ""

    def put(self, repo: str, revision: str, rel: str, data: bytes) -> str:
        """Add a file below the revision's consistency_gt folder; its URL path."""
        path = self.root / repo / revision / GT_PATH / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return f"/{repo}/{revision}/{GT_PATH}/{rel}"

    def case_map(self, repo: str, revision: str, cases: dict[str, list[str]]) -> None:
        doc = {"cases": {case: {"outputs": outputs} for case, outputs in cases.items()}}
        self.put(repo, revision, "official_generated/case_map.json", json.dumps(doc).encode())

    def fault(self, url_path: str, *faults: str) -> None:
        self.faults.setdefault(url_path, []).extend(faults)

    def got(self, suffix: str) -> int:
        """How many requests asked for a URL path ending in ``suffix``."""
        return sum(1 for r in self.requests if r.endswith(suffix))


def _handler(repo: DataRepo) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            repo.requests.append(self.path)
            queue = repo.faults.get(self.path, [])
            fault = queue[0] if queue else ""
            if fault and not fault.startswith("always-"):
                queue.pop(0)
            fault = fault.removeprefix("always-")
            if fault in ("404", "429", "503"):
                body = fault.encode()
                self.send_response(int(fault))
                if fault != "404":
                    self.send_header("Retry-After", "0")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            path = repo.root / self.path.lstrip("/")
            if ".." in Path(self.path).parts or not path.is_file():
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            data = path.read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2] if fault == "truncate" else data)
            if fault == "truncate":
                self.close_connection = True

    return Handler


@contextmanager
def serving(repo: DataRepo) -> Iterator[DataRepo]:
    """Serve ``repo`` on a free port of 127.0.0.1 until the block ends (``repo.url`` is its base)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(repo))
    # polled every 20 ms: serve_forever's default 0.5 s made each test's shutdown wait half a second
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    repo.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield repo
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
