"""`majordomus sync` (SPEC §13): task records and handoffs (checkpoints on request) travel through a git remote.

The local ref `refs/majordomus/state` is the state this machine last synced; the remote's is fetched to
`refs/majordomus/remotes/REMOTE/state`. Every sync first commits what changed here on top of the local ref,
then merges the remote's state into it, brings the store up to the merged state (importing with the
exclusive-link discipline), and only then moves the local ref — so an interrupted sync repeats cleanly.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Optional

from majordomus.lite import safeio
from majordomus import lifecycle

from majordomus import clock, tasks
from majordomus.git import odb as git
from majordomus.store import ledger
from majordomus.store import records
from majordomus.sync import tree as statetree
from majordomus.store import files as store
from majordomus.sync import transport
from majordomus.errors import EnvironmentProblem, NotFound
from majordomus.sync.transport import STATE_REF, tracking_ref
from majordomus.sync.tree import FORMAT, FORMAT_PATH, Conflict, Plan, Refusal, Side
from majordomus.workspace import Workspace

MAX_ATTEMPTS = 5  # pushes tried when someone else keeps pushing first
BATCH = 256  # records linked in per directory fsync and ledger write


@dataclass
class Imported:
    kind: str  # task, handoff or checkpoint
    path: str  # relative to the state directory
    task: Optional[str]
    replaced: bool = False


@dataclass
class Result:
    remote: str
    commit: Optional[str] = None
    pushed: bool = False
    attempts: int = 0
    imported: list[Imported] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    released: list[str] = field(default_factory=list)  # tasks that stopped being active here
    held: dict[str, int] = field(default_factory=dict)  # what the state holds now, by directory


def resolve_remote(ws: Workspace, name: Optional[str]) -> str:
    """REMOTE, else the branch's upstream remote, else `origin`; a remote that is not configured is an error."""
    names = git.remote_names(ws.repo)
    if name:
        if name not in names:
            raise NotFound(f"no remote named `{name}` in this repository",
                           "list the remotes with `git remote -v`, or add one with `git remote add NAME URL`")
        return name
    upstream = git.upstream_remote(ws.repo)
    candidate = upstream or "origin"
    if candidate in names:
        return candidate
    if not names:
        raise NotFound("this repository has no remote to sync with",
                       "add one with `git remote add origin URL`, then run the command again")
    raise NotFound(f"no remote `{candidate}` (the default) in this repository; it has: {', '.join(names)}",
                   "name the remote: `majordomus sync push REMOTE`")


def _lock(ws: Workspace) -> str:
    return os.path.join(ws.paths.root, ".sync-lock")


def fetch_state(ws: Workspace, remote: str) -> Optional[str]:
    """Fetch the remote's state; its commit, or None when the remote has none."""
    out = transport.fetch(ws.worktree, remote)
    if out.ok:
        return git.ref_target(ws.repo, tracking_ref(remote))
    if transport.has_state(ws.worktree, remote) is False:
        return None
    raise EnvironmentProblem(f"cannot fetch {STATE_REF} from {remote}:\n{_indent(out.detail)}",
                             f"check the remote and your access to it (`git fetch {remote}`), then try again")


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines()) or "  (git said nothing)"


def check_format(repo: git.Repo, entries: dict[str, git.Entry], remote: str) -> None:
    entry = entries.get(FORMAT_PATH)
    if entry is None:
        return
    found = git.read_blob(repo, entry.oid)
    if found != FORMAT:
        raise EnvironmentProblem(
            f"{remote} holds majordomus state in format {found[:40]!r}; this majordomus reads {FORMAT!r}",
            "upgrade majordomus on this machine, then sync again; nothing was imported")


def _commit_local(ws: Workspace, current: Optional[str], base: dict[str, git.Entry], ours: Side) -> Optional[str]:
    """A commit of what this machine holds on top of `current`; None when there is nothing at all."""
    if current is not None and ours.entries == base:
        return current
    if current is None and set(ours.entries) == {FORMAT_PATH}:
        return None
    tree = git.write_tree(ws.repo, ours.entries)
    return git.write_commit(ws.repo, tree, [current] if current else [], "majordomus state")


def _merged_commit(ws: Workspace, mine: Optional[str], theirs: str, plan: Plan, ours: Side, other: Side,
                   remote: str) -> str:
    repo = ws.repo
    if plan.entries == other.entries and (mine is None or git.contains(repo, theirs, mine)):
        return theirs  # a fast-forward
    if mine is not None and git.contains(repo, mine, theirs) and plan.entries == ours.entries:
        return mine
    if mine is None or git.contains(repo, theirs, mine):
        parents = [theirs]
    elif git.contains(repo, mine, theirs):
        parents = [mine]
    else:
        parents = [mine, theirs]
    tree = git.write_tree(repo, plan.entries)
    return git.write_commit(repo, tree, parents, f"majordomus state: merge {remote}")


