"""The one runner of git subprocesses: every git command majordomus runs goes through `run` or `git`.

Each call runs in the place's worktree with the place's environment (`GIT_DIR` and `GIT_WORK_TREE` made
absolute, so a repository located through them is found from any directory), stdin closed, output
captured. Standard library only: the hot paths run git through here too.
"""

from __future__ import annotations

import os

from majordomus.errors import EnvironmentProblem
from majordomus.lite import textrules
from majordomus.lite.lazyre import LazyRe

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol

    from majordomus.lite.dotgit import Place

    class Where(Protocol):
        """Anything that says where git runs: a `Place`, or an opened repository."""

        @property
        def worktree(self) -> str: ...

        @property
        def git_env(self) -> dict[str, str]: ...


class Ran:
    """What one git command did."""

    __slots__ = ("args", "returncode", "stderr", "stdout")

    def __init__(self, args: tuple[str, ...], returncode: int, stdout: bytes, stderr: bytes) -> None:
        self.args = args
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr

    @property
    def out(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    @property
    def err(self) -> str:
        return self.stderr.decode("utf-8", "replace")

    def reason(self) -> str:
        """git's own reason in one line: its `fatal:`/`error:` line, else its last line, else the exit code."""
        lines = [line.strip() for line in self.err.split("\n") if line.strip()]
        for line in lines:
            if line.startswith(("fatal:", "error:")):
                return line
        return lines[-1] if lines else f"exit code {self.returncode}"


def hint(args: tuple[str, ...] | list[str], where: str, said: str = "") -> str:
    """The one wording of what to do when git failed (`said`: what git printed, when there is a better one)."""
    return lock_left(said) or f"run `git {' '.join(args[:2])}` in {where} to see what git says"


_LOCK_LEFT = LazyRe(r"Unable to create '([^']+\.lock)': File exists")


def lock_left(said: str) -> str | None:
    """What to do when git could not take a lock because a git command that was stopped (killed, a power
    loss) left its `.lock` file behind: every later command fails the same way until it is removed."""
    found = _LOCK_LEFT.search(said)
    if found is None:
        return None
    return (f"a git command that was stopped left {found.group(1)}: when no git command runs in this repository, "
            f"remove it (`rm {textrules.shell_quoted(found.group(1))}`), then run the same command again")


# Before every git command: never take a lock git calls optional (`git status` refreshing the index takes
# `.git/index.lock`), so that a `git add` or a commit the user runs at the same moment is never refused
# because majordomus was looking.
OPTIONS = ("--no-optional-locks",)

# How long the git commands of this process may take in all, in seconds; None: as long as they take. The
# agent-runtime hooks set it (`majordomus.main`, `limit`): a git that never returns (a stuck
# `core.fsmonitor`, a hung network mount) must not hold the session, nor five slow ones one after the
# other, and the hook goes on without what git would have said.
deadline: float | None = None
_until: float | None = None  # the monotonic moment the deadline ends

# How long one git command that talks to a remote (`ls-remote`, `fetch`, `push`) may take: a remote that
# never answers must not hold `sync` for ever (design §2a: a remote is untrusted input). The records are
# small text; two minutes is far more than a fetch of them needs, and a slower one says so (exit 12).
REMOTE_SECONDS = 120.0

# How long any other git command may take. git itself waits without end where it opens a FIFO in the place
# of a file it reads (an ignore file: any `.gitignore`, `.git/info/exclude`), and behind a stuck
# `core.fsmonitor` or a hung network mount: a command must not wait with it (design §2b). A `git status` of
# a very large work tree on a cold disk takes seconds; a minute is far more than any local command needs.
LOCAL_SECONDS = 60.0


_STUCK = ("a git that does not return: a FIFO where git reads a file (an ignore file: a `.gitignore`, "
          "`.git/info/exclude`), a stuck `core.fsmonitor`, or a hung network mount? ")


def limit(seconds: float | None) -> None:
    """From now on, every git command of this process ends within `seconds` from now, all of them together."""
    import time

    global deadline, _until
    deadline = seconds
    _until = None if seconds is None else time.monotonic() + seconds


def environment(where: Where) -> dict[str, str] | None:
    """The environment of a git subprocess here: ours, plus the place's own git variables."""
    if not where.git_env:
        return None
    env = dict(os.environ)
    env.update(where.git_env)
    return env


def run(where: Where, *args: str, cwd: str | None = None, within: float | None = None,
        remote: str | None = None) -> Ran:
    """Run `git ARGS` and return what it did, whatever its exit code; exit 12 only when git cannot run, or
    when it has not ended within `within` seconds (a call to a remote: `REMOTE_SECONDS`) or the time left
    to this process's git commands (`limit`). `remote`: the remote it talks to, for what the error says."""
    from majordomus.lite import spawn

    bound = within if within is not None else LOCAL_SECONDS
    left = bound
    if _until is not None:
        import time

        left = min(_until - time.monotonic(), bound)
    try:
        if left <= 0:
            raise TimeoutError  # the time given to git is spent: not one more command
        code, out, err = spawn.run(["git", *OPTIONS, *args], cwd or where.worktree, environment(where), left)
    except spawn.TooMuch as exc:
        raise EnvironmentProblem(f"`git {' '.join(args[:2])}` {exc}; it was stopped, in {where.worktree}",
                                 "a git that prints without end (a wrapper on PATH, a hook)? "
                                 + hint(args, where.worktree)) from None
    except TimeoutError:
        if deadline is None and within is None:
            raise EnvironmentProblem(f"`git {' '.join(args[:2])}` did not answer within {bound:g} s; it was stopped, "
                                     f"in {where.worktree}", _STUCK + hint(args, where.worktree)) from None
        if within is not None and (deadline is None or within <= deadline):
            raise EnvironmentProblem(f"`git {' '.join(args[:2])}` got no answer from the remote within {within:g} s; "
                                     f"it was stopped, in {where.worktree}",
                                     "a remote that does not answer (a stalled connection, or a server, "
                                     "`uploadpack` or `receivepack` that never returns)? See what "
                                     f"`git ls-remote {remote or 'REMOTE'}` does there, then run the same command "
                                     "again") from None
        raise EnvironmentProblem(f"`git {' '.join(args[:2])}` did not answer within the {deadline:g} s given to git, "
                                 f"in {where.worktree}", _STUCK + hint(args, where.worktree)) from None
    except OSError as exc:
        why = ("install git, or put it on PATH" if isinstance(exc, (FileNotFoundError, PermissionError))
               else "no process or descriptor left to run it (`ulimit -n`, `ulimit -u`), or arguments too long")
        raise EnvironmentProblem(f"cannot run git: {exc.strerror}", why) from exc
    return Ran(args, code, out, err)


def git(where: Where, *args: str, ok: tuple[int, ...] = (0,)) -> bytes:
    """Run `git ARGS`; its stdout, or exit 12 naming what git said."""
    done = run(where, *args)
    if done.returncode not in ok:
        raise EnvironmentProblem(f"`git {' '.join(args[:2])}` failed in {where.worktree}: {done.reason()}",
                                 hint(args, where.worktree, done.err))
    return done.stdout


class RepositoryRefused(EnvironmentProblem):
    """git will not work in this repository (dubious ownership, `safe.directory`): exit 12, and a hook
    says this one line and injects nothing from the repository."""


def refusal(place: Place) -> RepositoryRefused | None:
    """Why git refuses to work in `place` (dubious ownership, `safe.directory`), or None when it does not.

    Asked only when the repository belongs to another user (`Place.foreign`), so that a command never
    reads a repository that git itself would not (design §2a): exit 12 with git's own reason.
    """
    if not place.foreign():
        return None
    done = run(place, "rev-parse", "--git-dir")
    if done.returncode == 0:
        return None
    return RepositoryRefused(f"git refuses the repository at {place.worktree}: {done.reason()}",
                              "if you trust it, mark it safe as git says (`git config --global --add safe.directory "
                              "PATH`), or run majordomus as the repository's owner")
