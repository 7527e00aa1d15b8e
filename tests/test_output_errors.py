"""Our own output failing (design §14): stdout or stderr on a full disk (`> /dev/full`) is exit 12 with one
line on stderr when stderr still takes it — never 70 (an internal error), never 0, never a traceback.
The console script, because the process's own streams and its exit are the subject."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import pytest
from helpers import MAJORDOMUS, run_here, start_task_at

from majordomus import main

FULL = "/dev/full"
MESSAGE = b"majordomus: cannot write the output: No space left on device"


@pytest.fixture(autouse=True)
def _needs_dev_full() -> None:
    if not os.path.exists(FULL):
        pytest.fail("/dev/full is missing: the tests of a full disk under stdout need it")


def _to_full(repo: Path, *args: str, stdout: bool = True, stderr: bool = False, buffered: bool = False,
             stdin: bytes = b"") -> tuple[int, bytes]:
    """Run the console script with stdout (and/or stderr) on /dev/full; (exit code, what stderr got)."""
    env = dict(os.environ)
    if buffered:
        env.pop("PYTHONUNBUFFERED", None)
    else:
        env["PYTHONUNBUFFERED"] = "1"
    with open(FULL, "wb") as full:
        done = subprocess.run([str(MAJORDOMUS), *args], cwd=repo, input=stdin, env=env, check=False,
                              stdout=full if stdout else subprocess.DEVNULL,
                              stderr=full if stderr else subprocess.PIPE, timeout=60)
    return done.returncode, done.stderr or b""


@pytest.mark.parametrize("buffered", [False, True])
def test_a_listing_to_a_full_disk_is_exit_12_with_one_line(repo: Path, buffered: bool) -> None:
    start_task_at(repo)
    for args in (("ledger",), ("ledger", "--json"), ("task", "show", "t1"), ("--version",)):
        code, err = _to_full(repo, *args, buffered=buffered)
        assert code == 12, (args, err)
        assert err.startswith(MESSAGE) and err.count(b"\n") == 2 and b"\nhint: " in err, (args, err)
        assert b"Traceback" not in err and b"Exception ignored" not in err, (args, err)


def test_stdout_and_stderr_both_on_a_full_disk_is_exit_12(repo: Path) -> None:
    start_task_at(repo)
    assert _to_full(repo, "ledger", stderr=True)[0] == 12
    assert _to_full(repo, "doctor", stderr=True, buffered=True)[0] == 12


def test_an_error_message_that_cannot_be_written_is_exit_12_not_70(repo: Path) -> None:
    start_task_at(repo)
    # the refusal (the task exists) goes to a stderr on a full disk
    assert _to_full(repo, "task", "start", "t1", stdout=False, stderr=True)[0] == 12


@pytest.mark.parametrize("buffered", [False, True])
def test_a_hook_with_its_output_on_a_full_disk_still_exits_0(repo: Path, buffered: bool) -> None:
    """Fail-open whatever buffers the output: a buffered stdout keeps what the failed write left, and the
    exit's last flush must not turn the hook's exit 0 into exit 12."""
    start_task_at(repo)
    for stderr in (True, False):
        code, err = _to_full(repo, "hook", "session-start", stderr=stderr, stdin=b"{}", buffered=buffered)
        assert code == 0, err
        assert stderr or (err.count(b"\n") == 1 and b"(the session goes on)" in err), err


def test_only_an_error_from_writing_output_is_taken_for_one() -> None:
    def raised(exc: OSError) -> OSError:
        try:
            raise exc
        except OSError as caught:
            return caught

    assert not main._writing_output(raised(OSError(errno.ENOSPC, "full", "/some/file")))  # a path: not ours
    assert not main._writing_output(raised(OSError(errno.EACCES, "denied")))
    assert not main._writing_output(raised(FileNotFoundError(errno.ENOENT, "gone")))


def test_a_write_whose_output_fails_says_it_is_stored_and_a_retry_would_store_it_twice(repo: Path) -> None:
    """The checkpoint and the pin land before their output: the message says so, and never sends the user to
    run the write again (which would store a second record, or a second pin)."""
    start_task_at(repo)
    for args, stdin in ((("checkpoint",), b"stored even so\n"), (("context", "pin", "decision", "--", "once"), b"")):
        code, err = _to_full(repo, *args, stdin=stdin)
        assert code == 12 and b"whatever the command stored before printing is stored" in err, (args, err)
        assert b"would store it a second time" in err and b"then run the command again" not in err, err
    assert "stored even so" in run_here("checkpoint", "--show", cwd=repo).stdout.decode()
    assert run_here("context", "show", cwd=repo).stdout.decode().count("once") == 1


@pytest.mark.parametrize("unbuffered", ["", "1"], ids=["buffered", "PYTHONUNBUFFERED"])
@pytest.mark.parametrize("name", ["EINVAL", "EAGAIN"])
def test_an_output_that_refuses_the_write_is_exit_12_saying_what_was_stored(repo: Path, tmp_path: Path, name: str,
                                                                           unbuffered: str) -> None:
    """EINVAL on the write to stdout (an output that does not take it) or EAGAIN (an output someone set
    non-blocking, full for now): exit 12 with the one line that says what was stored, never an internal error
    whose retry would store the pin a second time, and never exit 0 with the pin's id lost. Unbuffered
    (PYTHONUNBUFFERED, `python -u`) Python drops the bytes of a write refused with EAGAIN without a word:
    majordomus puts a line buffer under its output so that the refusal is seen."""
    from helpers import require_tool

    strace = require_tool("strace")
    start_task_at(repo)
    out = tmp_path / "out.txt"
    env = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = unbuffered
    with open(out, "wb") as stdout:
        done = subprocess.run([strace, "-qq", "-o", os.devnull, "-P", str(out), "-e", "trace=write", "-e",
                               f"inject=write:error={name}:when=1", str(MAJORDOMUS), "context", "pin", "decision",
                               "keep it"], cwd=repo, stdout=stdout, stderr=subprocess.PIPE, env=env, check=False)
    err = done.stderr.decode()
    said = "Invalid argument" if name == "EINVAL" else "write could not complete without blocking"
    assert done.returncode == 12 and f"cannot write the output: {said}" in err, err
    assert "internal error" not in err and "whatever the command stored before printing is stored" in err


@pytest.mark.parametrize("args", [("ledger",), ("task", "list"), ("brief",), ("check",), ("checkpoint", "--list")])
def test_a_reader_that_went_away_is_exit_0_in_every_command(repo: Path, tmp_path: Path, args: tuple[str, ...]) -> None:
    """EPIPE on the write to stdout (`| head` closed it; strace gives the error without the signal): exit 0
    and nothing said, whichever parser the command has (click's own handling would exit 1, which means "a
    check found a problem")."""
    from helpers import require_tool

    strace = require_tool("strace")
    start_task_at(repo)
    run_here("checkpoint", cwd=repo, input="a note\n")
    out = tmp_path / "out.txt"
    with open(out, "wb") as stdout:
        done = subprocess.run([strace, "-qq", "-o", os.devnull, "-P", str(out), "-e", "trace=write", "-e",
                               "inject=write:error=EPIPE:when=1", str(MAJORDOMUS), *args], cwd=repo,
                              stdout=stdout, stderr=subprocess.PIPE, check=False)
    assert done.returncode == 0 and done.stderr == b"", (args, done)
