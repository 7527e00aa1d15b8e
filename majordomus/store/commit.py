"""The one write transaction of a stored record: checkpoint, handoff and run record alike (design §6 step
6, §7, §10, §17).

    lock → the task still holds here → the ledger is writable → link the record → move the task's
    pointer (its task record) → index → ledger event

It takes plain data (`Write`: the state's paths, this worktree and branch, the task the command read,
the record) and imports nothing above the store: the task record's reader and writer are
`store.taskfile`. An empty checkpoint (`touch`) takes the same lock and check again and only moves the
task's time. What follows the event (a handoff leaves the slot) is the command's, once `commit` returned.

A refusal before the link writes nothing. design §10's rule for a write that fails part way lives here
and nowhere else:

- the task record fails before it was replaced: the record nothing names yet is unlinked again, and the
  command exits 12 saying nothing was written;
- a later step fails (the task record's directory fsync, the ledger append, or the handoff's release of
  the slot, which `handoff.write` does next and words with `incomplete`): the command exits 12 saying what is stored and what is not, and the same command run again
  completes what is missing — in the same second, where it finds its own record under its final name, or
  later, where it first completes the record the task points at (design §6 step 6: "already stored" is
  said only of a record whose task pointer and ledger event are both there).
"""

from __future__ import annotations

import os

from majordomus import clock
from majordomus.errors import EnvironmentProblem, NoActiveTask, Refused, rerun
from majordomus.lite import names, safeio
from majordomus.store import files, ledger, listing, paths, records, taskfile
from majordomus.store.taskfile import MAX_RUN_POINTERS

TYPE_CHECKING = False  # the checkpoint path: no typing at run time
if TYPE_CHECKING:
    from typing import Any

    from majordomus.store.paths import Site
    from majordomus.store.taskfile import Task

# How far back from the ledger's end an event for a pending record is looked for: a record whose write
# failed part way is completed by the next write, which comes soon; an older one is doctor's to report.


