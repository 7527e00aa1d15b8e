"""The one write transaction of a stored record: checkpoint, handoff and run record alike (design §6 step
6, §7, §10, §17).

    lock → the task still holds here → the ledger is writable → link the record → move the task's
    pointer (its task record) → index → ledger event → what follows the event (a handoff leaves the slot)

A refusal before the link writes nothing. design §10's rule for a write that fails part way lives here
and nowhere else:

- the task record fails before it was replaced: the record nothing names yet is unlinked again, and the
  command exits 12 saying nothing was written;
- a later step fails (the task record's directory fsync, the ledger append, the handoff's release of the
  slot): the command exits 12 saying what is stored and what is not, and the same command run again
  completes what is missing — in the same second, where it finds its own record under its final name, or
  later, where it first completes the record the task points at (design §6 step 6: "already stored" is
  said only of a record whose task pointer and ledger event are both there).
"""

from __future__ import annotations

import os

from majordomus import clock
from majordomus.errors import EnvironmentProblem
from majordomus.lite import names, safeio
from majordomus.store import files, ledger, listing, records

TYPE_CHECKING = False  # the checkpoint path: no typing at run time
if TYPE_CHECKING:
    from typing import Any

    from majordomus.tasks import Task
    from majordomus.workspace import Workspace

# How far back from the ledger's end an event for a pending record is looked for: a record whose write
# failed part way is completed by the next write, which comes soon; an older one is doctor's to report.
_LOOK_BACK = 4 << 20


class Write:
    """What one kind of record says of itself; `commit` does the rest. Subclasses set the class attributes
    and override the methods that differ."""

    kind = ""  # the record's `kind` field: checkpoint, handoff, run
    what = ""  # how messages name it: "checkpoint", "handoff", "run record"
    subdir = ""  # its directory under the state directory
    event = ""  # its ledger event

    def __init__(self, ws: Workspace, task_id: str, at: str, body: str) -> None:
        self.ws, self.task_id, self.at, self.body = ws, task_id, at, body

    def check(self) -> Task:
        """Under the lock, after stdin was read: the task to write for, or a refusal (nothing written)."""
        raise NotImplementedError

    def fields(self, task: Task) -> list[tuple[str, Any]]:
        """The record's front matter."""
        raise NotImplementedError

    def pointer(self, task: Task) -> str | None:
        """The newest record of this kind the task record points at."""
        raise NotImplementedError

    def points_at(self, task: Task, rel: str) -> bool:
        """Whether the task record already points at `rel` (or at a record written after it)."""
        raise NotImplementedError

    def point(self, task: Task, rel: str, meta: dict[str, Any]) -> None:
        """Move the task's pointer to `rel` and save the task record."""
        raise NotImplementedError

    def index(self, task: Task, name: str, *, fresh: bool) -> None:
        """Derived bookkeeping after the pointer moved (best effort); `fresh` when the record was linked
        now, so that no index can list it already."""

    def event_fields(self, rel: str, digest: str, meta: dict[str, Any], body: str) -> dict[str, Any]:
        """The ledger event's fields, from the record itself (so that a completion logs what the first
        attempt would have)."""
        return {"path": rel, "sha256": digest}

    def after(self, task: Task) -> None:
        """What follows the event (a handoff leaves the slot here); run again by a completion."""

    def may_be_unfinished(self, task: Task, rel: str) -> bool:
        """Cheaply, before anything is read: whether the record the task points at can be one whose write
        did not finish. By default, only when moving the pointer to it was the task's last change."""
        return second(rel) == clock.compact_of(task.updated_at)

    def pending_only(self, task: Task) -> bool:
        """True when the task here is held only by a write of this kind that did not fully land (a
        handoff whose release failed): complete that one and write nothing new."""
        return False


class Committed:
    """What a commit did: the record's path and digest, whether it was linked now (`created`), and whether
    an earlier write of it that failed part way was completed now (`completed`)."""

    __slots__ = ("completed", "created", "path", "sha256", "task")

    def __init__(self, path: str, sha256: str, task: str, *, created: bool, completed: bool = False) -> None:
        self.path, self.sha256, self.task = path, sha256, task
        self.created, self.completed = created, completed


def commit(write: Write) -> Committed:
    """Store one record under the lock; refusals first, then each step of the module docstring."""
    ws = write.ws
    ws.ensure_state()  # the state root, there already while a task is active: the lock lives in it
    with files.locked(ws.paths.lock):
        task = write.check()
        ledger.check_writable(ws.paths.ledger)
        ws.ensure_state("tasks", write.subdir)
        earlier = _complete_pending(write, task)
        if write.pending_only(task):
            if earlier is None:  # nothing to complete after all: the task is not held here
                from majordomus.errors import NoActiveTask

                raise NoActiveTask(ws.where())
            return earlier
        fields = write.fields(task)
        meta = dict(fields)
        path, created, digest = link_record(ws, write.subdir, fields, write.body)
        rel = f"{write.subdir}/{os.path.basename(path)}"
        if not created and logged(ws, rel, meta["timestamp"]):  # completed just now, or long ago
            done = earlier is not None and earlier.path == path
            return Committed(path, digest, task.id, created=False, completed=done)
        _land(write, task, rel, digest, meta, write.body, created=created)
        return Committed(path, digest, task.id, created=created, completed=not created)


def link_record(ws: Workspace, subdir: str, fields: list[tuple[str, Any]], body: str) -> tuple[str, bool, str]:
    """The link step alone: render the record and link it in under its name (design §6 step 6), never
    replacing anything. Returns (path, created, sha256)."""
    meta = dict(fields)
    data = records.render(fields, body)
    digest = records.sha256(data)
    name = names.record_name(clock.compact_of(meta["timestamp"]), meta["branch"], meta["head"], digest)
    path, created = files.link_in(ws.paths.directory(subdir), name, data)
    return path, created, digest


