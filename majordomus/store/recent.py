"""The checkpoints a briefing or a handoff reads (design §7, §9): since the latest handoff, by the order of
arrival `store.reading` decides, newest first until a budget is filled; the older ones counted, the gone ones
named."""

from __future__ import annotations

import os

from majordomus.lite import safeio
from majordomus.store import reading, records
from majordomus.store.reading import Candidates, Gone, Record

TYPE_CHECKING = False  # on the session-start path: typing is not imported at run time
if TYPE_CHECKING:
    from collections.abc import Callable

    from majordomus.store.paths import Site
    from majordomus.store.taskfile import Task


def _rel(name: str) -> str:
    return "checkpoints/" + name


def _read_if_ours(ws: Site, name: str, task_id: str) -> Record | None:
    found = reading.examine(ws, _rel(name))
    if isinstance(found, Record) and found.meta.get("task") == task_id \
            and found.meta.get("kind", "checkpoint") == "checkpoint":
        return found
    return None  # doctor reports unreadable records; a handoff lists the rest


def checkpoints_since(ws: Site, task: Task, previous: Record | None,
                      gone: list[Gone] | None = None) -> list[Record]:
    """This task's checkpoints written since `previous` (the task's start when None), oldest first. With
    `gone`, the ones among them it cannot stand on are added to it, as a briefing names them: the task's
    own that are deleted, unreadable or replaced (or never shared here), and from a listing a replaced or
    unreadable one whose front matter claims the task."""
    found = reading.order_of(ws, task, previous)
    key = f'\ntask: "{task.id}"\n'.encode()
    out = []
    for name in found.names:
        if _rel(name) in found.listed:
            continue
        record = reading.examine(ws, _rel(name))
        if isinstance(record, Gone):
            if gone is not None and (found.own or name in found.ours or (
                    record.why in ("replaced", "unreadable") and _claims(ws, name, key))):
                gone.append(reading.unshared(record, found))
            continue
        if record.meta.get("task") == task.id and record.meta.get("kind", "checkpoint") == "checkpoint":
            out.append(record)
    return out


def recent_checkpoints(ws: Site, task: Task, found: Candidates, enough: int, *,
                       parse: bool = True, units: int | None = None,
                       measure: Callable[[Record], tuple[int, int]] | None = None,
                       ) -> tuple[list[Record], int, list[Gone]]:
    """Like `checkpoints_since`, but read newest first only until the bodies pass `enough` bytes; the
    older ones are only counted. A briefing drops the oldest checkpoints before anything else, so once
    the newer ones alone exceed its budget every older one would be dropped anyway. Also returns the
    names it could not stand on: the task's own that are gone, unreadable or replaced, and from a listing
    a replaced or unreadable one (over its cap, say) whose front matter claims the task. With `parse`
    False (the task's own names only) the records are only checked against their names, their whole size
    counted against `enough`. With `units` (a limit in UTF-16 units, such as Claude Code's), reading also
    stops once the bodies pass that many characters: a character is at least one unit, so no older
    checkpoint could be shown either. With `measure`, what a record takes is what it says (the bytes and
    units of the entry a briefing shows for it) rather than its body alone: the tighter the measure, the
    fewer records read only to be dropped."""
    out: list[Record] = []
    gone: list[Gone] = []
    older = 0
    total = 0
    chars = 0
    key = f'\ntask: "{task.id}"\n'.encode()
    for name in reversed(found.names):
        rel = _rel(name)
        if rel in found.listed:
            continue
        mine = found.own or name in found.ours
        if total > enough or (units is not None and chars > units):
            if not mine:
                older += _is_ours_cheaply(ws, name, task.id, key)
            elif os.path.isfile(os.path.join(ws.paths.checkpoints, name)):  # counted without opening each one
                older += 1
            else:
                gone.append(Gone(rel, "deleted"))
            continue
        if not parse and mine:
            size = reading.verify(ws, rel)
            if isinstance(size, Gone):
                gone.append(size)
            else:
                total += size
            continue
        record = reading.examine(ws, rel)
        if isinstance(record, Gone):
            if mine or (record.why in ("replaced", "unreadable") and _claims(ws, name, key)):
                gone.append(record)
            continue
        if record.meta.get("task") == task.id and record.meta.get("kind", "checkpoint") == "checkpoint":
            out.append(record)
            nbytes, nunits = (len(record.body.encode("utf-8")), len(record.body)) if measure is None else measure(record)
            total += nbytes
            chars += nunits
    out.reverse()
    return out, older, gone


def _claims(ws: Site, name: str, key: bytes) -> bool:
    """Whether a replaced record's (untrusted) front matter says it is the task's: then the task is named."""
    try:
        fd = safeio.open_regular(os.path.join(ws.paths.checkpoints, name), records.MAX_RECORD_BYTES)
        try:
            return key in os.read(fd, 1024)
        finally:
            os.close(fd)
    except (OSError, safeio.UnsafeFile):
        return False


def _is_ours_cheaply(ws: Site, name: str, task_id: str, key: bytes) -> int:
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
