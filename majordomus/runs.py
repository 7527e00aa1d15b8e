"""Execution records (design §17): `majordomus run -- CMD` runs CMD and keeps evidence of what it did.

"The tests pass" in a note is a claim; a run record is evidence: the identity of the work tree taken
*before* CMD starts (what was tested), CMD's exit status, the sha256 and size of everything it printed,
and its last lines — escaped, secrets redacted, never the environment.

Running CMD itself (its pipes, its signals) is `runs_exec`.
"""

from __future__ import annotations

import os
import sys

from majordomus import clock, identity, secretscan, tasks
from majordomus.errors import MajordomusError, NoActiveTask, UsageError
from majordomus.lite import names
from majordomus.output import escape
from majordomus.store import commit, listing, reading, records
from majordomus.workspace import Workspace

TYPE_CHECKING = False  # on the session-start path: typing is not imported at run time
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from majordomus.git.status import Status
    from majordomus.runs_exec import Outcome




def default_label(argv: list[str]) -> str:
    return names.branch_slug(os.path.basename(argv[0]) or "run")[:64].lstrip(".-_") or "run"


def check_label(label: str) -> str:
    if not names.is_profile_name(label):
        raise UsageError(f"`{escape(label)}` is not a valid label",
                         "use 1–64 characters of A-Z, a-z, 0-9, `.`, `_`, `-`, starting with a letter or digit")
    return label


def _argv_text(arg: str) -> str:
    return "[redacted]" if secretscan.looks_secret(arg) else escape(arg)


def run(ws: Workspace, argv: list[str], label: str | None) -> tuple[Outcome, str | None]:
    """Run CMD for the active task and record it; (what happened, the record's path)."""
    from majordomus.runs_exec import NOT_EXECUTABLE, NOT_FOUND, CannotRun, execute  # `run` alone runs a command

    if not argv:
        raise UsageError("no command to run", "majordomus run [--label L] -- CMD [ARGS...]")
    label = check_label(label) if label is not None else default_label(argv)
    task = tasks.active(ws)  # exit 11 before anything runs
    import shutil

    if shutil.which(argv[0]) is None:  # as a shell would say, before anything is written
        found = os.path.exists(argv[0]) if os.sep in argv[0] else False
        raise CannotRun(argv[0], "not executable" if found else "command not found",
                        NOT_EXECUTABLE if found else NOT_FOUND)
    ws.ensure_state("tasks", "runs", "cache")
    at = clock.now_iso()
    fields = identity.fields(ws, "run", task, at)  # before CMD starts: what was tested
    outcome = execute(argv)
    fields += [("argv", [_argv_text(a) for a in argv]), ("label", label), ("exit_status", outcome.status)]
    if outcome.signal is not None:
        fields.append(("signal", outcome.signal))
    fields += [("started_at", at), ("duration_ms", outcome.duration_ms),
               ("output_sha256", outcome.tail.digest.hexdigest()), ("output_bytes", outcome.tail.size),
               ("output_lines", outcome.tail.lines)]
    try:
        done = commit.commit(_record(ws, task, at, outcome.tail.body(), fields, label))
        path = done.path
        if not done.created and not done.completed:  # a record is its content: an identical run is the same one
            sys.stderr.write("majordomus: an identical run record (the same command, output, status and duration, "
                             "in the same second) is already stored: this run is recorded as that one\n")
    except NoActiveTask as exc:
        # `task` was active when CMD started (else CMD never ran): it changed while CMD ran, and there is no
        # body to blame, as a checkpoint's refusal would.
        exc.message = f"task `{task.id}` is no longer the active task in {ws.where()}: it changed while the command ran"
        exc.hint = "check `majordomus task show`; run the command again for the task that is active now"
        raise RecordFailed(outcome.status, exc) from exc
    except MajordomusError as exc:
        raise RecordFailed(outcome.status, exc) from exc
    return outcome, path


class RecordFailed(Exception):
    """CMD ran, its record did not fully land: the caller exits with CMD's status if it failed (what a
    script asks first), else with the error's code, so that a pass is never read without its record."""

    def __init__(self, status: int, error: MajordomusError) -> None:
        super().__init__(error.message)
        self.status = status
        ran = f"the command ran (exit status {status})"
        if error.message.startswith("the run record ") and " is stored" in error.message:  # linked, not complete
            error.message = f"{ran}; {error.message}"
        else:
            error.message = f"{ran}, but its run record was not written: {error.message}"
        if status == 0:  # say why the exit status is not CMD's
            error.hint = (f"{error.hint}; " if error.hint else "") + (
                f"majordomus exits {error.code}, not CMD's 0: a pass whose record did not fully land must not read "
                "as a recorded pass")
        self.error = error


def _record(ws: Workspace, task: tasks.Task, at: str, body: str, fields: list[tuple[str, Any]],
            label: str) -> commit.Write:
    """A run record: for the task CMD started under, which must still be active here when CMD ends (the
    lock, then check again, as for every record); the task points at the latest run of each label. A new
    run of a label also takes the place of that label's record gone or replaced (its label then as the
    ledger logged it): new evidence of the same thing, the one way to stop naming the lost one."""
    same_label = tuple(p for p in task.runs if _label_of(ws, task, p) == label)
    return commit.Write(ws, task, at, body, fields, kind="run", what="run record", subdir="runs", event="task.run",
                        pointer="runs", replaces=same_label, lines=False, event_keys=("exit_status", "head", "label"),
                        any_pending=True)  # the task record moves when CMD ended, the record is stamped at its start


