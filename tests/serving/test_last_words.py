"""Why a server died, on one line: the error its log names, not a line another thread printed after it."""

from __future__ import annotations

from pathlib import Path

from pytest_diffperf.serving.process import ServerError, ServerLog, last_words

STARTUP = (
    "INFO:     Started server process [4242]\n"
    "[refserver] error: injected startup failure (--inject-fail-startup)\n"
    "INFO:     Application startup complete.\n"  # uvicorn's thread, after the loader's failure (a suite run)
)


def test_the_last_error_is_named_over_lines_printed_after_it():
    assert last_words(STARTUP) == (
        "last error in its log",
        "[refserver] error: injected startup failure (--inject-fail-startup)",
    )
    traceback = (
        'Traceback (most recent call last):\n  File "x.py", line 1\ntorch.OutOfMemoryError: CUDA out of memory\n\n'
    )
    assert last_words(traceback + "INFO:     Shutting down\n") == (
        "last error in its log",
        "torch.OutOfMemoryError: CUDA out of memory",
    )
    assert last_words("Fatal Python error: Segmentation fault\n") == (
        "last error in its log",
        "Fatal Python error: Segmentation fault",
    )


def test_without_an_error_the_last_line_is_named():
    assert last_words("INFO:     ready\n[refserver] injected crash on request 2\n  \n") == (
        "last log line",
        "[refserver] injected crash on request 2",
    )
    assert last_words("\n \n") is None


def test_the_headline_carries_it_only_when_asked():
    log = ServerLog("http://127.0.0.1:1", "serve", Path("/tmp/server.log"), STARTUP)
    failure = ServerError("exited with code 1 while starting", log)
    assert failure.headline() == "server http://127.0.0.1:1 exited with code 1 while starting"
    assert failure.headline(last_log_line=True) == (
        "server http://127.0.0.1:1 exited with code 1 while starting; last error in its log: "
        "[refserver] error: injected startup failure (--inject-fail-startup)"
    )
