"""SIGTERM as an interruption: set only over the default, one interruption, then the default again."""

from __future__ import annotations

import signal

import pytest

from pytest_diffperf.suite.termination import SigtermAsInterrupt


@pytest.fixture
def sigterm():
    """SIGTERM's handler put back as it was, whatever the test set."""
    before = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield
    signal.signal(signal.SIGTERM, before)


def test_the_first_sigterm_interrupts_and_the_next_one_has_the_default(sigterm, pytestconfig):
    handler = SigtermAsInterrupt()
    assert handler.install()
    with pytest.raises(KeyboardInterrupt, match="SIGTERM"):
        signal.raise_signal(signal.SIGTERM)  # its Python handler runs before it returns
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_the_default_is_back_when_the_run_ends(sigterm, pytestconfig):
    handler = SigtermAsInterrupt()
    assert handler.install() and signal.getsignal(signal.SIGTERM) == handler._interrupt
    handler.pytest_unconfigure(pytestconfig)
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL and not handler.installed


@pytest.mark.parametrize("other", [signal.SIG_IGN, lambda signum, frame: None], ids=["ignored", "handled"])
def test_an_ignored_or_handled_sigterm_is_left_as_it_is(sigterm, pytestconfig, other):
    signal.signal(signal.SIGTERM, other)
    handler = SigtermAsInterrupt()
    assert not handler.install()
    handler.pytest_unconfigure(pytestconfig)
    assert signal.getsignal(signal.SIGTERM) is other
