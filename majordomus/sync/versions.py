"""The versions of a task record a pull finds (design §13): ordered by what this machine saw happen — a
version it replaced never comes back, one whose machine held ours before it is later than ours — then by
`updated_at` and the SHA-256; a change on two machines is a conflict."""

from __future__ import annotations

import os
from dataclasses import dataclass

from majordomus import claims
from majordomus.git import odb
from majordomus.lite import names
from majordomus.store import records
from majordomus.sync import layout, rules
from majordomus.sync.layout import Refusal
from majordomus.sync.plan import HELD_DEPTH, Conflict, Plan, TaskIn, key, read_entry, read_local, refuse
from majordomus.sync.remote import RemoteRef
from majordomus.tasks import MAX_BYTES as TASK_MAX_BYTES
from majordomus.workspace import Workspace


@dataclass
class _Version:
    oid: str
    data: bytes
    key: tuple[str, str]
    ref: RemoteRef


def plan_tasks(ws: Workspace, refs: list[RemoteRef], base: odb.TreeView | None, my_ref: RemoteRef | None,
               plan: Plan, base_tip: str | None = None, again: frozenset[str] | set[str] = frozenset()) -> None:
    """Tasks sit at `tasks/ID.yaml` in both formats: `base` may be either. `again`: the `ID.yaml` of tasks
    settled on and lost here since, read again from every ref."""
    versions: dict[str, dict[str, _Version]] = {}
    for ref in refs:
        walk_refused: list[Refusal] = []
        for task_id, entry, where in layout.task_entries(ref.view, base, walk_refused, again):
            known = versions.setdefault(task_id, {})
            if entry.oid in known:
                continue
            data, reason = read_entry(ws, entry, TASK_MAX_BYTES)
            if data is not None:
                reason = rules.check_task(f"{task_id}.yaml", data)
            if reason is not None:
                refuse(plan, ref, where, reason)
                continue
            assert data is not None
            known[entry.oid] = _Version(entry.oid, data, key(data), ref)
        for r in walk_refused:
            refuse(plan, ref, r.path, r.reason)
    held = held_here(ws, [base_tip, my_ref.commit.oid if my_ref is not None else None]) if versions else {}
    for task_id, found in sorted(versions.items()):
        if found:
            _decide(ws, task_id, list(found.values()), base, my_ref, plan, held)


def _blob_key(ws: Workspace, entry: odb.Entry | None) -> tuple[str, str] | None:
    if entry is None or not entry.is_blob:
        return None
    data, _reason = read_entry(ws, entry, TASK_MAX_BYTES)
    return key(data) if data is not None else None


def held_here(ws: Workspace, tips: list[str | None], depth: int = HELD_DEPTH) -> dict[str, set[str]]:
    """Every version of each task (`ID.yaml` -> blob ids) that this machine held: what its own pushes
    carried and what its pulls settled on (each tip's first parents, the latest `depth` commits). A version
    held here that is not the record here now was replaced here: it never comes back (design §13)."""
    held: dict[str, set[str]] = {}
    seen_trees: set[str] = set()
    for tip in tips:
        for _ in range(depth):
            found = odb.commit(ws.repo, tip) if tip else None
            view = odb.tree(ws.repo, found.tree) if found is not None else None
            if found is None or view is None:
                break
            tasks_view = view.sub("tasks")
            if tasks_view is not None and tasks_view.oid not in seen_trees:
                seen_trees.add(tasks_view.oid)
                for name, item, _raw in tasks_view.entries():
                    if name is not None and item.is_blob:
                        held.setdefault(name, set()).add(item.oid)
            tip = found.parents[0] if found.parents else None
    return held


