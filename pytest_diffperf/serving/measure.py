"""Measuring one case on a running server: warmup and measured requests, each under a watchdog."""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import requests

from .. import protocol
from ..cases import Case
from . import perflog
from .client import InputError, Output, RequestError, job_status
from .cputime import server_cpu
from .launchers import Launcher
from .process import ServerError, ServerProcess

T = TypeVar("T")
WATCH_INTERVAL_S = 0.05
PERF_RECORD_TIMEOUT_S = 30.0
EXIT_SETTLE_S = 2.0


@dataclass(frozen=True)
class Sample:
    """One measured request: what came back, the server's own record (None when missing), the client-side time,
    and meanwhile the CPU time the server's processes spent and how long their threads waited for a CPU (None:
    not read)."""

    index: int
    output: Output
    record: protocol.PerfRecord | None
    client_ms: float
    cpu_ms: float | None = None
    wait_ms: float | None = None


def watched(server: ServerProcess, call: Callable[[], T], timeout: float, what: str, case_id: str = "") -> T:
    """Run ``call`` in a thread; fail at once if the server dies or prints a fatal pattern; progress lines
    (``what of CASE``) while it runs."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="diffperf-request")
    future = pool.submit(call)
    pool.shutdown(wait=False)
    deadline = time.monotonic() + timeout
    beat = server.heartbeat(f"{what} of {case_id}" if case_id else what)
    while True:
        try:
            return future.result(timeout=WATCH_INTERVAL_S)
        except concurrent.futures.TimeoutError:
            pass
        except InputError:
            raise  # the case's input, not the server
        except (requests.Timeout, TimeoutError):
            server.timed_out(what)
            raise ServerError(f"did not answer {what} within {timeout:.0f} s", server.snapshot()) from None
        except requests.RequestException as exc:
            # A dropped connection usually means the server died: say so once its exit is seen.
            settle = time.monotonic() + EXIT_SETTLE_S
            while time.monotonic() < settle:
                server.check_alive(f"during {what}")
                time.sleep(WATCH_INTERVAL_S)
            raise RequestError(f"failed {what}: {exc}", server.snapshot()) from None
        except (RequestError, perflog.PerfLogError) as exc:
            raise RequestError(f"gave a bad answer to {what}: {exc}", server.snapshot()) from None
        server.check_alive(f"during {what}")
        beat.tick(job_status(server.base_url))
        if time.monotonic() > deadline:
            server.timed_out(what)
            raise ServerError(f"did not answer {what} within {timeout:.0f} s", server.snapshot())


def measure(
    server: ServerProcess,
    launcher: Launcher,
    case: Case,
    timeout: float,
    on_missing_record: Callable[[int, RequestError], None] | None = None,
) -> list[Sample]:
    """``perf_warmup_requests`` unmeasured requests, then ``perf_repeat_requests`` measured ones.

    Each request's perf record is awaited when the launcher writes a perf log; a warmup's must show
    a positive ``total_duration_ms`` (as SGLang requires). A missing (or malformed) record raises
    ``RequestError``; given ``on_missing_record``, a measured request's is reported to it as (request
    index, error) instead, the sample's record is None, and warmups are not awaited.
    """
    warm_up(server, launcher, case, timeout, await_records=on_missing_record is None)
    return [
        measure_request(server, launcher, case, timeout, i, on_missing_record) for i in range(case.perf_repeat_requests)
    ]


def warm_up(
    server: ServerProcess, launcher: Launcher, case: Case, timeout: float, *, await_records: bool = True
) -> None:
    """The case's ``perf_warmup_requests`` unmeasured requests (each record awaited and checked, see ``measure``)."""
    for n in range(case.perf_warmup_requests):
        what = f"warmup request {n + 1}"
        output = watched(server, lambda: launcher.request(server.base_url, case, timeout), timeout, what, case.id)
        if launcher.writes_perf_log and await_records:
            warmup = _record(server, output, what)
            if not warmup.total_duration_ms > 0:
                raise RequestError(f"logged total_duration_ms {warmup.total_duration_ms} for {what}", server.snapshot())


def measure_request(
    server: ServerProcess,
    launcher: Launcher,
    case: Case,
    timeout: float,
    index: int,
    on_missing_record: Callable[[int, RequestError], None] | None = None,
) -> Sample:
    """One measured request (``index``: 0-based, for messages and rows) and its perf record (see ``measure``)."""
    before = server_cpu(server.pid, server.port)
    started = time.perf_counter()
    what = f"request {index + 1}"
    output = watched(server, lambda: launcher.request(server.base_url, case, timeout), timeout, what, case.id)
    client_ms = (time.perf_counter() - started) * 1000
    after = server_cpu(server.pid, server.port)
    cpu_ms, wait_ms = after.since(before) if after is not None and before is not None else (None, None)
    record = None
    if launcher.writes_perf_log:
        try:
            record = _record(server, output, f"request {index + 1}")
        except RequestError as exc:
            if on_missing_record is None:
                raise
            on_missing_record(index, exc)
    return Sample(index, output, record, client_ms, _ms(cpu_ms), _ms(wait_ms))


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _record(server: ServerProcess, output: Output, what: str) -> protocol.PerfRecord:
    """The perf record of ``output``'s request, awaited under the watchdog."""
    return watched(
        server,
        lambda: perflog.wait_for_record(server.perf_log, output.request_id, PERF_RECORD_TIMEOUT_S),
        PERF_RECORD_TIMEOUT_S + 5,
        f"the perf record of {what}",
    )
