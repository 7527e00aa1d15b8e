"""Bringing the store up to a plan (design §13): records linked in exclusively, task records replaced under the
lock, one ledger event each, and then what this machine settled on moves (`refs/majordomus/synced`).

The settled ref moves last, so an interrupted pull repeats cleanly: whatever was linked in is found present.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from majordomus import taskend
from majordomus import tasks as tasks_mod
from majordomus.git import odb
from majordomus.lite import safeio
from majordomus.store import files, ledger, records
from majordomus.sync import arrival, layout, rules
from majordomus.sync.remote import RemoteRef
from majordomus.sync.union import LEGACY_REF, SYNCED_REF, Plan, base_view
from majordomus.tasks import MAX_BYTES as TASK_MAX_BYTES
from majordomus.workspace import Workspace

BATCH = 256  # records linked in per directory fsync and ledger write
# Each record is fsynced before it is linked in; fsyncs issued together share the file system's journal
# commits, so a first pull of thousands of records waits on the disk a few times, not thousands of times.
WORKERS = 16


@dataclass
class Imported:
    kind: str  # task, handoff, checkpoint or run
    path: str  # relative to the state directory
    task: str | None
    ref: str  # the remote ref it came from
    replaced: bool = False


def import_records(ws: Workspace, remote: str, plan: Plan, at: str, out: list[Imported]) -> None:
    """Link the planned records in (each fsynced), fsync each directory once per batch, then log the batch."""
    if not plan.records:
        return
    ws.ensure_state(*rules.RECORD_KINDS)
    # Each handoff after what it lists ("since the handoff", design §9); within a second, a task's newest last.
    arriving = arrival.order(plan.records, arrival.pointers(plan.tasks))
    with ThreadPoolExecutor(WORKERS) as pool:
        for start in range(0, len(arriving), BATCH):
            batch = arriving[start:start + BATCH]
            done = list(pool.map(lambda r: r.present or files.link_in(ws.paths.directory(r.directory), r.name,
                                                                      r.data, sync_dir=False)[1], batch))
            logged: list[tuple[str, dict[str, Any]]] = []
            for item, created in zip(batch, done):
                if not created:  # here already with its event (linked in between): nothing to log
                    continue
                kind = rules.RECORD_KINDS[item.directory]
                path = f"{item.directory}/{item.name}"
                task = item.task
                logged.append(("sync.import", {"task": task, "worktree": ws.worktree, "branch": ws.branch,
                                               "remote": remote, "machine": item.ref, "kind": kind, "path": path,
                                               "sha256": records.sha256(item.data)}))
                out.append(Imported(kind, path, task, item.ref))
            for directory in sorted({r.directory for r in batch}):
                files.fsync_dir(ws.paths.directory(directory))
            if logged:
                ledger.append_many(ws.paths.ledger, logged, at)
            arrival.stamp_in_order(ws, [item for item, created in zip(batch, done) if created])
            arrival.index(ws, [item for item, created in zip(batch, done) if created])


def import_tasks(ws: Workspace, remote: str, plan: Plan, at: str, out: list[Imported], released: list[str]) -> None:
    """Replace task records under the lock, unless one changed here since it was planned.

    Each one's `sync.import` event first, then the file: a pull that fails in between is completed by the
    same pull run again, which finds the event of that very version and only replaces the file (design
    §10): the event is written once, and never for a version that did not come."""
    if plan.tasks:
        ws.ensure_state("tasks")
    elif not tasks_mod.read_index(ws):
        return  # nothing to import and nothing active here to let go of
    with files.locked(ws.paths.lock):
        recent = _recent_imports(ws)
        for item in plan.tasks:
            file = ws.paths.task_file(item.task)
            try:
                now: str | None = odb.blob_id(safeio.read(file, TASK_MAX_BYTES))
            except FileNotFoundError:
                now = None
            if now != item.disk:
                plan.settled.pop(item.task, None)  # changed here while we synced: the next sync merges it
                continue
            digest = records.sha256(item.data)
            if recent.get(item.task) != digest:
                updated = records.parse_yaml(item.data.decode("utf-8")).get("updated_at")
                ws.event("sync.import", item.task, at, remote=remote, machine=item.ref, kind="task",
                         path=f"tasks/{item.task}.yaml", sha256=digest, updated_at=updated,
                         replaced=now is not None, **({"claims_only": True} if item.ours else {}))
            files.replace(file, item.data)
            out.append(Imported("task", f"tasks/{item.task}.yaml", item.task, item.ref, replaced=now is not None))
            if not item.ours:
                status = records.parse_yaml(item.data.decode("utf-8")).get("status")
                _release(ws, item.task, remote, at, released, status)
        complete_releases(ws, remote, at, released)


def _recent_imports(ws: Workspace) -> dict[str, str]:
    """Task id -> the digest its latest `sync.import` of a task record names, among the ledger's last
    `EVENT_LOOK_BACK` bytes: one backwards read for the whole pull (a pull that failed part way is the
    ledger's end when the same pull runs again)."""
    import os

    from majordomus.errors import EnvironmentProblem

    found: dict[str, str] = {}
    try:
        fd = safeio.open_regular(ws.paths.ledger, ledger.MAX_BYTES)
    except (OSError, EnvironmentProblem):
        return found
    try:
        read = 0
        for line in ledger.lines_backwards(fd, os.fstat(fd).st_size):
            read += len(line) + 1
            if read > ledger.EVENT_LOOK_BACK:
                break
            event = ledger.parse_line(line) if b'"sync.import"' in line else None
            task, path = (event.get("task"), event.get("path")) if event is not None else (None, None)
            if (event is not None and event["event"] == "sync.import" and isinstance(task, str)
                    and path == f"tasks/{task}.yaml" and task not in found):
                found[task] = str(event.get("sha256"))
    finally:
        os.close(fd)
    return found


def _release(ws: Workspace, task_id: str, remote: str, at: str, released: list[str], status: object) -> None:
    # Whoever changed the task on another machine holds it now, or let it go there: two workers never hold
    # one unnoticed. The reason says which, as the newer record does.
    if taskend.release(ws, task_id):
        why = "it is held elsewhere now" if status == "active" else f"it was let go there (it is {status} now)"
        ws.event("task.pause", task_id, at, by="sync", reason=f"a newer record of the task came from {remote}: {why}")
        released.append(task_id)


def complete_releases(ws: Workspace, remote: str, at: str, released: list[str]) -> None:
    """A pull that failed after a task record came in and before it let go of the task here: the index
    still names a task whose record, as imported, says it is active somewhere else. Let go of it now.
    The caller holds the lock."""
    from majordomus.errors import MajordomusError
    from majordomus.lite import active

    recent: dict[str, str] | None = None
    for key, task_id in sorted(tasks_mod.read_index(ws).items()):
        place = active.unslot(key)
        try:
            task = tasks_mod.load(ws, task_id)
            data = safeio.read(ws.paths.task_file(task_id), TASK_MAX_BYTES)
        except (MajordomusError, OSError):
            continue
        if task_id in released or place is None or (task.status == "active" and (task.worktree, task.branch) == place):
            continue
        if recent is None:
            recent = _recent_imports(ws)
        if recent.get(task_id) == records.sha256(data):
            _release(ws, task_id, remote, at, released, task.status)


def record_conflicts(ws: Workspace, remote: str, plan: Plan, at: str) -> None:
    for c in plan.conflicts:
        ws.event("sync.conflict", c.task, at, remote=remote, machine=c.machine, kept=c.kept,
                 local_updated_at=c.local_updated_at, remote_updated_at=c.remote_updated_at,
                 local_sha256=c.local_sha256, remote_sha256=c.remote_sha256)


def _convert_legacy(ws: Workspace, writer: odb.TreeWriter, view: odb.TreeView) -> None:
    """A format-1 settled tree (this machine's own, from before the per-machine layout) into format 2."""
    for directory in rules.RECORD_KINDS:
        for found in layout.new_records(view, 1, None, directory, []):
            writer.put(layout.record_path(directory, found.name), found.entry)
    for task_id, entry, _where in layout.task_entries(view, None, []):
        writer.put(("tasks", f"{task_id}.yaml"), entry)


def settle(ws: Workspace, remote: str, plan: Plan, refs: list[RemoteRef]) -> str | None:
    """Move `refs/majordomus/synced` to what this machine holds of the remote now; its parents are the remote
    commits it took in, so that this machine's next push says what it had seen."""
    repo = ws.repo
    tip, base, fmt = base_view(ws)
    own = tip if tip is not None and tip == odb.ref_target(repo, SYNCED_REF) else None
    if not refs:
        return own
    writer = odb.TreeWriter(repo, base.oid if base is not None and fmt == 2 else None)
    if base is None or fmt != 2:
        writer.put((layout.FORMAT_PATH,), odb.Entry(odb.write_blob(repo, layout.FORMAT), odb.BLOB))
        if base is not None:
            _convert_legacy(ws, writer, base)
    for directory, name, oid in plan.known:
        writer.put(layout.record_path(directory, name), odb.Entry(oid, odb.BLOB))
    for item in plan.records:
        writer.put(layout.record_path(item.directory, item.name), odb.Entry(item.oid, odb.BLOB))
    for task in plan.tasks:  # a version with merged claims exists only here so far
        if task.task in plan.settled:
            odb.write_blob(repo, task.data)
    for task_id, oid in plan.settled.items():
        if oid in plan.kept:  # ours, kept: written unless a push wrote it already (the same bytes, one id)
            odb.write_blob(repo, plan.kept[oid])
        writer.put(("tasks", f"{task_id}.yaml"), odb.Entry(oid, odb.BLOB))
    tree = writer.write() if writer.changed else (base.oid if base is not None else None)
    previous = odb.commit(repo, own) if own else None
    taken = set(previous.parents) if previous is not None else set()
    new_parents = list(dict.fromkeys(r.commit.oid for r in refs if r.commit.oid not in taken and r.commit.oid != own))
    if tree is None or (previous is not None and previous.tree == tree and not new_parents):
        return own
    commit = odb.write_commit(repo, tree, ([own] if own else []) + new_parents, f"majordomus: settled from {remote}")
    odb.update_ref(repo, SYNCED_REF, commit, own, f"majordomus sync: settled from {remote}")
    legacy = odb.ref_target(repo, LEGACY_REF)
    if legacy is not None:
        odb.delete_ref(repo, LEGACY_REF, legacy)  # folded into the settled state: the old layout is gone here
    return commit