def _decide(ws: Workspace, task_id: str, found: list[_Version], base: odb.TreeView | None,
            my_ref: RemoteRef | None, plan: Plan, held: dict[str, set[str]]) -> None:
    name = f"{task_id}.yaml"
    tasks_view = base.sub("tasks") if base is not None else None
    base_entry = tasks_view.get(name) if tasks_view is not None else None
    floor = _blob_key(ws, base_entry)
    local = read_local(ws.paths.task_file(task_id), TASK_MAX_BYTES)
    if os.path.lexists(ws.paths.task_file(task_id)) and (local is None or rules.check_task(name, local)):
        return  # here but unreadable or invalid: never replaced by a sync; doctor reports it
    local_oid = odb.blob_id(local) if local is not None else None
    # Ordered by what happened, not by clocks: a version this machine replaced itself — its own older one
    # coming back, or one it imported and then changed — is history, whatever its `updated_at` says.
    gone = held.get(name, set()) - {local_oid}
    if local is None and base_entry is not None and not os.path.lexists(ws.paths.task_file(task_id)):
        # Settled on, then lost here (deleted by hand): restored. The versions this machine held last — as
        # settled, as its own ref carries it — are not history; older ones it replaced still are.
        mine = layout.lookup(my_ref.view, ("tasks", name)) if my_ref is not None else None
        gone -= {base_entry.oid} | ({mine.oid} if mine is not None else set())
        floor = None
    found = [v for v in found if v.oid not in gone]
    if floor is not None and base_entry is not None and base_entry.oid in gone and local is not None:
        # Settled on, then replaced here: a floor no later than ours (one from a clock running ahead would
        # keep out every real change made elsewhere afterwards).
        floor = min(floor, key(local))
    fresh = _not_superseded(ws, [v for v in found if v.oid != local_oid and (floor is None or v.key > floor)], name)
    if local is not None and local_oid is not None:
        # A version whose machine held ours before it is later than ours, whatever the clocks say (the same
        # second, or a clock behind): it counts as the newest, so that every machine settles on it.
        local_key = key(local)
        earlier = [v for v in found if v.oid != local_oid and v.key <= local_key]
        after = [v for v in earlier if _follows(ws, v, name, local_oid, local_key)]
        if earlier and len(after) < len(earlier):
            # Or one written by a machine that had seen the push carrying ours (its ref descends from that
            # push): a later change, though a clock running ahead here stamped ours later (design §13).
            seen = _History(ws, my_ref, name, local_oid, min(v.key for v in earlier))
            after += [v for v in earlier if v not in after and seen.seen_by(v.ref)]
        if after and not any(v.key > local_key for v in fresh):
            chosen = max(after, key=lambda v: v.key)
            _take(plan, task_id, chosen.data, [v.data for v in found if v is not chosen] + [local],
                  chosen.ref.name, local_oid)
            return
    # Versions as recent as what this machine settled on (the same `updated_at` with other claims, too):
    # their claims are merged in whichever version is kept (design §18). Older ones are history.
    current = [v for v in found if v.oid != local_oid and (floor is None or v.key[0] >= floor[0])]
    if not fresh:
        kept = _ours_kept(ws, local, [v.data for v in current], plan) if local is not None and current else local
        if kept is not None and kept != local:
            plan.tasks.append(TaskIn(task_id, odb.blob_id(kept), kept, current[0].ref.name, local_oid, ours=True))
            plan.settled[task_id] = odb.blob_id(kept)
        return
    newest = max(fresh, key=lambda v: v.key)
    others = [v.data for v in current if v is not newest] + ([local] if local is not None else [])
    if local is None:
        _take(plan, task_id, newest.data, others, newest.ref.name, None)
        return
    assert local_oid is not None
    local_key = key(local)
    if base_entry is None or base_entry.oid != local_oid:  # changed here since the last pull
        history = _History(ws, my_ref, name, local_oid, min(v.key for v in fresh))
        competing = [v for v in fresh if v.oid not in history.versions and not history.seen_by(v.ref)]
        if competing:
            rival = max(competing, key=lambda v: v.key)
            plan.conflicts.append(Conflict(
                task=task_id, kept="remote" if newest.key > local_key else "local",
                local_updated_at=local_key[0] or None, remote_updated_at=rival.key[0] or None,
                local_sha256=local_key[1], remote_sha256=rival.key[1], machine=rival.ref.name))
    if newest.key > local_key:
        _take(plan, task_id, newest.data, others, newest.ref.name, local_oid)
        return
    kept = _ours_kept(ws, local, [v.data for v in current], plan)
    if kept != local:  # ours stays, with the claims (and a later handoff) the other versions carry (design §18)
        plan.tasks.append(TaskIn(task_id, odb.blob_id(kept), kept, newest.ref.name, local_oid, ours=True))
    plan.settled[task_id] = odb.blob_id(kept)
    plan.kept[plan.settled[task_id]] = kept  # a version of ours that no push carried yet is in no object store


def _not_superseded(ws: Workspace, fresh: list[_Version], name: str) -> list[_Version]:
    """`fresh` without the versions another one was built on: a version whose machine had seen the push that
    carried another (its ref descends from that push) is later than that one, whatever the clocks say — a
    clock running years ahead on one machine must not keep its version over every change made after it
    elsewhere (design §13). The newest by `updated_at` is asked first, then the next, while one falls."""
    out = list(fresh)
    while len(out) > 1:
        top = max(out, key=lambda v: v.key)
        carried = _History(ws, top.ref, name, top.oid, min(v.key for v in out))
        if not any(other.oid != top.oid and other.ref is not top.ref and carried.seen_by(other.ref) for other in out):
            break
        out.remove(top)
    return out