def _label_of(ws: Workspace, task: tasks.Task, rel: str) -> object:
    """The label of the run record at `rel`: its front matter when it is intact, else its ledger event's."""
    found = reading.examine(ws, rel)
    if isinstance(found, reading.Record):
        return found.meta.get("label") if found.meta.get("kind") == "run" else None
    for event in reading.task_events(ws, task.id):
        if event.get("path") == rel and event["event"] in ("task.run", "sync.import"):
            return event.get("label")
    return None


def examined(ws: Workspace, task: tasks.Task) -> tuple[list[dict[str, Any]], list[reading.Gone]]:
    """The latest run of each label of `task`, oldest first (the task record points at them: no scan),
    each checked against the digest in its name; and those the task names that a briefing cannot stand
    on (design §9): deleted, unreadable, replaced — or, from another machine, never shared here."""
    found, gone = [], []
    trail: reading.Walk | None = None  # walked once, and only when a record is not here
    for rel in task.runs:
        record = reading.examine(ws, rel)
        if isinstance(record, reading.Gone):
            trail = trail or reading.walk(ws, task)
            gone.append(reading.unshared(record, trail))
        elif record.meta.get("kind") == "run" and record.meta.get("task") == task.id:
            found.append(dict(record.meta, path=rel))
    found.sort(key=lambda m: str(m.get("timestamp")))
    return found, gone


SUMMARY_KEYS = ("timestamp", "task", "label", "exit_status", "signal", "argv", "branch", "head", "worktree",
                "worktree_state", "duration_ms", "output_sha256", "output_bytes")


REPLACED = ("replaced: its content no longer matches the digest in its name, so it is not shown "
            "(run `majordomus doctor`)")


def summaries(ws: Workspace, task: str | None = None) -> Iterator[dict[str, Any]]:
    """Every run record, newest first (of `task` when given), one read each. A record whose bytes no
    longer match the digest in its name is listed as replaced, never with what it now says (with `task`:
    when its front matter, untrusted, claims the task)."""
    for path in listing.list_paths(ws.paths.runs):
        shown = ws.display(path)
        try:
            data = reading.whole(ws, path, oversized=ValueError)
            intact = reading.intact(path, data)
            meta, body = records.split(data)
        except FileNotFoundError:
            continue
        except (ValueError, UnicodeDecodeError):
            if task is None:
                yield {"path": shown, "name": os.path.basename(path), "error": "no readable front matter "
                       "(run `majordomus doctor`)"}
            continue
        if task is not None and meta.get("task") != task:
            continue
        if not intact:
            yield {"path": shown, "name": os.path.basename(path), "error": REPLACED}
            continue
        out: dict[str, Any] = {"path": shown, "name": os.path.basename(path)}
        out.update({key: meta.get(key) for key in SUMMARY_KEYS})
        out["lines"] = len(body.split("\n")) if body else 0
        out["sha256"] = records.sha256(data)
        yield out


def verdict(meta: dict[str, Any]) -> str:
    """`passed`, `failed (exit 3)` or `was interrupted (signal 2)`."""
    status = meta.get("exit_status")
    if status == 0:
        return "passed"
    if isinstance(meta.get("signal"), int):
        return f"was interrupted (signal {meta['signal']})"
    return f"failed (exit {status})"


def latest(ws: Workspace, task: tasks.Task) -> list[dict[str, Any]]:
    """The latest run of each label of `task`, oldest first: the intact ones of `examined`."""
    return examined(ws, task)[0]


def brief_lines(ws: Workspace, task: tasks.Task, here: Status | None = None,
                found: list[dict[str, Any]] | None = None) -> list[str]:
    """For `brief`: the latest run of each label with its verdict, and whether head or the work tree moved
    since it ran (`- `tests` passed at 3f2a9c1; 1 commit since`). A run whose head was amended or rebased
    is shown at the new id (design §21): `passed at 8b1c0de, rewritten from 3f2a9c1`. `here`: the work
    tree's `git status` when the briefing already ran it; `found`: `latest`, when already read (a record
    gone or replaced is not among them: the briefing names it at its top instead)."""
    if found is None:
        found = latest(ws, task)
    if not found:
        return []
    from majordomus import rewrites
    from majordomus.git import status

    if here is None:
        here = status.status(ws.place)
    since: dict[str | None, tuple[str, str]] = {}
    lines = []
    for meta in found:
        head = meta.get("head") if isinstance(meta.get("head"), str) else None
        if head not in since:
            since[head] = _head_moved(ws, rewrites.relate(ws, head, here.head))  # one ledger read in all
        at, moved = since[head]
        if not moved.endswith("not in this repository") and sorted(here.changed) != sorted(meta.get("changed_files") or []):
            moved += ("; " if moved else "") + "the work tree changed since"
        label = escape(str(meta.get("label")))
        lines.append(f"- `{label}` {verdict(meta)} at {at}"
                     f" ({escape(str(meta.get('timestamp')))}); {moved or 'nothing moved since'}")
    return lines


def _head_moved(ws: Workspace, rel: Any) -> tuple[str, str]:
    """(where the run stands: `3f2a9c1` or `8b1c0de, rewritten from 3f2a9c1`, what moved since)."""
    from majordomus import rewrites

    at = rewrites.short(rel.then) if rel.then else "0000000"
    if rel.mapped is not None:
        at = f"{rewrites.short(rel.mapped)}, rewritten from {at}"
        if rel.same_tree is False:
            at += " (the rewrite changed files)"
    if rel.kind == "same":
        return at, ""
    if rel.kind == "no-head":
        return at, "no commit here now"
    if rel.kind == "foreign":
        return at, "its head is not in this repository"
    if rel.kind == "unreachable":
        return at, "its head is no longer in this branch's history"
    if rel.kind == "behind":
        return at, f"HEAD moved back: {rel.behind} commit{'s' if rel.behind != 1 else ''} of it not in HEAD"
    return at, f"{rel.ahead} commit{'s' if rel.ahead != 1 else ''} since"
