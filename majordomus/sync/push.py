"""`majordomus sync push` (design §13): commit what this machine holds on its own ref and push that ref only.

One writer per ref: nothing races on a push, however many machines push at once. Where a push can still
lose (two copies of one state pushing one ref, a remote ref rewound by hand, an old-layout state migrating
while an older majordomus pushes it), the remote is asked first, the loser fetches, folds and retries with
jittered backoff inside a time bound, and then gives up with exit 75 (busy), having lost nothing.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field

from majordomus import clock, errors
from majordomus.errors import EnvironmentProblem, MajordomusError
from majordomus.git import odb
from majordomus.store import files, ledger
from majordomus.sync import machine, transport
from majordomus.sync import remote as remotes
from majordomus.sync.fold import Folder
from majordomus.sync.layout import DIRS, Refusal
from majordomus.sync.snapshot import snapshot
from majordomus.sync.union import SYNCED_REF
from majordomus.workspace import Workspace

TIMEOUT = 20.0  # seconds a push keeps retrying a lost race before it says "busy"
FIRST_DELAY, MAX_DELAY = 0.05, 2.0


@dataclass
class PushResult:
    remote: str
    machine: str | None = None
    ref: str | None = None
    commit: str | None = None
    pushed: bool = False
    attempts: int = 0
    migrated: bool = False  # the remote's format-1 state was rewritten in format 2
    completed: bool = False  # an earlier push landed this commit but did not log it: its event is written now
    sent: dict[str, int] = field(default_factory=lambda: {d: 0 for d in DIRS})
    refused: list[Refusal] = field(default_factory=list)


def lock_path(ws: Workspace) -> str:
    return ws.paths.sync_lock


def _commit_snapshot(ws: Workspace, ref: str, checkpoints: bool, result: PushResult) -> str:
    """This machine's ref moved to a commit of what it holds (unchanged when nothing is new)."""
    repo = ws.repo
    previous = odb.ref_target(repo, ref)
    edits = snapshot(ws, odb.commit(repo, previous) if previous else None, checkpoints)
    writer = edits.writer
    result.sent, result.refused = edits.sent, result.refused + edits.refused
    parents = [previous] if previous else []
    synced = odb.ref_target(repo, SYNCED_REF)
    if synced is not None and not (previous and odb.contains(repo, previous, synced)):
        parents.append(synced)  # what this machine had seen of the others: their next pull can tell
    if previous is not None and not writer.changed and len(parents) == 1:
        edits.cache.save(previous)
        return previous
    tip = odb.write_commit(repo, writer.write(), parents, f"majordomus state of machine {result.machine}")
    odb.update_ref(repo, ref, tip, previous, "majordomus sync: snapshot")
    edits.cache.save(tip)
    return tip


def _merge_own(ws: Workspace, remote: str, ref: str, tip: str, result: PushResult) -> str:
    """The remote's copy of our ref moved to something we do not have: fold it into ours (a union)."""
    repo = ws.repo
    out = transport.fetch_refs(ws.place, remote, [ref])
    theirs = odb.ref_target(repo, transport.tracking(remote, ref))
    if not out.ok or theirs is None:
        raise EnvironmentProblem(f"cannot fetch {ref} from {remote}:", detail=transport.said(out.detail), hint=
                                 f"check the remote and your access to it (`git fetch {remote}`), then try again")
    found, problem = remotes.read(ws, remote, ref, theirs)
    if found is None:
        raise EnvironmentProblem(f"{remote}'s {ref}: {problem.reason if problem else 'unreadable'}",
                                 f"delete it on the remote (`git push {remote} :{ref}`) and push again")
    if odb.contains(repo, tip, found.commit.oid):
        return tip
    mine = odb.commit(repo, tip)
    assert mine is not None
    folder = Folder(ws, odb.tree(repo, mine.tree))
    folder.fold(found)
    result.refused.extend(folder.refused)
    merged = odb.write_commit(repo, folder.write(), [tip, found.commit.oid],
                              f"majordomus state of machine {result.machine}: merge {remote}")
    odb.update_ref(repo, ref, merged, tip, f"majordomus sync: merge {remote}")
    return merged


def _migration(ws: Workspace, remote: str, state: str | None, result: PushResult) -> str | None:
    """A format-2 commit of the remote's format-1 state (its child: older majordomus then asks to upgrade)."""
    if state is None:
        return None
    repo = ws.repo
    if odb.ref_target(repo, transport.tracking(remote, machine.STATE_REF)) != state or odb.kind(repo, state) is None:
        if not transport.fetch_refs(ws.place, remote, [machine.STATE_REF]).ok:
            return None  # pull reports what is wrong with it
    found, _problem = remotes.read(ws, remote, machine.STATE_REF, state)
    if found is None or found.fmt != 1:
        return None
    folder = Folder(ws, None)
    folder.fold(found)
    result.refused.extend(folder.refused)
    return odb.write_commit(repo, folder.write(), [state], "majordomus state, format 2 (migrated from format 1)")