def _integrate(ws: Workspace, remote: str, theirs: str, *, checkpoints: bool, result: Result) -> str:
    """Merge the remote's state into ours, bring the store up to it, then move the local ref."""
    repo = ws.repo
    current = git.ref_target(repo, STATE_REF)
    base_entries = git.read_tree(repo, current) if current else {}
    ours, skipped = statetree.snapshot(ws, base_entries, checkpoints=checkpoints, write=True)
    _add_refusals(result, skipped)
    mine = _commit_local(ws, current, base_entries, ours)
    other = Side(git.read_tree(repo, theirs))
    check_format(repo, other.entries, remote)
    common = git.merge_base(repo, mine, theirs) if mine else None
    plan = statetree.merge(repo, git.read_tree(repo, common) if common else {}, ours, other)
    _add_refusals(result, plan.refused)
    at = clock.now_iso()
    _checkout(ws, remote, plan, ours, result, at)
    for conflict in plan.conflicts:
        ws.event("sync.conflict", conflict.task, at, remote=remote, kept=conflict.kept,
                    local_updated_at=conflict.local_updated_at, remote_updated_at=conflict.remote_updated_at,
                    local_sha256=conflict.local_sha256, remote_sha256=conflict.remote_sha256)
    result.conflicts.extend(plan.conflicts)
    merged = _merged_commit(ws, mine, theirs, plan, ours, other, remote)
    if merged != current:
        git.update_ref(repo, STATE_REF, merged, current, f"majordomus sync: merge {remote}")
    return merged


def _add_refusals(result: Result, found: list[Refusal]) -> None:
    seen = {(r.path, r.side) for r in result.refused}
    result.refused.extend(r for r in found if (r.path, r.side) not in seen)


def _checkout(ws: Workspace, remote: str, plan: Plan, ours: Side, result: Result, at: str) -> None:
    """Import into the store what the merged state has and this machine lacks."""
    ws.ensure_state("tasks", "handoffs", "checkpoints")
    for directory, kind in statetree.RECORD_DIRS.items():
        full = os.path.join(ws.paths.root, directory)
        present = set(os.listdir(full))
        missing = sorted(p for p in plan.entries if p.startswith(directory + "/") and p.split("/", 1)[1] not in present)
        for start in range(0, len(missing), BATCH):
            _import_records(ws, remote, plan, directory, kind, missing[start:start + BATCH], result, at)
    changed = sorted(p for p, e in plan.entries.items() if p.startswith("tasks/") and ours.disk.get(p) != e.oid)
    if changed:
        with store.locked(ws.paths.lock):
            for path in changed:
                _import_task(ws, remote, path, plan, ours, result, at)


def _import_records(ws: Workspace, remote: str, plan: Plan, directory: str, kind: str, paths: list[str],
                    result: Result, at: str) -> None:
    """Link a batch of records in (each fsynced), fsync the directory once, then log them in one ledger write.

    An event is written only once its record is durable; a crash inside a batch can leave up to BATCH
    records without their event, which `doctor` reports (a warning) and which loses nothing."""
    full = os.path.join(ws.paths.root, directory)
    logged: list[tuple[str, dict[str, Any]]] = []
    for path in paths:
        name = path[len(directory) + 1:]
        data = plan.data.get(path) or git.read_blob(ws.repo, plan.entries[path].oid)
        reason = statetree.check_record(directory, name, data)
        if reason:  # checked in the merge already; a second look costs one hash and guards the store
            _add_refusals(result, [Refusal(path, reason)])
            continue
        _stored, created = store.link_in(full, name, data, sync_dir=False)
        if created:
            task = records.split(data)[0].get("task")
            logged.append(("sync.import", {"task": task, "worktree": ws.worktree, "branch": ws.branch,
                                           "remote": remote, "kind": kind, "path": path,
                                           "sha256": records.sha256(data)}))
            result.imported.append(Imported(kind, path, task))
    if logged:
        store.fsync_dir(full)
        ledger.append_many(ws.paths.ledger, logged, at)


