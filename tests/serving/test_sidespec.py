"""The A/B SPEC syntax: what each item means, and one clear error per mistake."""

from __future__ import annotations

import pytest

from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.serving.sidespec import GitSource, SideSpec, parse_side_spec

SOURCE = "--diffperf-base"


def test_current_changes_nothing():
    spec = parse_side_spec("  current ", SOURCE)
    assert spec == SideSpec("current")
    assert spec.is_current


def test_every_key():
    spec = parse_side_spec(
        "python=/opt/base/bin/python; pythonpath=/src/a ;pythonpath=/src/b; env=A=1; env=B=x=y; "
        "args=--inject-delay DenoisingStage=50; args='--warmup-mode' server;",
        SOURCE,
    )
    assert spec.python == "/opt/base/bin/python"
    assert spec.program == ()
    assert spec.pythonpath == ("/src/a", "/src/b")
    assert spec.env == (("A", "1"), ("B", "x=y"))
    assert spec.args == ("--inject-delay", "DenoisingStage=50", "--warmup-mode", "server")
    assert not spec.is_current
    assert spec.text.startswith("python=/opt/base/bin/python;")


def test_program_is_shell_words():
    assert parse_side_spec("program=/opt/base/bin/python -m sglang.cli.main", SOURCE).program == (
        "/opt/base/bin/python",
        "-m",
        "sglang.cli.main",
    )


def test_git_and_its_items():
    spec = parse_side_spec("git=origin/main:python/; repo=../sglang; install; cache=~/sides; args=--x", SOURCE)
    assert spec.git == GitSource("origin/main", "python", "../sglang", (), "~/sides")
    assert spec.args == ("--x",) and not spec.is_current
    assert parse_side_spec("git=HEAD~2", SOURCE).git == GitSource("HEAD~2")
    assert parse_side_spec("git=v1; install=--no-deps -q", SOURCE).git == GitSource("v1", install=("--no-deps", "-q"))


@pytest.mark.parametrize(
    ("text", "message", "key"),
    [
        ("", "expected 'current' or KEY=VALUE items separated by ';', got an empty SPEC", None),
        (" ; ;", "expected 'current' or KEY=VALUE items separated by ';', got an empty SPEC", None),
        ("current; args=--x", "'current' stands alone: it cannot be combined with other items", None),
        (
            "python",
            "expected KEY=VALUE, got 'python' (keys: python, program, pythonpath, env, args, git, repo, install, cache)",
            None,
        ),
        (
            "pyhton=/x",
            "unknown key 'pyhton'; expected one of python, program, pythonpath, env, args, git, repo, install, cache",
            "pyhton",
        ),
        ("args=", "args= needs a value", "args"),
        ("python=/a; python=/b", "python= given twice, or with program=: give one server program", "python"),
        ("python=/a; program=/b", "program= given twice, or with python=: give one server program", "program"),
        ("env=NOVALUE", "expected env=NAME=VALUE with NAME a variable name, got 'NOVALUE'", "env"),
        ("env=1X=2", "expected env=NAME=VALUE with NAME a variable name, got '1X=2'", "env"),
        ("env=PYTHONPATH=/x", "set PYTHONPATH with pythonpath=DIR (it is prepended, not replaced)", "env"),
        ("args=--x 'open", 'cannot split "--x \'open" into shell words: No closing quotation', "args"),
        ("git=a; git=b", "git= given twice", "git"),
        ("git=:python", "expected git=REV[:SUBDIR] with a revision, got nothing before ':'", "git"),
        ("git=HEAD:../up", "SUBDIR must be a folder inside the repository, got '../up'", "git"),
        ("git=HEAD:/abs", "SUBDIR must be a folder inside the repository, got '/abs'", "git"),
        ("repo=/src", "repo= qualifies git=REV[:SUBDIR]: add git=", "repo"),
        ("install", "install= qualifies git=REV[:SUBDIR]: add git=", "install"),
        ("cache=/c", "cache= qualifies git=REV[:SUBDIR]: add git=", "cache"),
        (
            "git=HEAD; install; python=/x",
            "install serves git=REV from its own venv: drop python= / program=",
            "install",
        ),
    ],
)
def test_errors(text, message, key):
    with pytest.raises(DiffperfError) as info:
        parse_side_spec(text, SOURCE)
    assert info.value.source == SOURCE
    assert info.value.key == key
    assert message in str(info.value)
