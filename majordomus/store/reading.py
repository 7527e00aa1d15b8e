"""Reading stored records back: one record by its path, a task's latest handoff, and its checkpoints since
(design §7, §9). A briefing and a handoff both read through here, in the order of `store.listing`."""

from __future__ import annotations

import os

from majordomus import clock
from majordomus.lite import safeio
from majordomus.store import listing, records

TYPE_CHECKING = False  # on the session-start path: typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any

    from majordomus.tasks import Task
    from majordomus.workspace import Workspace


class Record:
    """A stored record read back: where it is (relative to the state directory), its front matter and body."""

    __slots__ = ("body", "meta", "path", "rel")

    def __init__(self, rel: str, path: str, meta: dict[str, Any], body: str) -> None:
        self.rel, self.path, self.meta, self.body = rel, path, meta, body


def read_record(ws: Workspace, rel: str) -> Record:
    """Raises OSError (e.g. FileNotFoundError) or ValueError when the record is gone or unreadable."""
    path = ws.paths.absolute(rel)
    meta, body = records.split(safeio.read(path, records.MAX_RECORD_BYTES))
    return Record(rel=rel, path=path, meta=meta, body=body)


def previous_handoff(ws: Workspace, task: Task) -> Record | None:
    """The task's latest handoff record, or None (also when its file is gone: the ledger still says so)."""
    if not task.handoff:
        return None
    try:
        return read_record(ws, task.handoff)
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def _candidates(ws: Workspace, task: Task, previous: Record | None) -> tuple[list[str], set[str], bool]:
    """Checkpoint names from the second of `previous` (the task's start when None) on, oldest first, the
    paths `previous` already listed (a checkpoint in the very second of the previous handoff counts unless
    it was listed), and whether the names are the task's own (from its index)."""
    since = previous.meta.get("timestamp") if previous else None
    lower = clock.compact(clock.parse(since or task.started_at))
    listed = set(previous.meta.get("checkpoints") or []) if previous else set()
    indexed = listing.indexed_names(ws, task)  # the task's own names: no listing of a store of 100,000
    return listing.names_since(ws.paths.checkpoints, lower, indexed), listed, indexed is not None


def _rel(name: str) -> str:
    return "checkpoints/" + name


def _read_if_ours(ws: Workspace, name: str, task_id: str) -> Record | None:
    try:
        found = read_record(ws, _rel(name))
    except (OSError, ValueError, UnicodeDecodeError):
        return None  # doctor reports unreadable records; a briefing goes on with the rest
    if found.meta.get("task") == task_id and found.meta.get("kind", "checkpoint") == "checkpoint":
        return found
    return None


def checkpoints_since(ws: Workspace, task: Task, previous: Record | None) -> list[Record]:
    """This task's checkpoints written since `previous` (the task's start when None), oldest first."""
    found, listed, _own = _candidates(ws, task, previous)
    out = []
    for name in found:
        if _rel(name) not in listed:
            record = _read_if_ours(ws, name, task.id)
            if record is not None:
                out.append(record)
    return out


def recent_checkpoints(ws: Workspace, task: Task, previous: Record | None, enough: int) -> tuple[list[Record], int]:
    """Like `checkpoints_since`, but read newest first only until the bodies pass `enough` bytes; the
    older ones are only counted. A briefing drops the oldest checkpoints before anything else, so once
    the newer ones alone exceed its budget every older one would be dropped anyway."""
    found, listed, own = _candidates(ws, task, previous)
    out: list[Record] = []
    older = 0
    total = 0
    key = f'\ntask: "{task.id}"\n'.encode()
    for name in reversed(found):
        if _rel(name) in listed:
            continue
        if total > enough:
            # the task's own names (its index): counted when they are there, without opening each one
            older += (os.path.isfile(os.path.join(ws.paths.checkpoints, name)) if own
                      else _is_ours_cheaply(ws, name, task.id, key))
            continue
        record = _read_if_ours(ws, name, task.id)
        if record is not None:
            out.append(record)
            total += len(record.body.encode("utf-8"))
    out.reverse()
    return out, older


def _is_ours_cheaply(ws: Workspace, name: str, task_id: str, key: bytes) -> int:
    """1 when the record belongs to the task, read from its first KiB (front matter puts `task` 4th)."""
    try:
        fd = safeio.open_regular(os.path.join(ws.paths.checkpoints, name), records.MAX_RECORD_BYTES)
        try:
            head = os.read(fd, 1024)
        finally:
            os.close(fd)
    except (OSError, safeio.UnsafeFile):
        return 0
    if b'\nkind: "checkpoint"\n' in head and b"\ntask: " in head:
        return int(key in head)
    return int(_read_if_ours(ws, name, task_id) is not None)
