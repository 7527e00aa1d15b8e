"""Reading stored records back: one record by its path, a task's latest handoff, and the order in which its
checkpoints arrived here since that handoff (design §7, §9). A briefing and a handoff both read through here
(and `store.recent`, which of those checkpoints they read)."""

from __future__ import annotations

import json
import os

from majordomus import clock
from majordomus.errors import EnvironmentProblem
from majordomus.lite import names, safeio, statepaths
from majordomus.lite.statepaths import UnsafeDirectory
from majordomus.store import ledger, listing, records

TYPE_CHECKING = False  # on the session-start path: typing is not imported at run time
if TYPE_CHECKING:
    from collections.abc import Iterator
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
    if names.name_digest(os.path.basename(rel)) is None:
        raise ValueError(f"{rel} is not a record name")
    data = whole(ws, ws.paths.absolute(rel), oversized=Oversized)
    if not intact(rel, data):
        raise Replaced(f"{rel}: its content no longer matches the digest in its name")
    return data


def intact(path: str, data: bytes) -> bool:
    """`records.intact` for the record at `path`."""
    return records.intact(os.path.basename(path), data)


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
    data = whole(ws, path)
    if not intact(path, data):
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


# ---------------------------------------------------------------- "since the handoff", by the order of events
# Which checkpoints are since the latest handoff is decided by the order in which records arrived here (design
# §9): the task's index when it is whole, else the ledger's events of the task (a checkpoint or handoff
# written here, a record a pull imported). Never by comparing times that different clocks wrote.

LEDGER_LOOKBACK = 4096  # ledger lines read backwards for the records it names: flat in the store's size
SESSION_EVENTS = ("session.start", "session.stop")  # bookkeeping, never a "last event" of the work
NOT_SHARED = "not shared here"  # a `Gone.why`: named by a record from another machine, never brought here


class Walk:
    """The task's events of the ledger's tail, newest first, back to the arrival here of a handoff (its
    `task.handoff`, or the `sync.import` that brought it; see `anchor_of`) — without one, back to the task's
    start here or the pull that first brought it. The checkpoints that arrived on the way (newest
    first); every record path an event on the way names (`arrived`); the latest handoff event met when the
    task names none; whether the walk reached that arrival within its bounds (then it knows exactly what
    arrived since); and the task's newest event that is not a session's (the briefing's "last event")."""

    __slots__ = ("arrived", "checkpoints", "handoff", "latest", "reached")

    def __init__(self) -> None:
        self.checkpoints: list[str] = []
        self.arrived: set[str] = set()
        self.handoff: str | None = None
        self.latest: dict[str, Any] | None = None
        self.reached = False

    def holds(self, rel: str) -> bool | None:
        """Whether `rel` arrived here, as far as this walk tells: None when it did not reach the task's
        start here (or its first arrival), so that what came before is unknown."""
        return rel in self.arrived if self.reached else None


def task_events(ws: Site, task_id: str) -> Iterator[dict[str, Any]]:
    """The task's ledger events, newest first, from the last `LEDGER_LOOKBACK` lines only."""
    # The ledger writes `"task":"ID"` compactly (store/ledger.py): lines of other tasks are not parsed.
    needle = b'"task":' + json.dumps(task_id, ensure_ascii=False).encode("utf-8")
    return (obj for obj in ledger.tail(ws.paths.ledger, LEDGER_LOOKBACK, needle) if obj.get("task") == task_id)


def anchor_of(previous: Record | None) -> str | None:
    """Where "since the handoff" starts counting: the arrival here of `previous`'s own previous handoff (None:
    the task's start here). What arrived since then and `previous` does not list, `previous`'s writer had
    not taken in — written here after it came, or alongside it on another machine (design §9)."""
    found = previous.meta.get("previous_handoff") if previous is not None else None
    return found if isinstance(found, str) and names.is_record_pointer(found, "handoffs") else None


