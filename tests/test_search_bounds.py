"""`search -E` bounded (design §22, majordomus-search(1)): an expression that does not compile, in any way, is a
usage error; one that backtracks without end stops at the per-record deadline, exit 2, naming the record."""

from __future__ import annotations

import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import assert_refused, run, start_task, state_dir

from majordomus import regexbound
from majordomus.errors import UsageError

SLOW = "(a+)+$"  # exponential backtracking on a run of `a`s that ends in something else
VICTIM = "a" * 40 + "!"


@pytest.fixture
def slow_store(cli: Any, repo: Path) -> Path:
    start_task(cli, "r1")
    assert cli("checkpoint", input="fine\n" + VICTIM + "\n").exit_code == 0
    return repo


@pytest.mark.parametrize(("pattern", "words"), [
    ("a{99999999999}", ("the repetition number is too large",)),
    ("(" * 5000 + ")" * 5000, ("is not a valid regular expression", "nested too deeply", "…")),
    ("[z-a]", ("`[z-a]` is not a valid regular expression", "bad character range")),
])
def test_an_expression_that_cannot_compile_is_a_usage_error(cli, slow_store, pattern, words):
    result = assert_refused(cli, slow_store, ("search", "-E", pattern), 2, *words)
    assert len(result.stderr) < 400  # a huge expression is not echoed whole


def test_a_backtracking_expression_stops_at_the_deadline_naming_the_record(cli, slow_store, monkeypatch):
    monkeypatch.setattr(regexbound, "RECORD_SECONDS", 0.3)
    (name,) = (state_dir(slow_store) / "checkpoints").iterdir()
    began = time.monotonic()
    result = assert_refused(cli, slow_store, ("search", "-E", SLOW), 2, "the pattern takes too long on ",
                            f"checkpoints/{name.name}", "simplify it")
    assert time.monotonic() - began < 5
    assert "Traceback" not in result.stderr


def test_a_backtracking_expression_on_a_pin_names_the_pins(cli, repo, monkeypatch):
    monkeypatch.setattr(regexbound, "RECORD_SECONDS", 0.3)
    start_task(cli, "r1")
    assert cli("context", "pin", "constraint", "--", VICTIM).exit_code == 0
    assert_refused(cli, repo, ("search", "-E", SLOW, "--kind", "pin"), 2, "the pattern takes too long on a pin in ")


def test_a_fast_expression_still_matches_under_the_deadline(cli, slow_store):
    result = cli("search", "-E", "a+!$")
    assert result.exit_code == 0 and VICTIM in result.stdout


def test_the_deadline_keeps_a_timer_the_caller_armed():
    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(signum))
    try:
        signal.setitimer(signal.ITIMER_REAL, 30)
        assert regexbound.search(re.compile("b"), "abc") is not None
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 25 < left <= 30 and not fired
        with pytest.raises(regexbound.TooSlow):
            regexbound.search(re.compile(SLOW), VICTIM, seconds=0.2)
        assert 25 < signal.getitimer(signal.ITIMER_REAL)[0] <= 30
        assert regexbound.sub(re.compile(SLOW), "x", VICTIM, seconds=0.2) is None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert isinstance(regexbound.TooSlow(), UsageError) and regexbound.TooSlow().code == 2


def test_the_console_script_stops_within_the_documented_deadline(slow_store):
    began = time.monotonic()
    result = run("search", "-E", SLOW, cwd=slow_store, timeout=30)
    took = time.monotonic() - began
    assert result.returncode == 2 and b"the pattern takes too long on " in result.stderr, result
    assert regexbound.RECORD_SECONDS <= took < regexbound.RECORD_SECONDS + 5
    overflow = run("search", "-E", "a{99999999999}", cwd=slow_store)
    assert overflow.returncode == 2 and b"the repetition number is too large" in overflow.stderr


def test_one_timer_for_a_whole_search_stops_a_slow_match_and_keeps_the_callers(monkeypatch):
    monkeypatch.setattr(regexbound, "RECORD_SECONDS", 0.3)
    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(signum))
    try:
        signal.setitimer(signal.ITIMER_REAL, 30)
        with regexbound.watching():
            for _ in range(1000):  # many fast matches, each well inside the budget
                assert regexbound.search(re.compile("b"), "abc") is not None
            began = time.monotonic()
            with pytest.raises(regexbound.TooSlow):
                regexbound.search(re.compile(SLOW), VICTIM)
            assert 0.3 <= time.monotonic() - began < 1.5
            assert regexbound.sub(re.compile(SLOW), "x", VICTIM) is None
            time.sleep(0.35)  # ticks with no match under way raise nothing
        assert 25 < signal.getitimer(signal.ITIMER_REAL)[0] <= 30 and not fired
        signal.setitimer(signal.ITIMER_REAL, 0.2)  # a caller's timer due inside the search still fires
        with regexbound.watching():
            time.sleep(0.5)
        assert fired == [signal.SIGALRM]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_the_mcp_tool_is_bounded_too(cli, slow_store, monkeypatch):
    from majordomus import search
    from majordomus.workspace import Workspace

    monkeypatch.setattr(regexbound, "RECORD_SECONDS", 0.3)
    with pytest.raises(regexbound.TooSlow, match=r"the pattern takes too long on .*checkpoints/"):
        search.tool(Workspace.open(str(slow_store)), [SLOW], regex=True)
    assert search.tool(Workspace.open(str(slow_store)), ["a+!$"], regex=True)["matches"]


@pytest.mark.parametrize(("pattern", "words"), [
    ("[[:alpha:]]", "uses the POSIX class `[:alpha:]`, which Python's regular expressions do not have"),
    ("x[[:digit:]]+", "the POSIX class `[:digit:]`"),
    ("[[a]", "is ambiguous to Python's regular expressions (possible nested set at position 1)"),
    ("[a--b]", "(possible set difference at position 2)"),
])
def test_search_says_plainly_what_python_only_warns_about(cli: Any, repo: Path, pattern: str, words: str) -> None:
    start_task(cli, "s1")
    assert cli("checkpoint", input="note").exit_code == 0
    result = assert_refused(cli, repo, ("search", "-E", pattern), 2, words)
    assert "Warning" not in result.stderr and "site-packages" not in result.stderr


def test_one_past_search_a_bracket_class_and_an_escaped_bracket_work(cli: Any, repo: Path) -> None:
    start_task(cli, "s1")
    assert cli("checkpoint", input="note [x] 42").exit_code == 0
    for pattern in ("n[a-z]te", r"\[x\]", "[0-9]+", r"\[:alpha:\]"):
        result = cli("search", "-E", pattern)
        assert result.exit_code in (0, 1) and "Warning" not in result.stderr, (pattern, result)
    assert cli("search", "-E", "n[a-z]te").exit_code == 0