class Write:
    """One record to store, as plain data: what it is, the task it is for (the value the command read, once),
    its front matter and body, and the names of the task fields that point at it. Nothing here calls back
    into the command that made it: what a kind does after the transaction (a handoff leaves the slot) it
    does itself, once `commit` returned."""

    def __init__(self, ws: Site, task: Task, at: str, body: str, fields: list[tuple[str, Any]], *,
                 kind: str, what: str, subdir: str, event: str, pointer: str,
                 statuses: tuple[str, ...] = ("active",), indexed: bool = False, event_keys: tuple[str, ...] = (),
                 lines: bool = True, status: str | None = None, ends_claim: str | None = None,
                 replaces: tuple[str, ...] = (), any_pending: bool = False,
                 caches: tuple[tuple[str, bytes] | None, ...] = (), touch: bool = False,
                 of_the_task: bool = False) -> None:
        # Where, taken from the place once: the store holds no workspace.
        self.paths, self.worktree, self.branch, self.cwd = ws.paths, ws.worktree, ws.branch, ws.cwd
        self.where = ws.where()  # how a refusal names this worktree and branch
        self.task, self.at, self.body, self.fields = task, at, body, fields
        self.kind = kind  # the record's `kind` field: checkpoint, handoff, run
        self.what = what  # how messages name it: "checkpoint", "handoff", "run record"
        self.subdir, self.event = subdir, event  # its directory under the state directory; its ledger event
        # The task field that names the newest record of this kind: a path (`checkpoint`, `handoff`, with
        # its time in `<pointer>_at`), or a list of the latest ones (`runs`, one per label: moving it drops
        # `replaces`, the earlier records of the same label).
        self.pointer, self.replaces = pointer, replaces
        self.statuses = statuses  # what the task may be when its record changed before the lock was taken
        self.status = status  # the task's status once the pointer moved (a handoff: `handed-off`); then a
        # write that finds the task in it only completes the write that did not fully land, writes nothing new
        self.ends_claim = ends_claim  # the claim of this machine the pointer's move ends (a handoff's)
        self.indexed = indexed  # listed in the task's checkpoint index
        self.event_keys, self.lines = event_keys, lines  # front matter copied into the event; a `lines` count
        # True when any record the task points at may be unfinished (a run record is stamped when CMD
        # started, the task record moves when it ended); else only one whose move was the task's last change
        self.any_pending = any_pending
        # Derived files (path, bytes) computed on the way here (the root-commit cache, the configuration's
        # cache): written in one place, once past the refusals, best effort.
        self.caches = [c for c in caches if c is not None]
        self.touch = touch  # an empty checkpoint: only the task's `<pointer>_at` moves, no record
        # Its fields tell of the task as read (a handoff lists the checkpoints since the previous one): when
        # the task record changed before the lock was taken, it is `Stale` and the command makes it again.
        self.of_the_task = of_the_task
        # The record as it will be stored, made once, before the lock: its name, bytes and digest, and the
        # path (relative to the state directory) the task will point at.
        self.meta: dict[str, Any] = dict(fields)
        self.name, self.data, self.digest = ("", b"", "") if touch else rendered(fields, body)
        if len(self.data) > records.MAX_RECORD_BYTES:  # no reader reads more: stored, it would never be read
            raise Refused(f"the {what} would be {len(self.data):,} bytes with its front matter, over the "
                          f"{records.MAX_RECORD_BYTES:,} a record can be; nothing was written",
                          "keep it shorter (the configured cap allows more than a record holds: lower it in "
                          ".ai/config.yaml)")
        self.rel = f"{subdir}/{self.name}"

    def shown(self, path: str) -> str:
        """A path as messages and the command print it."""
        return paths.display(path, self.worktree, self.cwd)

    def pointer_of(self, task: Task) -> str | None:
        """The newest record of this kind the task record points at."""
        now = getattr(task, self.pointer)
        return (now[-1] if now else None) if isinstance(now, list) else now

    def points_at(self, task: Task, rel: str) -> bool:
        """Whether the task record already points at `rel` (or at a record written after it: completing an
        older write never moves the pointer back)."""
        now = getattr(task, self.pointer)
        if isinstance(now, list):
            return rel in now
        return now is not None and (now == rel or second(now) > second(rel))

    def point(self, task: Task, rel: str, meta: dict[str, Any], undo: str | None = None) -> None:
        """Move the task's pointer to `rel` and save the task record (`undo`: see `taskfile.save`)."""
        at = str(meta["timestamp"])
        now = getattr(task, self.pointer)
        if isinstance(now, list):
            kept = [p for p in now if p not in self.replaces and p != rel]
            setattr(task, self.pointer, (kept + [rel])[-MAX_RUN_POINTERS:])
            task.updated_at = clock.now_iso()  # when CMD ended
        else:
            setattr(task, self.pointer, rel)
            setattr(task, f"{self.pointer}_at", at)
            task.updated_at = at
        if self.status is not None:
            task.status = self.status
        for claim in task.claims:  # as `claims.end`, for the one claim the move ends
            if claim["id"] == self.ends_claim and claim.get("ended_at") is None:
                claim["ended_at"], claim["ended_by"] = at, "handed off"
        taskfile.save(self.paths, task, undo)

    def index(self, task: Task, name: str, *, fresh: bool) -> None:
        """Derived bookkeeping after the pointer moved (best effort); `fresh` when the record was linked
        now, so that no index can list it already."""
        index = self.paths.checkpoint_index(task.id)
        entry = name if self.indexed else listing.entry_of(f"{self.subdir}/{name}")  # a handoff's place too
        if entry and (fresh or not listing.has_name(index, entry)):
            listing.add_name(index, entry)

    def event_fields(self, rel: str, digest: str, meta: dict[str, Any], body: str) -> dict[str, Any]:
        """The ledger event's fields, from the record itself (so that a completion logs what the first
        attempt would have)."""
        out: dict[str, Any] = {"path": rel, "sha256": digest}
        if self.lines:
            out["lines"] = body.count("\n") + 1 if body else 0
        for key in self.event_keys:
            value = meta.get(key)
            out[key] = len(value or []) if key == "checkpoints" else value  # a handoff's: how many
        return out

    def may_be_unfinished(self, task: Task, rel: str) -> bool:
        """Cheaply, before anything is read: whether the record the task points at can be one whose write
        did not finish."""
        return self.any_pending or second(rel) == clock.compact_of(task.updated_at)

    def pending_only(self, task: Task) -> bool:
        """True when the task here is held only by a write of this kind that did not fully land (a
        handoff whose release failed): complete that one and write nothing new."""
        return self.status is not None and task.status == self.status