def _import_task(ws: Workspace, remote: str, path: str, plan: Plan, ours: Side, result: Result, at: str) -> None:
    task_id = path[len("tasks/"):-len(".yaml")]
    file = ws.paths.task_file(task_id)
    try:
        now: Optional[str] = git.blob_id(safeio.read(file))
    except FileNotFoundError:
        now = None
    if now != ours.disk.get(path):
        return  # changed here while we synced (or unreadable here): the next sync merges it
    data = plan.data.get(path) or git.read_blob(ws.repo, plan.entries[path].oid)
    store.replace(file, data)
    updated = records.parse_yaml(data.decode("utf-8")).get("updated_at")
    ws.event("sync.import", task_id, at, remote=remote, kind="task", path=path,
                sha256=records.sha256(data), updated_at=updated, replaced=now is not None)
    result.imported.append(Imported("task", path, task_id, replaced=now is not None))
    # Whoever changed the task on another machine holds it now; two workers never hold one task unnoticed.
    if lifecycle.release(ws, task_id):
        ws.event("task.pause", task_id, at, by="sync",
                    reason=f"a newer record of the task came from {remote}: it is held elsewhere now")
        result.released.append(task_id)


def _held(ws: Workspace, commit: Optional[str]) -> dict[str, int]:
    counts = {d: 0 for d in statetree.DIRS}
    for path in git.read_tree(ws.repo, commit) if commit else {}:
        directory = path.partition("/")[0]
        if directory in counts and "/" in path:
            counts[directory] += 1
    return counts


def push(ws: Workspace, name: Optional[str], *, checkpoints: bool = False) -> Result:
    """Commit what this machine holds and push that one ref; a rejected push fetches, merges and retries."""
    remote = resolve_remote(ws, name)
    result = Result(remote=remote)
    repo = ws.repo
    if git.ref_target(repo, STATE_REF) is None and not os.path.isdir(ws.paths.tasks):
        return result  # nothing here to share, and nothing was ever shared: write nothing
    ws.ensure_state()
    with store.locked(_lock(ws)):
        current = git.ref_target(repo, STATE_REF)
        base = git.read_tree(repo, current) if current else {}
        ours, skipped = statetree.snapshot(ws, base, checkpoints=checkpoints, write=True)
        _add_refusals(result, skipped)
        mine = _commit_local(ws, current, base, ours)
        if mine is None:
            return result
        if mine != current:
            git.update_ref(repo, STATE_REF, mine, current, "majordomus sync: snapshot")
        for attempt in range(1, MAX_ATTEMPTS + 1):
            result.attempts = attempt
            out = transport.push(ws.worktree, remote)
            if out.ok:
                git.update_ref(repo, tracking_ref(remote), mine, git.ref_target(repo, tracking_ref(remote)),
                               f"majordomus sync: pushed to {remote}")
                result.pushed = not out.up_to_date
                break
            if not out.rejected:
                raise EnvironmentProblem(f"cannot push {STATE_REF} to {remote}:\n{_indent(out.detail)}",
                                         f"check the remote and your access to it (`git push {remote}`)")
            theirs = fetch_state(ws, remote)
            if theirs is None or git.contains(repo, mine, theirs):
                raise EnvironmentProblem(
                    f"{remote} rejected {STATE_REF}:\n{_indent(out.detail)}",
                    "a hook or rule on the remote refuses the ref: ask its owner to accept refs/majordomus/state "
                    "(nothing else was sent)")
            mine = _integrate(ws, remote, theirs, checkpoints=checkpoints, result=result)
        else:
            raise EnvironmentProblem(
                f"{remote} kept moving: gave up after {MAX_ATTEMPTS} attempts (the merged state is kept here)",
                "run `majordomus sync push` again")
        result.commit = mine
        if result.pushed:
            ws.event("sync.push", None, clock.now_iso(), remote=remote, commit=mine,
                        attempts=result.attempts, checkpoints=checkpoints)
    result.held = _held(ws, result.commit)
    return result


def pull(ws: Workspace, name: Optional[str]) -> Result:
    """Fetch the remote's state and import what this machine lacks."""
    remote = resolve_remote(ws, name)
    result = Result(remote=remote)
    theirs = fetch_state(ws, remote)
    if theirs is None:
        raise NotFound(f"{remote} has no majordomus state to pull ({STATE_REF} is not there)",
                       f"push it first from a machine that has records: `majordomus sync push {remote}`")
    check_format(ws.repo, git.read_tree(ws.repo, theirs), remote)
    ws.ensure_state("tasks", "handoffs", "checkpoints")
    with store.locked(_lock(ws)):
        result.commit = _integrate(ws, remote, theirs, checkpoints=False, result=result)
    result.held = _held(ws, result.commit)
    return result
