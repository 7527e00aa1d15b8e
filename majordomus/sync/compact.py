"""`majordomus sync compact` (design §13): fold retired machines' refs into refs/majordomus/state.

One commit: the union of the folded refs and the state (records by name, each task's newest version), its
parents the state and every folded machine's commit. The state moves and the folded refs are deleted in one
atomic push, each checked against what was read, so a machine that pushed meanwhile loses nothing: the
push fails, and compact reads again (or, out of time, says busy).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

from majordomus import clock
from majordomus.errors import EnvironmentProblem, Refused, UsageError
from majordomus.git import odb
from majordomus.lite.textrules import escape
from majordomus.store import files, ledger
from majordomus.sync import machine, transport
from majordomus.sync import remote as remotes
from majordomus.sync.fold import Folder
from majordomus.sync.layout import Refusal
from majordomus.sync.push import FIRST_DELAY, MAX_DELAY, TIMEOUT, busy, lock_path
from majordomus.sync.remote import RemoteRef, Seen
from majordomus.workspace import Workspace

LOOK_BACK = 10_000  # ledger lines read back for the event of a fold found unlogged


@dataclass
class CompactResult:
    remote: str
    folded: list[str] = field(default_factory=list)  # machine ids
    commit: str | None = None
    attempts: int = 0
    refused: list[Refusal] = field(default_factory=list)
    completed: bool = False  # an earlier compact folded these but did not log it: its event is written now


def choose(found: Seen, own: str | None, ids: list[str], idle_days: float | None, now: float) -> list[RemoteRef]:
    """The machine refs to fold: those named, and those that have not pushed for `idle_days`."""
    machines = {r.machine: r for r in found.refs if r.machine is not None}
    for mid in ids:
        if mid == own:
            raise Refused(f"`{mid}` is this machine; its ref is the one it pushes", "name another machine's id")
        if mid not in machines:
            raise UsageError(f"no machine `{escape(mid)}` on {escape(found.remote)}",
                             f"`majordomus sync status {found.remote}` lists the machines it has")
    chosen = {mid: machines[mid] for mid in ids}
    if idle_days is not None:
        for mid, ref in machines.items():
            if mid != own and now - ref.commit.time > idle_days * 86400:
                chosen.setdefault(mid, ref)
    return [chosen[mid] for mid in sorted(chosen)]


def _fold(ws: Workspace, state: RemoteRef | None, folded: list[RemoteRef], result: CompactResult) -> str:
    base = state.view if state is not None and state.fmt == 2 else None
    folder = Folder(ws, base)
    if state is not None and state.fmt != 2:
        folder.fold(state)
    for ref in folded:
        folder.fold(ref)
    result.refused = folder.refused
    parents = ([state.commit.oid] if state is not None else []) + [r.commit.oid for r in folded]
    names = ", ".join(r.machine or "" for r in folded)
    return odb.write_commit(ws.repo, folder.write(), parents, f"majordomus state: folded {names}")


def _unlogged(ws: Workspace, remote: str) -> tuple[str, list[str]] | None:
    """A compaction this machine pushed whose event did not land (design §10): the remote's state is a fold
    commit made here (in this object store) that the tracking ref of the state never reached, because the
    event is written before the tracking refs move. (its commit, the machines it folded), or None."""
    repo = ws.repo
    there = transport.list_refs(ws.place, remote).get(machine.STATE_REF)
    tracked = odb.ref_target(repo, transport.tracking(remote, machine.STATE_REF))
    found = odb.commit(repo, there) if there is not None and there != tracked and odb.kind(repo, there) else None
    if found is None or (tracked is not None and tuple(found.parents[:1]) != (tracked,)):
        return None
    taken = list(found.parents[1:] if tracked is not None else found.parents)
    prefix = transport.tracking(remote, machine.PREFIX)
    folded = [ref[len(prefix):] for ref, oid in odb.refs_under(repo, prefix).items() if oid in taken]
    if there is None or not folded or not found.message.startswith("majordomus state: folded "):
        return None
    if any(e.get("commit") == there for e in ledger.tail(ws.paths.ledger, LOOK_BACK, b'"sync.compact"')
           if e.get("event") == "sync.compact"):
        return None  # logged, and the fetch after it failed: the fetch below moves the tracking refs
    return there, sorted(folded)


def _fetch_after(ws: Workspace, remote: str) -> None:
    """The fetch after a compaction landed and was logged: when it fails, say that the fold is done."""
    try:
        remotes.fetch(ws, remote)
    except EnvironmentProblem as exc:
        raise EnvironmentProblem(f"the compaction landed on {escape(remote)} and its event is written, but fetching "
                                 f"its refs back failed: {exc.message}",
                                 f"see what git says (`git fetch {escape(remote)}`: a lock file left in .git, a full "
                                 "disk); then `majordomus sync pull` brings the refs here, nothing needs folding again"
                                 ) from exc


def compact(ws: Workspace, name: str | None, ids: list[str], idle_days: float | None,
            timeout: float = TIMEOUT) -> CompactResult:
    if not ids and idle_days is None:
        raise UsageError("name the machines to fold: --machine ID (repeatable) or --idle-days N",
                         "`majordomus sync status` lists the machines and when each last pushed")
    remote = remotes.resolve_remote(ws, name)
    result = CompactResult(remote=remote)
    own = machine.read(ws)
    ws.ensure_state()
    started, delay = time.monotonic(), FIRST_DELAY
    with files.locked(lock_path(ws), whole=False, wait=timeout):
        done = _unlogged(ws, remote)
        if done is not None:  # complete it first: its event, then the tracking refs (fetched below)
            result.commit, result.folded, result.completed = done[0], done[1], True
            ws.event("sync.compact", None, clock.now_iso(), remote=remote, commit=done[0], folded=done[1],
                     completed=True)
            ids = [mid for mid in ids if mid not in done[1]]
            if not ids and idle_days is None:
                _fetch_after(ws, remote)
                return result
        while True:
            result.attempts += 1
            remotes.fetch(ws, remote)
            found = remotes.seen(ws, remote)
            folded = choose(found, own, ids, idle_days, time.time())
            if not folded:
                return result
            state = found.state
            commit = _fold(ws, state, folded, result)
            updates = [transport.Update(commit, machine.STATE_REF, state.commit.oid if state is not None else "")]
            updates += [transport.Update("", r.name, r.commit.oid) for r in folded]
            out = transport.push(ws.place, remote, updates)
            if out.ok:
                result.folded, result.commit = result.folded + [r.machine or "" for r in folded], commit
                # The event first, the tracking refs after it: a compact whose event did not land is
                # completed by the next one (the remote has the fold, the tracking ref of the state not).
                ws.event("sync.compact", None, clock.now_iso(), remote=remote, commit=commit,
                         folded=[r.machine or "" for r in folded])
                _fetch_after(ws, remote)  # the tracking refs of the folded machines go too
                return result
            if not out.race:
                raise EnvironmentProblem(f"{remote} refused the compaction:", detail=transport.said(out.detail), hint=
                                         transport.rejection_hint(out.detail, "a hook or rule on the remote "
                                                                  "refuses refs/majordomus/*: ask its owner "
                                                                  "(nothing was changed there)"))
            spent = time.monotonic() - started
            if spent >= timeout:
                raise busy(remote, machine.STATE_REF, spent, result.attempts, "compact")
            time.sleep(min(timeout - spent, random.uniform(0, delay)))
            delay = min(delay * 2, MAX_DELAY)