def busy(remote: str, ref: str, seconds: float, attempts: int, command: str = "push") -> MajordomusError:
    """Exit 75 (design §14): another writer won every round inside the time bound; nothing was lost."""
    return MajordomusError(
        f"{remote} kept changing {ref} for {seconds:.0f} s ({attempts} attempts): still busy. Nothing was lost "
        + ("(this machine's state is committed on its local ref)" if command == "push" else "(nothing was changed)"),
        f"run `majordomus sync {command}` again", code=errors.BUSY)


def push(ws: Workspace, name: str | None, *, checkpoints: bool = False, timeout: float = TIMEOUT) -> PushResult:
    """Commit this machine's state on refs/majordomus/machines/ID and push that ref (design §13)."""
    remote = remotes.resolve_remote(ws, name)
    result = PushResult(remote=remote)
    if machine.read(ws) is None and not os.path.isdir(ws.paths.tasks):
        return result  # nothing here to share, and nothing was ever shared: write nothing
    ws.ensure_state()
    result.machine = machine.ensure(ws)
    ref = result.ref = machine.ref(result.machine)
    repo = ws.repo
    with files.locked(lock_path(ws), whole=False, wait=timeout):
        base = odb.ref_target(repo, ref)
        tip = _commit_snapshot(ws, ref, checkpoints, result)
        started, delay = time.monotonic(), FIRST_DELAY
        landed: list[transport.Update] = []
        while True:
            result.attempts += 1
            there = transport.list_refs(ws.place, remote)  # ask first: never upload to lose
            theirs = there.get(ref)
            if theirs is not None and theirs != tip and not (odb.kind(repo, theirs) and odb.contains(repo, tip, theirs)):
                tip = _merge_own(ws, remote, ref, tip, result)
            updates = [transport.Update(tip, ref)] if there.get(ref) != tip else []
            migrated = _migration(ws, remote, there.get(machine.STATE_REF), result)
            if migrated is not None:
                updates.append(transport.Update(migrated, machine.STATE_REF))
            if not updates:
                # The remote has it: a push that sent it and stopped before its event (design §10: a retry
                # completes what is missing) is told by the ledger, not by the tracking ref, which any fetch
                # (a pull, a status) moves as well.
                result.completed = not _push_logged(ws, tip)
                if result.completed or odb.ref_target(repo, transport.tracking(remote, ref)) != tip:
                    landed = [transport.Update(tip, ref)]
                break
            out = transport.push(ws.place, remote, updates)
            if out.ok:
                result.pushed = there.get(ref) != tip
                if there.get(ref) != base:  # the remote did not hold what this machine last committed: count
                    result.sent = _sent(ws, tip, there.get(ref))  # what it did not have, not what is new here
                result.migrated = migrated is not None
                landed = updates
                break
            if not out.race:
                names = ", ".join(u.dst for u in updates)
                raise EnvironmentProblem(f"{remote} rejected {names}:", detail=transport.said(out.detail), hint=
                                         transport.rejection_hint(out.detail, "a hook or rule on the remote "
                                                                  "refuses refs/majordomus/*: ask its owner to "
                                                                  "accept them (nothing else was sent)"))
            spent = time.monotonic() - started
            if spent >= timeout:
                raise busy(remote, ref, spent, result.attempts)
            time.sleep(min(timeout - spent, random.uniform(0, delay)))  # full jitter: racers spread out
            delay = min(delay * 2, MAX_DELAY)
        result.commit = tip
        if result.pushed or result.migrated or result.completed:
            # The event first, the tracking refs after it: a push whose event did not land is completed by
            # the next one (the remote has the commit, the ledger no event of it).
            ws.event("sync.push", None, clock.now_iso(), remote=remote, ref=ref, commit=tip, attempts=result.attempts,
                     checkpoints=checkpoints, migrated=result.migrated,
                     **({"completed": True} if result.completed else {}))
        for update in landed:
            track = transport.tracking(remote, update.dst)
            odb.update_ref(repo, track, update.src, odb.ref_target(repo, track), f"majordomus sync: pushed to {remote}")
    return result


def _sent(ws: Workspace, tip: str, theirs: str | None) -> dict[str, int]:
    """The records and tasks commit `tip` holds that the remote's `theirs` did not (a push stopped after its
    local commit, a remote that lost the ref): per top directory, as the snapshot counts them."""
    sent = {d: 0 for d in DIRS}
    for path in odb.new_blobs(ws.repo, tip, theirs):
        top = path.split("/", 1)[0]
        if top in sent:
            sent[top] += 1
    return sent


def _push_logged(ws: Workspace, tip: str) -> bool:
    """Whether the ledger holds the `sync.push` of commit `tip` (looked for back to the commit's own time; a
    ledger that cannot tell counts as logged: never a second event on a guess)."""
    found = odb.commit(ws.repo, tip)
    if found is None:
        return True
    return ledger.logged(ws.paths.ledger, tip, clock.iso_of(found.time), key="commit")