def _land(write: Write, task: Task, rel: str, digest: str, meta: dict[str, Any], body: str, *, created: bool) -> None:
    """The steps after the link. A failure before the task record changed unlinks a record linked now."""
    ws = write.ws
    name = rel.split("/", 1)[1]
    if created or not write.points_at(task, rel):
        try:
            write.point(task, rel, meta)
        except EnvironmentProblem as exc:
            if not created or _pointer_landed(write, rel):
                raise _incomplete(write, rel, exc, ", but the task record may not point at it yet") from exc
            _unlink(ws, rel)
            exc.message += "; nothing was written"
            raise
    write.index(task, name, fresh=created)
    try:
        ws.event(write.event, task.id, write.at, **write.event_fields(rel, digest, meta, body))
    except EnvironmentProblem as exc:
        raise _incomplete(write, rel, exc, ", but its ledger event was not written") from exc
    try:
        write.after(task)
    except EnvironmentProblem as exc:
        raise _incomplete(write, rel, exc, " and logged, but releasing the task here failed") from exc


def second(rel: str) -> str:
    """The UTC second a record's path names (`checkpoints/20260903T194500Z--…` -> `20260903T194500Z`)."""
    return rel.rsplit("/", 1)[-1][:listing.SECOND]


def _pointer_landed(write: Write, rel: str) -> bool:
    """After the task record's write failed: whether the new task record is in place all the same (its
    directory fsync failed after the rename). When it cannot be read, assume it is."""
    from majordomus import tasks

    try:
        return write.points_at(tasks.load(write.ws, write.task_id), rel)
    except Exception:
        return True


def _unlink(ws: Workspace, rel: str) -> None:
    path = ws.paths.absolute(rel)
    try:
        os.unlink(path)
        files.fsync_dir(os.path.dirname(path))
    except (OSError, EnvironmentProblem):
        pass  # then it stays: the same command again completes it


def _incomplete(write: Write, rel: str, exc: EnvironmentProblem, missing: str) -> EnvironmentProblem:
    shown = write.ws.display(write.ws.paths.absolute(rel))
    return EnvironmentProblem(
        f"the {write.what} {shown} is stored{missing}: {exc.message}",
        f"{exc.hint + '; then ' if exc.hint else ''}run the same command again: it completes what is missing",
    )


def _complete_pending(write: Write, task: Task) -> Committed | None:
    """The record the task points at, when its write failed after the pointer moved (no ledger event, or
    a handoff still held here): complete it now, before anything new is written. None when none is
    pending."""
    ws = write.ws
    rel = write.pointer(task)
    if not rel or not write.may_be_unfinished(task, rel):
        return None
    try:
        data = safeio.read(ws.paths.absolute(rel), records.MAX_RECORD_BYTES)
        meta, body = records.split(data)
    except (OSError, ValueError, UnicodeDecodeError, EnvironmentProblem):
        return None  # gone or unreadable: doctor's to report, not ours to log
    # Only a record of this task written in this worktree; one brought by sync has its `sync.import` event.
    if meta.get("task") != task.id or meta.get("kind") != write.kind or meta.get("worktree") != ws.worktree:
        return None
    digest = records.sha256(data)
    body = body[:-1] if body.endswith("\n") else body
    if not logged(ws, rel, str(meta["timestamp"])):
        write.index(task, rel.split("/", 1)[1], fresh=False)
        try:
            ws.event(write.event, task.id, write.at, **write.event_fields(rel, digest, meta, body))
        except EnvironmentProblem as exc:
            raise _incomplete(write, rel, exc, ", but its ledger event is still missing") from exc
    elif not write.pending_only(task):
        return None
    try:
        write.after(task)
    except EnvironmentProblem as exc:
        raise _incomplete(write, rel, exc, " and logged, but releasing the task here failed") from exc
    return Committed(ws.paths.absolute(rel), digest, task.id, created=False, completed=True)


def logged(ws: Workspace, rel: str, since: str) -> bool:
    """Whether the ledger holds an event naming `rel` (its own, or a `sync.import`), looked for backwards
    from the end down to the events older than `since` (the record's timestamp). False only when the
    ledger covers that time (an older event, or the chain's first, seq 1, was reached) without one: a
    ledger that begins later (rotated or truncated by hand) or a search past `_LOOK_BACK` bytes cannot
    tell, and counts as logged."""
    try:
        fd = safeio.open_regular(ws.paths.ledger, ledger.MAX_BYTES)
    except FileNotFoundError:
        return True
    except (OSError, EnvironmentProblem):
        return True  # unreadable: doctor says so; never log a second event on a guess
    try:
        size = os.fstat(fd).st_size
        read = 0
        earliest: dict[str, Any] | None = None
        for line in ledger.lines_backwards(fd, size):
            read += len(line) + 1
            if read > _LOOK_BACK:
                return True
            event = ledger.parse_line(line) if line.strip() else None
            if event is None:
                continue
            if event.get("path") == rel:
                return True
            if str(event.get("at", "")) < since:
                return False
            earliest = event
        return earliest is None or earliest.get("seq") != 1
    finally:
        os.close(fd)


def in_index(ws: Workspace, task_id: str, name: str) -> bool:
    """Whether the task's checkpoint index already lists `name` (a completion must not list it twice)."""
    try:
        data = safeio.read_optional(listing.index_path(ws, task_id), listing.INDEX_MAX_BYTES)
    except (OSError, safeio.UnsafeFile):
        return True
    return data is not None and name.encode("ascii") + b"\n" in data
