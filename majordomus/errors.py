"""The one error type that reaches the user, and the exit codes of design §14."""

from __future__ import annotations

OK = 0
FINDING = 1
USAGE = 2
REFUSED = 10
NO_TASK = 11
ENVIRONMENT = 12
INTERNAL = 70
BUSY = 75


class MajordomusError(Exception):
    """An error the user can act on: one line of what happened, one line of what to do next. What it
    quotes under that line (git's own words, the entries a pull refused) is `detail`, one item a line: each
    is shown on a line of its own, indented, and nothing in the message or the hint can start one (a path
    or a name holding a line break is shown escaped)."""

    code = INTERNAL

    def __init__(self, message: str, hint: str = "", code: int | None = None,
                 detail: tuple[str, ...] | list[str] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.detail = tuple(detail)
        if code is not None:
            self.code = code



class Refused(MajordomusError):
    """The input breaks a rule (cap, identity field, section, encoding, size)."""

    code = REFUSED


def where_words(worktree: str | None, branch: str | None) -> str:
    """Where a task is active, as every message says it: "worktree W on branch B" (or "a detached HEAD")."""
    return f"worktree {worktree} on " + (f"branch {branch}" if branch else "a detached HEAD")


class NoActiveTask(MajordomusError):
    code = NO_TASK

    def __init__(self, where: str, changed_from: str | None = None, *,
                 taken: tuple[str, str] | None = None) -> None:
        if taken is not None:  # (task id, where its record says it is active now)
            super().__init__(
                f"no active task in {where}: task `{taken[0]}` was taken over and is active in {taken[1]}; "
                "nothing was written",
                f"resume it here with `majordomus task resume {taken[0]} --force`, or start another task",
            )
            return
        if changed_from is not None:
            super().__init__(
                f"task `{changed_from}` is no longer the active task in {where} (it changed while this "
                "command ran); nothing was written",
                "check `majordomus task show`, then write it again for the task that is active now",
            )
            return
        super().__init__(
            f"no active task in {where}",
            "start one with `majordomus task start ID` or resume one with `majordomus task resume ID`",
        )


class EnvironmentProblem(MajordomusError):
    """Not in a git work tree, or the state directory is unusable."""

    code = ENVIRONMENT


def rerun(hint: str | None, then: str = "it completes what is missing", *, instead: str | None = None) -> str:
    """`hint`, then "run the same command again: THEN", said once: a cause's own hint (a full disk's, an I/O
    error's) may end with the same words already. `instead`: what to run in its place (a `run` must not
    run its command twice), said where the cause's hint would have said to run it again."""
    again = "run the same command again"
    hint = hint or ""
    if instead is not None:
        for tail in (f", then {again}", f"; then {again}", again):
            if hint.endswith(tail):
                hint = hint[: -len(tail)]
                break
        return f"{hint}; then {instead}" if hint else instead
    if not hint.endswith(again):
        hint = f"{hint}; then {again}" if hint else again
    return f"{hint}: {then}"


class UsageError(MajordomusError):
    code = USAGE


class NotFound(MajordomusError):
    code = USAGE