class Stale(Exception):
    """The task record changed between the command's read and the lock, and the record's fields tell of the
    task as it was (`Write.of_the_task`): nothing was written; the command makes the record again."""


class Committed:
    """What a commit did: the record's path and digest, whether it was linked now (`created`), and whether
    an earlier write of it that failed part way was completed now (`completed`)."""

    __slots__ = ("completed", "created", "path", "record", "sha256", "shown", "task")

    def __init__(self, path: str, sha256: str, record: Task, *, created: bool, completed: bool = False,
                 shown: str = "") -> None:
        self.path, self.sha256, self.task, self.record = path, sha256, record.id, record  # the task as left
        self.created, self.completed = created, completed
        self.shown = shown or path  # the path as the command prints it (`paths.display`)


def commit(write: Write) -> Committed:
    """Store one record (see `transact`)."""
    done = transact(write)
    assert done is not None  # only a touch stores nothing
    return done


def transact(write: Write) -> Committed | None:
    """The one transaction; refusals first, then each step of the module docstring. A touch (an empty
    checkpoint) only moves the task's time, for the task still active here, and stores nothing."""
    state = write.paths
    paths.ensure(state)  # the state root, there already while a task is active: the lock lives in it
    with files.locked(state.lock) as lock:
        # The task the command read must still be the one active here (the same reader as the command's),
        # else exit 11 and nothing is written.
        task = taskfile.read_active(state, write.worktree, write.branch, write.where, statuses=write.statuses,
                                    held=write.task)
        if write.of_the_task and task is not write.task:
            raise Stale
        if not write.touch:
            ledger.check_writable(state.ledger)
        paths.ensure(state, "cache", "tasks", *(() if write.touch else (write.subdir,)))  # once, after the refusals
        for path, data in write.caches:
            files.write_derived(path, data)  # a cache: losing it costs a recompute
        if write.touch:
            setattr(task, f"{write.pointer}_at", write.at)
            taskfile.save(state, task)
            return None
        noted = _complete_noted(write, task, lock)
        earlier = _complete_pending(write, task) or noted
        if not write.pending_only(task):
            return _store(write, task, lock, earlier)
        if earlier is None:  # nothing to complete after all: the task is not held here
            raise NoActiveTask(write.where)
        return earlier


def _store(write: Write, task: Task, lock: files.locked, earlier: Committed | None) -> Committed:
    """The new record, under the lock and past the refusals: link it in, then land it (`_land`). A record
    already stored whose event is logged was stored whole before (or completed just now, `earlier`)."""
    state = write.paths
    previous = write.pointer_of(task)
    if previous is not None and names.is_record_pointer(previous, write.subdir):
        files.drop_second_names(state.absolute(previous))  # its temporary name, when removing it failed
    rel, meta, digest = write.rel, write.meta, write.digest
    # Noted until it landed whole: a kill leaves the note, and so does a write that failed after its link
    # (exit 12): the task's next write here completes it, whatever moved the task's time meanwhile.
    lock.note(rel)
    try:
        path, created = files.link_in(state.directory(write.subdir), write.name, write.data)
        if not created:
            files.holds(path, write.data)  # "already stored" only of its very bytes
        if not created and ledger.logged(state.ledger, rel, meta["timestamp"]):  # completed now, or long ago
            done = earlier is not None and earlier.path == path
            lock.unnote(rel)
            return Committed(path, digest, task, created=False, completed=done, shown=write.shown(path))
        _land(write, task, rel, digest, meta, write.body, created=created)
    except files.NotReplaced:
        lock.unnote(rel)  # nothing was written: nothing to complete
        raise
    lock.unnote(rel)
    return Committed(path, digest, task, created=created, completed=not created, shown=write.shown(path))


