"""Reading stored records back: one record by its path, a task's latest handoff, and its checkpoints since
(design §7, §9). A briefing and a handoff both read through here, in the order of `store.listing`."""

from __future__ import annotations

import os

from majordomus import clock
from majordomus.errors import EnvironmentProblem
from majordomus.lite import names, safeio, statepaths
from majordomus.lite.statepaths import UnsafeDirectory
from majordomus.store import listing, records

TYPE_CHECKING = False  # on the session-start path: typing is not imported at run time
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from majordomus.store.paths import Site
    from majordomus.store.taskfile import Task


class Record:
    """A stored record read back: where it is (relative to the state directory), its front matter and body."""

    __slots__ = ("body", "meta", "path", "rel")

    def __init__(self, rel: str, path: str, meta: dict[str, Any], body: str) -> None:
        self.rel, self.path, self.meta, self.body = rel, path, meta, body


class Replaced(ValueError):
    """A record whose bytes no longer hash to the digest its name claims: its content was replaced."""


class Gone:
    """A record the task, its index or the ledger names that the briefing cannot stand on (design §9): `why`
    is "deleted", "unreadable" or "replaced" (its bytes no longer match the digest in its name)."""

    __slots__ = ("rel", "why")

    def __init__(self, rel: str, why: str) -> None:
        self.rel, self.why = rel, why

    def __repr__(self) -> str:
        return f"Gone({self.rel!r}, {self.why!r})"


def read_record(ws: Site, rel: str) -> Record:
    """Raises OSError (e.g. FileNotFoundError) or ValueError when the record is gone or unreadable, and
    `Replaced` when its bytes are not the ones its name was made from: a record is only what it was written as."""
    meta, body = records.split(_checked(ws, rel))
    return Record(rel=rel, path=ws.paths.absolute(rel), meta=meta, body=body)


def _checked(ws: Site, rel: str) -> bytes:
    claimed = names.name_digest(os.path.basename(rel))
    if claimed is None:
        raise ValueError(f"{rel} is not a record name")
    data = whole(ws, ws.paths.absolute(rel), oversized=Oversized)
    if not records.sha256(data).startswith(claimed):
        raise Replaced(f"{rel}: its content no longer matches the digest in its name")
    return data


class Oversized(ValueError):
    """A record whose body is over the cap its writer enforces: majordomus did not write it (design §2a)."""


def whole(ws: Site, path: str, *, oversized: type[Exception] | None = None) -> bytes:
    """The bytes of the stored record at `path` (in `checkpoints/`, `handoffs/` or `runs/`), by the rules of
    every reader of the store: no link on the way to its directory (`UnsafeDirectory`, exit 12), the one
    safe open, and no body over the cap its writer enforces (`UnsafeFile`, exit 12 — or `oversized`)."""
    directory = os.path.dirname(path)
    statepaths.readable_dir(ws.paths, directory)  # absent: the read below says FileNotFoundError
    data = safeio.read(path, records.MAX_RECORD_BYTES)
    why = records.over_cap(data, records.body_caps(os.path.basename(directory), ws.config))
    if why is not None:
        if oversized is not None:
            raise oversized(f"{ws.display(path)} {why}")
        raise safeio.UnsafeFile(ws.display(path), why,
                                "majordomus did not write it: move it out of the store (`majordomus doctor` "
                                "names every such record)")
    return data


def describe(ws: Site, path: str) -> dict[str, Any]:
    """The summary `--show --json` gives for one stored record, read as `shown` reads it."""
    return listing.summary(shown(ws, path), ws.display(path), os.path.basename(path))


def shown(ws: Site, path: str) -> bytes:
    """The bytes `--show` prints: `whole`, and only when they are the ones the record's name was made from;
    a record whose content was replaced after it was written is refused (exit 12, naming it), as the
    briefing names it instead of showing it."""
    claimed = names.name_digest(os.path.basename(path))
    data = whole(ws, path)
    if claimed is None or not records.sha256(data).startswith(claimed):
        raise safeio.UnsafeFile(ws.display(path), "no longer matches the digest in its name (its content was "
                                "replaced after it was written)",
                                "`majordomus doctor` names every such record; the ledger still holds the digest "
                                "of what was written (`majordomus ledger`)")
    return data


