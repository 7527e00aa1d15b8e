"""The N-way union (design §13): every machine ref and the folded state, against what this machine settled on
at its last pull (`refs/majordomus/synced`), in one pass, each entry held to the rules of a local write.

Records are immutable and named by their digest: the union is every valid record any ref holds. A task
record is mutable: what this machine saw happen orders its versions first — a version it replaced never
comes back, and one whose machine held ours before it is later than ours — then the newest (`updated_at`,
then the SHA-256) wins, and never an older one than this machine already had (docs/sync.md). When the task changed here since the last pull and a newer remote version was
written without this machine's version in view (its commit does not descend from the push that carried
ours), the task changed on two machines: a `sync.conflict` is recorded.
"""

from __future__ import annotations

import os

from majordomus.git import odb
from majordomus.lite import safeio
from majordomus.store import records
from majordomus.sync import layout, rules
from majordomus.sync.layout import Found, Refusal
from majordomus.sync.lost import Restore
from majordomus.sync.plan import LEGACY_REF, SYNCED_REF, Plan, RecordIn, base_view, read_entry, read_local, refuse
from majordomus.sync.remote import RemoteRef
from majordomus.sync.versions import plan_tasks
from majordomus.workspace import Workspace

__all__ = ["LEGACY_REF", "SYNCED_REF", "Plan", "base_view", "plan"]


def plan_records(ws: Workspace, refs: list[RemoteRef], base: odb.TreeView | None, plan: Plan,
                 restore: Restore) -> None:
    held: list[RecordIn] = []  # new since the last pull, and here already: some may lack their event
    walk_base = None if restore.full else base
    for directory in rules.RECORD_KINDS:
        full = ws.paths.directory(directory)
        try:
            present = set(os.listdir(full))
        except FileNotFoundError:
            present = set()
        lost = restore.records(directory, present)
        decided: dict[str, str] = {}  # name -> the oid taken (or held here)
        for ref in refs:
            walk_refused: list[Refusal] = []
            for found in layout.new_records(ref.view, ref.fmt, walk_base, directory, walk_refused):
                _consider(ws, ref, found, present, decided, plan, held)
            for r in walk_refused:
                refuse(plan, ref, r.path, r.reason)
            for name in lost:  # settled on, lost here since: the refs that hold it are read for it again
                entry = layout.holds(ref.view, directory, name, ref.fmt)
                if entry is not None and name not in decided:
                    where = "/".join(layout.record_path(directory, name) if ref.fmt == 2 else (directory, name))
                    _consider(ws, ref, layout.Found(directory, name, entry, where), present, decided, plan, held)
    _complete_unlogged(ws, held, plan)


def _complete_unlogged(ws: Workspace, held: list[RecordIn], plan: Plan) -> None:
    """A record a pull linked in before it failed (design §10) is here with no event: the same pull run
    again writes its `sync.import`, as a checkpoint's retry writes its own event. Looked for in one
    backwards read of the ledger, down to the oldest of them."""
    if not held:
        return
    stamps = {id(item): _timestamp(item.data) for item in held}
    since = min(stamps.values())
    named = _named_since(ws, since)
    if named is None:
        return  # the ledger cannot tell (unreadable, rotated, or too far back): never log on a guess
    for item in held:
        if f"{item.directory}/{item.name}" not in named:
            plan.records.append(item)


def _timestamp(data: bytes) -> str:
    try:
        meta, _text = records.split(data)
    except Exception:
        return ""
    stamp = meta.get("timestamp")
    return stamp if isinstance(stamp, str) else ""


def _named_since(ws: Workspace, since: str) -> set[str] | None:
    """The paths that the ledger's events name, from the end back to the first that ends the search for
    something stamped `since` (`lookback.ends_search`); None when the ledger cannot tell (unreadable, or
    `since` is further back than the look-back bound, or it begins later than `since`)."""
    from majordomus.errors import EnvironmentProblem
    from majordomus.store import ledger, lookback

    try:
        fd = safeio.open_regular(ws.paths.ledger, ledger.MAX_BYTES)
    except FileNotFoundError:
        return set()
    except (OSError, EnvironmentProblem):
        return None
    named: set[str] = set()
    cutoff = lookback.search_cutoff(since)
    try:
        read, first = 0, None
        for line in ledger.lines_backwards(fd, os.fstat(fd).st_size):
            read += len(line) + 1
            if read > ledger.EVENT_LOOK_BACK:
                return None
            event = ledger.parse_line(line) if line.strip() else None
            if event is None:
                continue
            if lookback.ends_search(event, cutoff):
                return named
            if isinstance(event.get("path"), str):
                named.add(event["path"])
            first = event
        return named if first is None or first.get("seq") == 1 else None
    finally:
        os.close(fd)


def _consider(ws: Workspace, ref: RemoteRef, found: Found, present: set[str], decided: dict[str, str],
              plan: Plan, held: list[RecordIn]) -> None:
    name, oid = found.name, found.entry.oid
    if decided.get(name) == oid:
        return
    if name in present and name not in decided:
        local = read_local(os.path.join(ws.paths.directory(found.directory), name), rules.MAX_RECORD_BYTES)
        if local is not None and odb.blob_id(local) == oid:
            decided[name] = oid
            plan.known.append((found.directory, name, oid))
            try:
                task = records.split(local)[0].get("task")
            except Exception:
                task = None  # doctor reports an unreadable record; its event still names its path
            held.append(RecordIn(found.directory, name, oid, local, ref.name, task if isinstance(task, str) else None,
                                 present=True))
            return
    data, reason = read_entry(ws, found.entry, rules.MAX_RECORD_BYTES)
    meta: dict[str, object] = {}
    if data is not None:
        reason, meta = rules.inspect_record(found.directory, name, data, ws.config)
    if reason is not None:
        refuse(plan, ref, found.where, reason)
        return
    assert data is not None
    if name in decided or name in present:
        return  # the same name holds one content: what is here (or taken already) stays
    decided[name] = oid
    task = meta.get("task")
    plan.records.append(RecordIn(found.directory, name, oid, data, ref.name, task if isinstance(task, str) else None))


def plan(ws: Workspace, refs: list[RemoteRef], my_ref: RemoteRef | None, full: bool = False) -> tuple[Plan, Restore]:
    """What a pull imports, settles and refuses; reads the store and the refs, writes nothing. With `full`,
    every entry of every ref is read, whatever this machine settled on."""
    tip, base, base_fmt = base_view(ws)
    result = Plan()
    restore = Restore(ws, base if base_fmt == 2 else None, full)
    plan_records(ws, refs, base if base_fmt == 2 else None, result, restore)
    plan_tasks(ws, refs, base, my_ref, result, tip, again=restore.tasks)
    return result, restore