def touch(ws: Site, task: Task, at: str) -> None:
    """An empty checkpoint (and `check --checkpoint`): only the task's `checkpoint_at` moves, under the lock
    and for the task still active here, as for every record."""
    transact(Write(ws, task, at, "", [], kind="checkpoint", what="checkpoint", subdir="checkpoints",
                   event="task.checkpoint", pointer="checkpoint", touch=True))


def rendered(fields: list[tuple[str, Any]], body: str) -> tuple[str, bytes, str]:
    """The record's name, bytes and sha256 (design §6 step 6: the name carries the digest)."""
    meta = dict(fields)
    data = records.render(fields, body)
    digest = records.sha256(data)
    return names.record_name(clock.compact_of(meta["timestamp"]), meta["branch"], meta["head"], digest), data, digest


def _land(write: Write, task: Task, rel: str, digest: str, meta: dict[str, Any], body: str, *, created: bool) -> None:
    """The steps after the link. A failure before the task record changed unlinks a record linked now."""
    if created or not write.points_at(task, rel):
        try:
            # a record linked now goes again when the old task record stays (nothing names it yet)
            write.point(task, rel, meta, undo=write.paths.absolute(rel) if created else None)
        except files.NotReplaced:
            raise
        except EnvironmentProblem as exc:
            # the new task record may be in place all the same (its directory fsync failed after the
            # rename; under the lock nothing else replaces it): then the record it names stays
            raise _incomplete(write, rel, exc, ", but the task record may not point at it yet") from exc
    _finish(write, task, rel, digest, meta, body, fresh=created, missing=", but its ledger event was not written")


def _finish(write: Write, task: Task, rel: str, digest: str, meta: dict[str, Any], body: str, *, fresh: bool,
            missing: str) -> None:
    """The last steps, for a record linked now or one an earlier write left without them: the index, then
    the ledger event (from the record itself, so that a completion logs what the first attempt would have)."""
    write.index(task, rel.split("/", 1)[1], fresh=fresh)
    try:
        _log(write, task, write.event_fields(rel, digest, meta, body))
    except ledger.MaybeAppended as exc:  # the event may be there: never say it is not
        raise _incomplete(write, rel, exc, ", and its ledger event may not be") from exc
    except EnvironmentProblem as exc:
        raise _incomplete(write, rel, exc, missing) from exc


def second(rel: str) -> str:
    """The UTC second a record's path names (`checkpoints/20260903T194500Z--…` -> `20260903T194500Z`)."""
    return rel.rsplit("/", 1)[-1][:listing.SECOND]


def _log(write: Write, task: Task, extra: dict[str, Any]) -> None:
    """The record's ledger event, as every event of this worktree and branch."""
    fields: dict[str, Any] = {"task": task.id, "worktree": write.worktree, "branch": write.branch}
    fields.update(extra)
    ledger.append(write.paths.ledger, write.event, fields, write.at)


def _incomplete(write: Write, rel: str, exc: EnvironmentProblem, missing: str) -> EnvironmentProblem:
    problem = incomplete_as(write.what, write.shown(write.paths.absolute(rel)), exc, missing)
    if write.kind == "run":  # its command ran: the same command again would run it again
        problem.hint = rerun(exc.hint, instead="the task's next `majordomus run` completes what is missing "
                                               "(this one again would run its command again)")
    return problem


def incomplete(ws: Site, what: str, path: str, exc: EnvironmentProblem, missing: str) -> EnvironmentProblem:
    """A write that failed after its record was linked (see `incomplete_as`)."""
    return incomplete_as(what, ws.display(path), exc, missing)


def incomplete_as(what: str, shown: str, exc: EnvironmentProblem, missing: str) -> EnvironmentProblem:
    """A write that failed after its record was linked: what is stored, what is missing, and that the same
    command run again completes it (design §10)."""
    return EnvironmentProblem(f"the {what} {shown} is stored{missing}: {exc.message}", rerun(exc.hint))