def verify(ws: Site, rel: str) -> int | Gone:
    """The size of the record at `rel` when its bytes are the ones its name was made from (not parsed: what
    `check` asks after every commit), or why not. A link on the way to it is refused, not a gone record."""
    try:
        return len(_checked(ws, rel))
    except UnsafeDirectory:
        raise
    except (OSError, ValueError, EnvironmentProblem) as exc:
        return _gone(rel, exc)


def examine(ws: Site, rel: str) -> Record | Gone:
    """The record at `rel`, or why the briefing cannot stand on it (a link on the way to it is refused)."""
    try:
        return read_record(ws, rel)
    except UnsafeDirectory:
        raise
    except (OSError, ValueError, EnvironmentProblem) as exc:  # UnicodeDecodeError and Replaced included
        return _gone(rel, exc)


def _gone(rel: str, exc: Exception) -> Gone:
    """Why the record at `rel` cannot be stood on, by what reading it raised."""
    if isinstance(exc, FileNotFoundError):
        return Gone(rel, "deleted")
    return Gone(rel, "replaced" if isinstance(exc, Replaced) else "unreadable")


def previous_handoff(ws: Site, task: Task) -> Record | None:
    """The task's latest handoff record, or None (also when its file is gone: the ledger still says so)."""
    if not task.handoff:
        return None
    found = examine(ws, task.handoff)
    return found if isinstance(found, Record) else None


class Candidates:
    """The checkpoint names a briefing looks at: from the second of the latest handoff (the task's start
    without one) on, oldest first; the paths that handoff already listed; and whether the names are the
    task's own (its index, or the ledger's events of it), so that one not on disk is missing, not merely
    another task's."""

    __slots__ = ("listed", "lower", "names", "own")

    def __init__(self, names: list[str], listed: set[str], lower: str, own: bool) -> None:
        self.names, self.listed, self.lower, self.own = names, listed, lower, own


def candidates(ws: Site, task: Task, previous: Record | None, indexed: list[str] | None = None,
               fallback: list[str] | None = None) -> Candidates:
    """`indexed` is the task's index (`listing.indexed_names`, read here when None); without a whole index,
    `fallback` (names the ledger gave) instead of listing the store, when given."""
    since = previous.meta.get("timestamp") if previous else None
    start = since or task.started_at
    # A timestamp as majordomus writes it is rewritten as text; anything else is parsed (and refused) by clock.
    lower = clock.compact_of(start) if clock.is_iso(start) and start[0] != "0" else clock.compact(clock.parse(start))
    listed = set(previous.meta.get("checkpoints") or []) if previous else set()
    statepaths.readable_dir(ws.paths, ws.paths.checkpoints)  # nothing below is looked at through a link
    if indexed is None:
        indexed = listing.indexed_names(ws, task)  # the task's own names: no listing of a store of 100,000
    own = indexed if indexed is not None else fallback
    return Candidates(listing.names_since(ws.paths.checkpoints, lower, own), listed, lower, own is not None)


def _candidates(ws: Site, task: Task, previous: Record | None) -> tuple[list[str], set[str], bool]:
    found = candidates(ws, task, previous)
    return found.names, found.listed, found.own


def _rel(name: str) -> str:
    return "checkpoints/" + name


def _read_if_ours(ws: Site, name: str, task_id: str) -> Record | None:
    found = examine(ws, _rel(name))
    if isinstance(found, Record) and found.meta.get("task") == task_id \
            and found.meta.get("kind", "checkpoint") == "checkpoint":
        return found
    return None  # doctor reports unreadable records; a handoff lists the rest


def checkpoints_since(ws: Site, task: Task, previous: Record | None) -> list[Record]:
    """This task's checkpoints written since `previous` (the task's start when None), oldest first."""
    found, listed, _own = _candidates(ws, task, previous)
    out = []
    for name in found:
        if _rel(name) not in listed:
            record = _read_if_ours(ws, name, task.id)
            if record is not None:
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
        if total > enough or (units is not None and chars > units):
            if not found.own:
                older += _is_ours_cheaply(ws, name, task.id, key)
            elif os.path.isfile(os.path.join(ws.paths.checkpoints, name)):  # counted without opening each one
                older += 1
            else:
                gone.append(Gone(rel, "deleted"))
            continue
        if not parse and found.own:
            size = verify(ws, rel)
            if isinstance(size, Gone):
                gone.append(size)
            else:
                total += size
            continue
        record = examine(ws, rel)
        if isinstance(record, Gone):
            if found.own or (record.why in ("replaced", "unreadable") and _claims(ws, name, key)):
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
