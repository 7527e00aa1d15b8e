"""The calls no write step names, failing (design §2b): a `stat`, a `close`, a read part way, a lock. A file
system says these of itself (a failing disk, a network mount gone stale, locks refused), and a command meets
them anywhere: each is exit 12 naming what failed, or exit 0 when the command could do without it — never an
internal error (70), never a traceback — and the same command run again succeeds. A hook exits 0 whatever
happens (it is fail-open), without a traceback.

The layer here wraps those functions in this process while one command runs in-process and fails the Nth
call on a path inside the test's repository (the test process's own files are untouched): for each command
and each function, the first calls a clean run makes, in turn.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from helpers import HANDOFF_BODY, run_here

from majordomus.store.fault import Faults

# The function, and what the file system answers when it fails.
CALLS = {"fstat": errno.EIO, "close": errno.EIO, "pread": errno.EIO, "flock": errno.ENOLCK, "lstat": errno.ESTALE,
         "stat": errno.ESTALE, "read": errno.EINVAL}
FIRST = 4  # the first calls of each kind: where a command opens, locks and reads its state


def _setup(repo: Path) -> None:
    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    assert run_here("checkpoint", cwd=repo, input="a first note\n").returncode == 0


COMMANDS: dict[str, tuple[tuple[str, ...], str]] = {
    "checkpoint": (("checkpoint",), "the note\n"),
    "brief": (("brief",), ""),
    "check": (("check",), ""),
    "context pin": (("context", "pin", "decision", "--", "keep it small"), ""),
    "handoff": (("handoff",), HANDOFF_BODY),
    "session-start": (("hook", "session-start", "--runtime", "claude"), '{"session_id": "s", "source": "startup"}'),
}


class _Failing:
    """Counts the calls of `name` on paths under `root`, and fails the `nth` one (0: none)."""

    def __init__(self, root: Path, name: str, nth: int) -> None:
        self.under, self.name, self.nth = Faults(root), name, nth  # which paths count: the write walk's rule
        self.count = 0

    def hit(self, target: Any) -> None:
        if self.under.ours(target):
            self.count += 1
            if self.count == self.nth:
                code = CALLS[self.name]
                raise OSError(code, os.strerror(code))


@contextmanager
def _failing(root: Path, name: str, nth: int) -> Iterator[_Failing]:
    layer = _Failing(root, name, nth)
    module: Any = fcntl if name == "flock" else os
    real: Callable[..., Any] = getattr(module, name)

    def wrapped(target: Any, *args: Any, **kw: Any) -> Any:
        layer.hit(target)
        return real(target, *args, **kw)

    setattr(module, name, wrapped)
    try:
        yield layer
    finally:
        setattr(module, name, real)


def _cases() -> Iterator[tuple[str, str]]:
    for command in COMMANDS:
        for name in CALLS:
            yield command, name


@pytest.mark.parametrize(("command", "name"), list(_cases()))
def test_a_failing_stat_close_read_or_lock_is_exit_12_or_0_and_the_retry_succeeds(repo: Path, tmp_path: Path,
                                                                                  command: str, name: str) -> None:
    import shutil

    _setup(repo)
    args, stdin = COMMANDS[command]
    pristine = tmp_path / "pristine"
    shutil.copytree(repo, pristine, symlinks=True)
    with _failing(repo, name, 0) as counting:
        assert run_here(*args, cwd=repo, input=stdin).returncode == 0
    hook = args[0] == "hook"
    problems = []
    for nth in range(1, min(counting.count, FIRST) + 1):
        shutil.rmtree(repo)
        shutil.copytree(pristine, repo, symlinks=True)
        with _failing(repo, name, nth):
            failed = run_here(*args, cwd=repo, input=stdin)
        err = failed.stderr.decode()
        case = f"{command}: {name} #{nth} fails: exit {failed.returncode}: {err[:300]!r}"
        if "Traceback" in err or "internal error" in err or failed.returncode not in ((0,) if hook else (0, 12)):
            problems.append(case)
            continue
        if failed.returncode == 12 and not (err.startswith("majordomus: ") and "\nhint: " in err):
            problems.append(case + " (no message and hint)")
            continue
        if failed.returncode == 0:
            continue  # it could do without that call
        again = run_here(*args, cwd=repo, input=stdin)
        if again.returncode != 0:
            problems.append(case + f" -> the retry: exit {again.returncode}: {again.stderr.decode()[:200]!r}")
    assert not problems, "\n".join(problems)