def _own(write: Write, task: Task, rel: str, *, whole: bool = False) -> tuple[dict[str, Any], str, str] | None:
    """The stored record at `rel` (its front matter, body and digest) when it is one of this kind, for
    this task, written in this worktree (and, `whole`, its bytes the ones its name was made from); None
    when it is unreadable (doctor's to report) or another's (one brought by sync has its `sync.import`
    event; another worktree's own next write completes it). FileNotFoundError passes through: nothing is
    stored under the name."""
    try:
        data = safeio.read(write.paths.absolute(rel), records.MAX_RECORD_BYTES)
        meta, body = records.split(data)
    except FileNotFoundError:
        raise
    except (OSError, ValueError, UnicodeDecodeError, EnvironmentProblem):
        return None
    if meta.get("task") != task.id or meta.get("kind") != write.kind or meta.get("worktree") != write.worktree:
        return None
    digest = records.sha256(data)
    if whole and not records.intact(os.path.basename(rel), data, digest):
        return None
    return meta, body[:-1] if body.endswith("\n") else body, digest


def _complete_noted(write: Write, task: Task, lock: files.locked) -> Committed | None:
    """A checkpoint of this task, written in this worktree, whose command was killed after linking it (the
    lock file still names it, see `files.locked`): its task pointer, index and event, completed now,
    before anything new is written. Other kinds wait for doctor (a handoff also leaves the slot; a run's
    record replaces its label's). None when nothing is completed."""
    done = None
    for rel in lock.notes():  # records' paths, each `DIRECTORY/<record name>`
        if write.kind != "checkpoint" or not rel.startswith(f"{write.subdir}/"):
            _forget_if_landed(write, lock, rel)
            continue
        try:
            found = _own(write, task, rel, whole=True)
        except FileNotFoundError:  # killed before the link: nothing under the name, nothing to complete
            lock.unnote(rel)
            continue
        if found is None:
            continue
        meta, body, digest = found
        # Its event is the last step: logged, it landed whole (killed before its note went), and nothing is
        # done again — not even the pointer, which a later record of the same second may hold by now.
        if not ledger.logged(write.paths.ledger, rel, str(meta["timestamp"])):
            _land(write, task, rel, digest, meta, body, created=False)
            path = write.paths.absolute(rel)
            done = Committed(path, digest, task, created=False, completed=True, shown=write.shown(path))
        lock.unnote(rel)
    return done


def _forget_if_landed(write: Write, lock: files.locked, rel: str) -> None:
    """A note of another kind (a handoff, a run; doctor's to report): gone once its record is logged or gone."""
    try:
        data = safeio.read(write.paths.absolute(rel), records.MAX_RECORD_BYTES)
        stamp = records.split(data)[0].get("timestamp")
    except FileNotFoundError:
        lock.unnote(rel)
        return
    except (OSError, ValueError, UnicodeDecodeError, EnvironmentProblem):
        return
    if isinstance(stamp, str) and ledger.logged(write.paths.ledger, rel, stamp):
        lock.unnote(rel)


def _complete_pending(write: Write, task: Task) -> Committed | None:
    """The record the task points at, when its write failed after the pointer moved (no ledger event, or
    a handoff still held here): complete it now, before anything new is written. None when none is
    pending."""
    rel = write.pointer_of(task)
    if not rel or not write.may_be_unfinished(task, rel):
        return None
    try:
        found = _own(write, task, rel)
    except FileNotFoundError:
        return None  # gone: doctor's to report, not ours to log
    if found is None:
        return None
    meta, body, digest = found
    if not ledger.logged(write.paths.ledger, rel, str(meta["timestamp"])):
        _finish(write, task, rel, digest, meta, body, fresh=False, missing=", but its ledger event is still missing")
    elif not write.pending_only(task):
        return None
    path = write.paths.absolute(rel)
    return Committed(path, digest, task, created=False, completed=True, shown=write.shown(path))
