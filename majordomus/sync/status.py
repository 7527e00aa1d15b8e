"""`majordomus sync status`: the machines the remote has and when each last pushed, what this machine has
not delivered, and what a pull would import — computed without writing anything but the fetched refs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from majordomus import clock
from majordomus.store import paths
from majordomus.sync import layout, machine, union
from majordomus.sync import remote as remotes
from majordomus.sync.layout import DIRS, Refusal
from majordomus.sync.plan import Conflict
from majordomus.sync.snapshot import snapshot
from majordomus.workspace import Workspace


@dataclass
class MachineSeen:
    id: str | None  # None: the folded state (refs/majordomus/state)
    ref: str
    commit: str
    pushed_at: str  # when its commit was made (UTC), as its writer's clock said
    format: int
    this: bool = False


@dataclass
class Status:
    remote: str
    fetched: bool
    machine: str | None  # this machine's id (None until its first push)
    machines: list[MachineSeen] = field(default_factory=list)
    ahead: dict[str, list[str]] = field(default_factory=dict)  # not delivered: what `sync push` would send
    behind: dict[str, list[str]] = field(default_factory=dict)  # what `sync pull` would import
    conflicts: list[Conflict] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    broken: list[Refusal] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "remote": self.remote,
            "fetched": self.fetched,
            "machine": self.machine,
            "ref": machine.ref(self.machine) if self.machine else None,
            "machines": [vars(m) for m in self.machines],
            "ahead": self.ahead,
            "behind": self.behind,
            "conflicts": [vars(c) for c in self.conflicts],
            "refused": [vars(r) for r in self.refused],
            "broken": [vars(r) for r in self.broken],
        }



def status(ws: Workspace, name: str | None, *, fetch: bool = True) -> Status:
    """Compare this machine's state with the remote's (fetched first unless `fetch` is False)."""
    remote = remotes.resolve_remote(ws, name)
    paths.check_readable(ws.paths)  # refuses a state directory reached through a symlink
    if fetch:
        remotes.fetch(ws, remote)
    found = remotes.seen(ws, remote)
    own = machine.read(ws)
    result = Status(remote=remote, fetched=fetch, machine=own, refused=list(found.refused), broken=found.broken)
    for ref in found.refs:
        result.machines.append(MachineSeen(ref.machine, ref.name, ref.commit.oid, clock.iso_of(ref.commit.time), ref.fmt,
                                           this=ref.machine is not None and ref.machine == own))
    mine = found.mine(own)
    result.ahead = {d: [] for d in DIRS}
    edits = snapshot(ws, mine.commit if mine is not None else None, True, dry=True)
    result.refused += edits.refused
    _tip, synced, fmt = union.base_view(ws)
    for path, oid in edits.added:
        directory, _, entry_name = path.partition("/")
        held = layout.lookup(synced, ("tasks", entry_name)) if directory == "tasks" else (
            layout.holds(synced, directory, entry_name, fmt))
        if held is not None and (directory != "tasks" or held.oid == oid):
            continue  # taken from the remote: delivered by whoever wrote it
        result.ahead[directory].append(path)
    plan, _restore = union.plan(ws, found.refs, mine)
    result.behind = {d: [] for d in DIRS}
    for item in plan.records:
        result.behind[item.directory].append(f"{item.directory}/{item.name}")
    result.behind["tasks"] = sorted(f"tasks/{t.task}.yaml" for t in plan.tasks)
    result.conflicts = plan.conflicts
    result.refused += plan.refused
    return result