def _ours_kept(ws: Workspace, local: bytes, others: list[bytes], plan: Plan) -> bytes:
    """This machine's version, kept, with the claims of the others merged in, and pointing at the latest
    handoff any of them names when that one is later than its own: a handoff written on another machine
    is part of what happened to the task, which a briefing must show (design §9), even when the task
    record that carried it lost to ours."""
    kept = claims.merge_task_data(local, others)
    try:
        doc = records.parse_yaml(kept.decode("utf-8"))
    except Exception:
        return kept
    own = doc.get("handoff_at")
    mine: str = own if isinstance(own, str) else ""
    coming = {f"{r.directory}/{r.name}" for r in plan.records if r.directory == "handoffs"}
    best: tuple[str, str] | None = None
    for data in others:
        try:
            theirs = records.parse_yaml(data.decode("utf-8"))
        except Exception:
            continue
        pointer, at = theirs.get("handoff"), theirs.get("handoff_at")
        if (not isinstance(pointer, str) or not isinstance(at, str) or pointer == doc.get("handoff")
                or not names.is_record_pointer(pointer, "handoffs") or at <= mine
                or not (pointer in coming or os.path.lexists(ws.paths.absolute(pointer)))):
            continue  # not later than ours, or a record this machine neither has nor takes in now
        if best is None or (at, pointer) > best:
            best = (at, pointer)
    if best is None:
        return kept
    doc["handoff_at"], doc["handoff"] = best
    return records.emit_yaml(doc.items()).encode("utf-8")


def _take(plan: Plan, task_id: str, chosen: bytes, others: list[bytes], ref: str, disk: str | None) -> None:
    """Import the chosen version, with the claims of every other version merged in (design §18): the newest
    record wins, and nobody's claim is dropped with the record that lost."""
    data = claims.merge_task_data(chosen, others)
    plan.tasks.append(TaskIn(task_id, odb.blob_id(data), data, ref, disk))
    plan.settled[task_id] = odb.blob_id(data)


def _follows(ws: Workspace, version: _Version, name: str, local_oid: str, local_key: tuple[str, str],
             depth: int = 256) -> bool:
    """Whether `version`'s ref held `local_oid` for the task before it came to hold `version` (its first
    parents): that machine replaced ours by it. The walk stops at a version older than ours."""
    tip: str | None = version.ref.commit.oid
    last = None
    for _ in range(depth):
        found = odb.commit(ws.repo, tip) if tip else None
        view = odb.tree(ws.repo, found.tree) if found is not None else None
        entry = layout.lookup(view, ("tasks", name)) if view is not None else None
        if found is None or entry is None:
            return False
        if entry.oid == local_oid:
            return True
        if entry.oid != last:
            last = entry.oid
            seen = _blob_key(ws, entry)
            if seen is None or seen[0] < local_key[0]:
                return False  # further back, every version is older still
        tip = found.parents[0] if found.parents else None
    return False


class _History:
    """This machine's pushes of one task, newest first (its ref's first parents): which versions it had —
    an older one of ours held by an idle machine is no conflict — and which push first carried the version
    it holds now — a version written by a machine that had seen that push was built on ours."""

    def __init__(self, ws: Workspace, my_ref: RemoteRef | None, name: str, local_oid: str,
                 oldest: tuple[str, str]) -> None:
        self.ws = ws
        self.versions: set[str] = set()
        self.carried: str | None = None  # the first push of the unbroken run, up to the last, with ours
        tip = my_ref.commit.oid if my_ref is not None else None
        unbroken, last = True, None
        for _ in range(10_000):
            found = odb.commit(ws.repo, tip) if tip else None
            view = odb.tree(ws.repo, found.tree) if found is not None else None
            entry = layout.lookup(view, ("tasks", name)) if view is not None else None
            if found is None or entry is None:
                break
            unbroken = unbroken and entry.oid == local_oid
            if unbroken:
                self.carried = found.oid
            if entry.oid != last:
                last = entry.oid
                self.versions.add(entry.oid)
                version = _blob_key(ws, entry)
                if version is None or version < oldest:
                    break  # further back, every version is older still than any in question
            tip = found.parents[0] if found.parents else None

    def seen_by(self, ref: RemoteRef) -> bool:
        return self.carried is not None and odb.contains(self.ws.repo, ref.commit.oid, self.carried)


