"""A closed standard stream (`<&-`, `>&-`, `2>&-`; docs/exit-codes.md): a command whose stdin or stdout is
closed exits 12 with one clear line and writes nothing; a command that never reads its closed stdin runs
as usual; the hooks are fail-open and exit 0. Through the console script: only a process has closed fds."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers import HANDOFF_BODY, MAJORDOMUS, ledger_bytes, run_here, snapshot, start_task_at


def shell(repo: Path, command: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """`majordomus …` under sh, where the redirections close the descriptors."""
    return subprocess.run(["sh", "-c", command.replace("majordomus", f"'{MAJORDOMUS}'")], cwd=repo, input=stdin,
                          capture_output=True, timeout=60, check=False)


@pytest.fixture
def started(repo: Path) -> Path:
    start_task_at(repo, "s", "--title", "s")
    assert run_here("checkpoint", cwd=repo, input="first").returncode == 0
    return repo


@pytest.mark.parametrize("command", ["majordomus checkpoint <&-", "majordomus handoff <&-", "majordomus mcp <&-"])
def test_a_closed_stdin_is_exit_12_before_anything_is_written(started, command):
    before, ledger = snapshot(started), ledger_bytes(started)
    done = shell(started, command)
    assert done.returncode == 12, done
    assert done.stderr.decode().startswith("majordomus: standard input is closed (`<&-`)")
    assert b"nothing was written" in done.stderr and b"Traceback" not in done.stderr
    assert (snapshot(started), ledger_bytes(started)) == (before, ledger)


def test_one_past_a_command_that_never_reads_its_closed_stdin_runs_and_stdin_given_works(started):
    done = shell(started, "majordomus context pin decision -- keep it <&-")
    assert done.returncode == 0, done
    assert shell(started, "majordomus handoff", HANDOFF_BODY.encode()).returncode == 0  # the same with a stdin


@pytest.mark.parametrize("command", ["majordomus brief >&-", "majordomus log >&-", "majordomus checkpoint --list >&-",
                                     "majordomus --help >&-", "echo more | majordomus checkpoint >&-"])
def test_a_closed_stdout_is_exit_12_with_a_message_and_nothing_written(started, command):
    before, ledger = snapshot(started), ledger_bytes(started)
    done = shell(started, command)
    assert done.returncode == 12, done
    assert done.stderr.decode().startswith("majordomus: standard output is closed (`>&-`): nothing was done")
    assert b"Traceback" not in done.stderr
    assert (snapshot(started), ledger_bytes(started)) == (before, ledger)


def test_a_closed_stderr_loses_the_message_not_the_exit_code(started):
    assert shell(started, "majordomus task show nope 2>&-").returncode == 2
    assert shell(started, "majordomus brief 2>&- >/dev/null").returncode == 0


def test_the_hooks_exit_0_with_any_stream_closed(started):
    payload = json.dumps({"session_id": "s", "source": "startup"}).encode()
    for command in ("majordomus hook session-start >&-", "majordomus hook stop >&- 2>&-",
                    "majordomus hook compact --phase pre >&-", "majordomus hook rewrite amend <&-"):
        done = shell(started, command, payload)
        assert (done.returncode, b"Traceback" in done.stderr) == (0, False), (command, done)
    answered = shell(started, "majordomus hook session-start <&-")  # no payload: still the briefing
    assert answered.returncode == 0 and json.loads(answered.stdout)["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize("env, args", [
    ({"PYTHONIOENCODING": "ascii"}, ("brief",)),
    ({"PYTHONIOENCODING": "ascii"}, ("log", "--graph")),
    ({"PYTHONIOENCODING": "ascii"}, ("checkpoint", "--show")),
    ({"LC_ALL": "C", "PYTHONUTF8": "0"}, ("brief",)),
    ({"LC_ALL": "C", "PYTHONUTF8": "0"}, ("search", "café")),
])
def test_an_output_that_cannot_say_every_character_shows_them_escaped_never_exit_70(started, env, args):
    """An ASCII standard output (or a C locale without Python's UTF-8 mode): what it cannot encode is shown
    `\\xNN`, as stderr shows it, and the command exits 0; under the C locale an argument is still read as UTF-8
    (`search café` finds the record). One past the edge: the same command on UTF-8 prints the character."""
    assert run_here("checkpoint", cwd=started, input="café au lait\n").returncode == 0
    done = subprocess.run([MAJORDOMUS, *args], cwd=started, env=dict(os.environ, **env), capture_output=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert b"caf\\xe9 au lait" in done.stdout, done.stdout[-400:]
    utf8 = subprocess.run([MAJORDOMUS, *args], cwd=started, capture_output=True, check=False)
    assert utf8.returncode == 0 and "café au lait".encode() in utf8.stdout
