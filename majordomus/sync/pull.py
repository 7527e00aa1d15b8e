"""`majordomus sync pull` (design §13): fetch every majordomus ref of the remote in one fetch and import the
union of all of them in one pass — each entry held to the rules of a local write, refused one by one."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from majordomus import clock
from majordomus.errors import EnvironmentProblem, NotFound
from majordomus.store import files
from majordomus.sync import apply, machine, pull_refused, union
from majordomus.sync import remote as remotes
from majordomus.sync.apply import Imported
from majordomus.sync.layout import Refusal
from majordomus.sync.plan import Conflict
from majordomus.sync.push import TIMEOUT, lock_path
from majordomus.workspace import Workspace


@dataclass
class PullResult:
    remote: str
    machines: list[str] = field(default_factory=list)  # the remote refs read
    imported: list[Imported] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    released: list[str] = field(default_factory=list)  # tasks that stopped being active here
    settled: str | None = None  # refs/majordomus/synced after the pull
    restored: int = 0  # of the imported, how many this machine had settled on and lost since
    missing: list[str] = field(default_factory=list)  # settled on, lost here, and held by no ref any more
    problem: EnvironmentProblem | None = None  # refs that could not be read at all (exit 12 after the rest)


def pull(ws: Workspace, name: str | None, full: bool = False) -> PullResult:
    """Fetch refs/majordomus/* and import what this machine lacks: what is new since the last pull, and what
    this machine settled on then and lost since (sync/lost.py). With `full`, every entry of every ref is
    read, whatever this machine settled on."""
    remote = remotes.resolve_remote(ws, name)
    result = PullResult(remote=remote)
    remotes.fetch(ws, remote)
    found = remotes.seen(ws, remote)
    if not (found.refs or found.broken or found.refused):
        raise NotFound(f"{remote} has no majordomus state to pull (no refs/majordomus/machines/* and no "
                       "refs/majordomus/state)",
                       f"push it first from a machine that has records: `majordomus sync push {remote}`")
    result.machines = [r.name for r in found.refs]
    result.problem = remotes.refs_problem(found)
    mine = found.mine(machine.read(ws))
    ws.ensure_state()
    with files.locked(lock_path(ws), whole=False, wait=TIMEOUT):
        plan, restore = union.plan(ws, found.refs, mine, full)
        at = clock.now_iso()
        with files.held_back():  # what came lands whole: records, task records, their events, the settled ref
            apply.import_records(ws, remote, plan, at, result.imported)
            apply.import_tasks(ws, remote, plan, at, result.imported, result.released)
            apply.record_conflicts(ws, remote, plan, at)
            result.settled = apply.settle(ws, remote, plan, found.refs)
            restore.save(result.settled, [(r.directory, r.name) for r in plan.records])
    lost = {f"{d}/{n}" for d, n in restore.lost} | {f"tasks/{t}" for t in restore.tasks}
    came = {item.path for item in result.imported}
    result.restored = len(lost & came)
    named = {r.path.rsplit("/", 1)[-1] for r in plan.refused}  # refused ones are reported as such
    result.missing = sorted(p for p in lost - came if p.rsplit("/", 1)[-1] not in named
                            and not os.path.lexists(ws.paths.absolute(p)))
    result.conflicts = plan.conflicts
    result.refused = found.refused + plan.refused
    if result.refused:  # one bounded event per pull, never one per entry
        ws.event(pull_refused.EVENT, None, at, **pull_refused.fields(remote, result.refused))
    return result