def walk(ws: Site, task: Task, limit: int | None = None, anchor: str | None = None) -> Walk:
    """The walk back to the arrival of `anchor` (a handoff's path; None: the task's start here). At most
    `LEDGER_LOOKBACK` ledger lines (and `limit` of the task's events): flat in the ledger's size."""
    out = Walk()
    events = task_events(ws, task.id)
    first_pull: object = None  # the `at` of the pull that first brought the task: its records came with it
    for seen, event in enumerate(events):
        if limit is not None and seen >= limit:
            if out.latest is None:  # sessions only so far: the same lines on, for the last event alone
                out.latest = event if event["event"] not in SESSION_EVENTS else \
                    next((e for e in events if e["event"] not in SESSION_EVENTS), None)
            break
        kind, rel = event["event"], event.get("path")
        if first_pull is not None and (kind != "sync.import" or event.get("at") != first_pull):
            break  # before the task came here
        if out.latest is None and kind not in SESSION_EVENTS:
            out.latest = event
        if kind == "task.start":
            out.reached = True
            break
        if kind == "task.handoff" and not task.handoff:
            out.handoff = rel if names.is_record_pointer(rel, "handoffs") else None
            break  # a handoff the task names none of: what is since it is not told here
        if anchor is not None and rel == anchor and kind in ("task.handoff", "sync.import"):
            out.reached = True
            break
        if kind == "sync.import" and event.get("kind") == "task" and not event.get("replaced"):
            out.reached = True  # the task's first arrival: the records of that same pull came just before
            first_pull = event.get("at")
            continue
        if not isinstance(rel, str):
            continue
        out.arrived.add(rel)
        if (kind == "task.checkpoint" or (kind == "sync.import" and event.get("kind") == "checkpoint")) \
                and names.is_record_pointer(rel, "checkpoints") and rel not in out.checkpoints:
            out.checkpoints.append(rel)
    return out


class Candidates:
    """The checkpoint names a briefing looks at, oldest first, by the order they arrived here; the paths the
    latest handoff already listed; whether the names are all the task's own (its index, or the ledger's
    events of it), so that one not on disk is missing, not merely another task's; the names the ledger gave
    among them (the task's own too, when the rest come from a listing); and, for a record the task names
    that is not here, whether it ever arrived here (`arrived`: True, False, or None when that cannot be told)."""

    __slots__ = ("index", "listed", "names", "ours", "own", "trail")

    def __init__(self, names: list[str], listed: set[str], own: bool, ours: set[str] | None = None,
                 index: listing.Arrivals | None = None, trail: Walk | None = None) -> None:
        self.names, self.listed, self.own = names, listed, own
        self.ours = ours or set()
        self.index, self.trail = index, trail

    def arrived(self, rel: str) -> bool | None:
        if self.index is not None:
            return self.index.holds(rel)
        return self.trail.holds(rel) if self.trail is not None else None


def candidates(ws: Site, task: Task, previous: Record | None, indexed: listing.Arrivals | None = None,
               trail: Walk | None = None, *, list_store: bool = True) -> Candidates:
    """Since `anchor_of(previous)` arrived, not listed by `previous`: from the task's index (`indexed`) when
    it is whole; else from the ledger's walk (`trail`) when it reached that arrival (or, with `list_store` False, whatever it reached); only past the ledger's
    bounded tail from a listing, by the second of the latest handoff (the task's start without one) — what
    the ledger's tail gave still counted, whatever its time."""
    listed = set(previous.meta.get("checkpoints") or []) if previous else set()
    statepaths.readable_dir(ws.paths, ws.paths.checkpoints)  # nothing below is looked at through a link
    if indexed is not None:
        return Candidates(indexed.since(anchor_of(previous)), listed, True, index=indexed)
    logged = [os.path.basename(rel) for rel in reversed(trail.checkpoints)] if trail is not None else []
    if trail is not None and (trail.reached or not list_store):
        pointer = task.checkpoint
        if pointer and anchor_of(previous) is None and pointer not in listed and pointer not in trail.arrived:
            logged.append(os.path.basename(pointer))  # the task's latest, whose event never landed: still its
        return Candidates(logged, listed, True, set(logged), trail=trail)
    since = previous.meta.get("timestamp") if previous else None
    start = since or task.started_at
    # A timestamp as majordomus writes it is rewritten as text; anything else is parsed (and refused) by clock.
    lower = clock.compact_of(start) if clock.is_iso(start) and start[0] != "0" else clock.compact(clock.parse(start))
    found = listing.names_since(ws.paths.checkpoints, lower)
    seen = set(found)
    return Candidates(found + [n for n in logged if n not in seen], listed, False, set(logged), trail=trail)


def order_of(ws: Site, task: Task, previous: Record | None) -> Candidates:
    """The candidates as every reader finds them: the index, else the ledger, else a listing."""
    indexed = listing.arrivals(ws, task)
    trail = None if indexed is not None else walk(ws, task, None, anchor_of(previous))
    return candidates(ws, task, previous, indexed, trail)


def unshared(gone: Gone, found: Candidates | Walk) -> Gone:
    """`gone` as it is: a record the task names that is not here and that never arrived here (as far as the
    index, or a ledger walk that reached the handoff's arrival, can tell) is one another machine did not
    share (a push without `--checkpoints`), not one deleted here."""
    arrived = found.holds(gone.rel) if isinstance(found, Walk) else found.arrived(gone.rel)
    if gone.why == "deleted" and arrived is False:
        return Gone(gone.rel, NOT_SHARED)
    return gone
