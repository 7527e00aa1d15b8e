"""What happens to a task over its life (design §5): start, resume, done, handoff, release.

Each change takes the state lock, checks again under it, moves the task record and the active index
together, and appends its ledger event.
"""

from __future__ import annotations

import os

from majordomus import claims, clock, continuity, secretscan, tasks
from majordomus.errors import MajordomusError, NoActiveTask, NotFound, Refused, where_words
from majordomus.lite import active as active_index
from majordomus.lite import names, textrules
from majordomus.store import files, ledger, listing
from majordomus.workspace import Workspace

TYPE_CHECKING = False  # on the session-start path: typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any



def _paused_for(keep: str) -> str:
    return f"paused: task `{keep}` became active here"


def _previous_here(ws: Workspace, index: dict[str, str], keep: str, at: str) -> tasks.Task | None:
    """The task that a change making `keep` active here (at `at`) pauses, while that pause is unfinished:
    the index's task here while it is still active, or one the change already paused (at `at`, here)
    whose `task.pause` event did not land. When the index already names `keep` (only the events failed),
    the paused one is found among the task records."""
    current = index.get(active_index.slot(ws.worktree, ws.branch))
    if current is None:
        return None
    here = (ws.worktree, ws.branch)
    if current != keep:
        task = tasks.load(ws, current) if tasks.exists(ws, current) else None
        # Active, and here by its own record too: a task taken over elsewhere (by a resume whose index write
        # did not land here) is not this worktree's to pause.
        if task is not None and ((task.status == "active" and (task.worktree, task.branch) == here)
                                 or _unfinished_pause(ws, task, at, here)):
            return task
        return None
    # A retry only (a fresh change never finds its own task in the index): the paused one is unnamed now.
    for task_id in _task_ids(ws):
        if task_id == keep:
            continue
        try:
            task = tasks.load(ws, task_id)
        except MajordomusError:
            continue  # doctor reports it; it is not the one this change paused
        if _unfinished_pause(ws, task, at, here):
            return task
    return None


def _task_ids(ws: Workspace) -> list[str]:
    try:
        return sorted(n[: -len(".yaml")] for n in os.listdir(ws.paths.tasks) if n.endswith(".yaml"))
    except OSError:
        return []


def _unfinished_pause(ws: Workspace, task: tasks.Task, at: str, here: tuple[str, str | None]) -> bool:
    return (task.status == "paused" and task.updated_at == at and (task.worktree, task.branch) == here
            and not _pause_logged(ws, task, at))


def _pause_logged(ws: Workspace, task: tasks.Task, at: str) -> bool:
    last = ledger.last_event(ws.paths.ledger, task.id)
    return last is not None and last.get("event") == "task.pause" and str(last.get("at", "")) >= at


def _pause_in_record(ws: Workspace, task: tasks.Task, keep: str, at: str) -> None:
    """Pause `task` in its record (a no-op when a change that failed part way did so already)."""
    if task.status == "active":
        task.status = "paused"
        task.updated_at = at
        end_mine_in_record(ws, task, at, _paused_for(keep))
        tasks.save(ws, task)


def _pause_event(ws: Workspace, task: tasks.Task, keep: str) -> tuple[str, dict[str, Any]]:
    return ("task.pause", {"task": task.id, "worktree": ws.worktree, "branch": ws.branch,
                           "reason": f"task `{keep}` became active here"})


# Claims (design §18): who holds a task; see `majordomus.claims`.

def end_mine_in_record(ws: Workspace, task: tasks.Task, at: str, why: str) -> None:
    """End this machine's live claim on `task` in its record (saved by the caller); this machine's claim
    file forgets it after the event (`forget_mine`), so that a retry still finds what is unfinished."""
    held = claims.mine(ws).get(task.id)
    if held is not None:
        claims.end(task.claims, {held["id"]}, at, why)


def forget_mine(ws: Workspace, task: tasks.Task, at: str, why: str) -> None:
    held = claims.mine(ws).get(task.id)
    if held is not None:
        ended = next((c for c in task.claims if c["id"] == held["id"]), dict(held, ended_at=at, ended_by=why))
        claims.remember(ws, task.id, None, ended=ended)


def unlogged(ws: Workspace, task: tasks.Task, event: str | None = None) -> bool:
    """Whether the task record's last change has no ledger event: a change here that failed part way
    (design §10), which the same command run again completes. Every change stamps `updated_at` and its
    event with the same time. With `event` (the change's own event, `task.release`), only that one counts:
    another event of the task in the same second (a checkpoint just before) is not the change's."""
    if event is not None:
        own = ledger.last_event(ws.paths.ledger, task.id, events=(event,))
        if own is not None and str(own.get("at", "")) >= task.updated_at:
            return False
        anything = ledger.last_event(ws.paths.ledger, task.id)  # none at all: a ledger rotated by hand
        return anything is not None
    last = ledger.last_event(ws.paths.ledger, task.id)  # none at all: a ledger rotated by hand cannot tell
    return last is not None and str(last.get("at", "")) < task.updated_at


def slot_here(ws: Workspace) -> tasks.Task:
    """The task the index names for this worktree and branch, whatever its status (a change that failed
    after the task record moved leaves it there), or exit 11."""
    task_id = tasks.active_id(ws)
    if task_id is None:
        raise NoActiveTask(ws.where())
    return tasks.load(ws, task_id)


def event(ws: Workspace, task_id: str, at: str, *items: tuple[str, dict[str, Any]]) -> None:
    """The events of one change in one append: all of them land, or none."""
    base = {"task": task_id, "worktree": ws.worktree, "branch": ws.branch}
    ledger.append_many(ws.paths.ledger, [(name, dict(base, **extra)) for name, extra in items], at)

def _end_mine(ws: Workspace, task: tasks.Task, at: str, why: str) -> str | None:
    """End this machine's live claim on `task` (in the record, saved by the caller) and forget it here."""
    held = claims.mine(ws).get(task.id)
    if held is None:
        return None
    claims.end(task.claims, {held["id"]}, at, why)
    ended = next((c for c in task.claims if c["id"] == held["id"]), dict(held, ended_at=at, ended_by=why))
    claims.remember(ws, task.id, None, ended=ended)
    return str(held["id"])


def _claim(ws: Workspace, task: tasks.Task, at: str, owner: str | None = None) -> dict[str, Any]:
    """A new claim of this worker here on `task` (in the record, saved by the caller)."""
    claim = claims.new(owner or ws.owner(), ws.worktree, ws.branch, at)
    task.claims = claims.prune(task.claims + [claim])
    claims.remember(ws, task.id, claim)
    return claim


def known(ws: Workspace, task_id: str | None) -> None:
    """Before anything creates the state: a task that does not exist (or no task here) is refused with
    nothing written. The change reads it again under the lock."""
    if task_id is None:
        slot_here(ws)
    else:
        tasks.load(ws, tasks.validate_id(task_id))


def start(
    ws: Workspace,
    task_id: str,
    *,
    title: str | None = None,
    objective: str | None = None,
    profile: str | None = None,
    owner: str | None = None,
    from_task: str | None = None,
) -> tasks.Task:
    tasks.validate_id(task_id)
    if title is not None:  # one line (design §2a "fields"); an objective collapses to one, like a pin
        textrules.checked("title", title, hint="a title is one short line; put the detail in --objective")
    problem = textrules.not_utf8(objective) if objective is not None else None
    if problem is not None:  # what a collapse to one line would not make storable
        raise Refused(f"the objective {problem}; nothing was written", "give the objective as UTF-8 text")
    objective = textrules.collapse(objective) if objective is not None else None
    if profile is not None and not names.is_profile_name(profile):  # an identifier, never a path (design §2a)
        raise Refused(f"--profile `{textrules.escape(profile[:80])}` is not a valid profile name; nothing was written",
                      "use 1–64 characters of A-Z, a-z, 0-9, `.`, `_`, `-`, starting with a letter or digit: "
                      "the name of a file .ai/profiles/NAME.md")
    owner = ws.owner(owner)  # refused before anything is created when its source breaks the grammar
    claims.host()  # the claim's host too
    for name, text in (("title", title), ("objective", objective)):
        what = secretscan.looks_secret(text) if text else None
        if what is not None:
            raise Refused(f"the {name} looks like it carries a secret ({what}); nothing was written",
                          "never put secrets in a task: its title and objective reach the ledger, the agent's "
                          "context and the remote; say where the secret lives instead")
    if from_task is not None:
        tasks.validate_id(from_task)
        if not tasks.exists(ws, from_task):  # refused before anything creates the state
            raise NotFound(f"no task `{from_task}` to seed from (--from)", "list tasks with `majordomus task list`")
    ws.ensure_state("tasks")
    at = clock.now_iso()
    with files.locked(ws.paths.lock):
        if tasks.exists(ws, task_id):
            existing = tasks.load(ws, task_id)
            if _unfinished_start(ws, existing):
                return _finish_start(ws, existing, at)
            raise Refused(
                f"task `{task_id}` already exists; nothing was written",
                f"resume it with `majordomus task resume {task_id}`, or pick another id",
            )
        if from_task is not None and not tasks.exists(ws, from_task):
            raise NotFound(f"no task `{from_task}` to seed from (--from)", "list tasks with `majordomus task list`")
        task = tasks.Task(
            id=task_id,
            title=title or task_id,
            objective=objective or tasks.INTERACTIVE_OBJECTIVE,
            profile=profile or ws.config.profile,
            owner=ws.owner(owner),
            status="active",
            worktree=ws.worktree,
            branch=ws.branch,
            started_at=at,
            updated_at=at,
        )
        index = tasks.read_index(ws)  # refused whole when corrupt, before anything is written
        previous = _previous_here(ws, index, task_id, at)
        continuity.seed(ws, task, from_task)
        listing.start_index(ws, task_id)
        _claim(ws, task, at, task.owner)  # the starter holds it: task.start (owner, worktree, branch) is its event
        # The new task's record first, the events last: a failure at any step between leaves what the same
        # command run again finds (`_unfinished_start`) and completes, each event written once (design §10).
        tasks.save(ws, task)
        _make_active_here(ws, index, task_id, previous, at, write=True)
        _log(ws, at, previous, task_id, ("task.start", {"title": task.title, "profile": task.profile,
                                                        "owner": task.owner,
                                                        **({"from": from_task} if from_task else {})}))
    return task


def _unfinished_start(ws: Workspace, task: tasks.Task) -> bool:
    """A start here whose record landed and whose index or event did not: no claim of its start is another
    place's (one started elsewhere and resumed here in its second has the same two times, and that claim)."""
    if not (task.status == "active" and (task.worktree, task.branch) == (ws.worktree, ws.branch)
            and task.started_at == task.updated_at):
        return False
    here = (claims.host(), ws.worktree)
    if any(c.get("at") == task.started_at and (c.get("host"), c.get("worktree")) != here for c in task.claims):
        return False
    return ledger.last_event(ws.paths.ledger, task.id, events=("task.start",)) is None


def _finish_start(ws: Workspace, task: tasks.Task, at: str) -> tasks.Task:
    index = tasks.read_index(ws)
    previous = _previous_here(ws, index, task.id, task.started_at)
    _make_active_here(ws, index, task.id, previous, task.started_at)
    _log(ws, task.started_at, previous, task.id, ("task.start", {"title": task.title, "profile": task.profile,
                                                                 "owner": task.owner, "completed": True}))
    return task


def _make_active_here(ws: Workspace, index: dict[str, str], keep: str, previous: tasks.Task | None, at: str,
                      *, write: bool = False) -> None:
    """After `keep`'s record: pause the task it replaces here (its record), point the index here at
    `keep`, and let this machine's claim file forget the paused one. Each step is a no-op when a change
    that failed part way did it already; the events follow (`_log`)."""
    if previous is not None:
        _pause_in_record(ws, previous, keep, at)
    slot = active_index.slot(ws.worktree, ws.branch)
    # Its record says it is active here, so nowhere else: a takeover that failed part way (its record landed,
    # the index did not) left the place it was taken from in the index, which its retry removes.
    elsewhere = [other for other, task_id in index.items() if task_id == keep and other != slot]
    for other in elsewhere:
        del index[other]
    if write or elsewhere or index.get(slot) != keep:
        index[slot] = keep
        tasks.write_index(ws, index)
    if previous is not None:
        forget_mine(ws, previous, at, _paused_for(keep))


def _log(ws: Workspace, at: str, previous: tasks.Task | None, task_id: str,
         *items: tuple[str, dict[str, Any]]) -> None:
    """The events of one change, the pause of the task it replaced first, in one append: all or none."""
    base = {"task": task_id, "worktree": ws.worktree, "branch": ws.branch}
    events = [_pause_event(ws, previous, task_id)] if previous is not None else []
    events += [(name, dict(base, **extra)) for name, extra in items]
    ledger.append_many(ws.paths.ledger, events, at)


def held_where(task: tasks.Task) -> str:
    return where_words(task.worktree, task.branch)


def _branch_missing(ws: Workspace, task: tasks.Task) -> bool:
    """The task is active in this worktree on a branch that no longer exists (`git branch -m`, `-D`)."""
    from majordomus.git import status

    return task.worktree == ws.worktree and task.branch is not None and not status.branch_exists(ws.place, task.branch)


def resume(ws: Workspace, task_id: str, *, force: bool = False, reopen: bool = False) -> tasks.Task:
    """Make a paused or handed-off task active here. A done task needs `reopen`; a task active in another
    worktree or branch needs `force`, unless that worktree is gone (orphaned): both are recorded."""
    known(ws, task_id)
    claims.host()  # refused before anything is created when it breaks the field grammar
    ws.ensure_state("tasks")
    at = clock.now_iso()
    with files.locked(ws.paths.lock):
        task = tasks.load(ws, task_id)
        here = (ws.worktree, ws.branch)
        index = tasks.read_index(ws)
        if _unfinished_resume(ws, task):
            return _finish_resume(ws, task, index, at)
        held = tasks.where_active(ws, task, index)
        if held == "here":
            return task
        stranded = held == "elsewhere" and _branch_missing(ws, task)
        if stranded:
            held = "orphaned"  # its branch was renamed or deleted: nobody holds it there any more (design §5)
        if task.status == "done" and not reopen:
            raise Refused(f"task `{task_id}` is done; nothing was written",
                          f"reopen it with `majordomus task resume {task_id} --reopen`, or start a new task")
        if held in ("elsewhere", "remote") and not force:
            where = held_where(task)
            if held == "remote":
                where += " on another machine (its record came through `majordomus sync`)"
            raise Refused(
                f"task `{task_id}` is active in {where}; nothing was written",
                f"hand it off there first, or take it over with `majordomus task resume {task_id} --force`",
            )
        previous = {"worktree": task.worktree, "branch": task.branch, "status": task.status}
        if held in ("elsewhere", "orphaned"):
            index.pop(active_index.slot(task.worktree or "", task.branch), None)
        paused = _previous_here(ws, index, task_id, at)
        task.status = "active"
        task.worktree, task.branch = here
        task.updated_at = at
        replaced = _end_mine(ws, task, at, f"resumed in {ws.where()}")
        taken = claims.end(task.claims, {c["id"] for c in claims.live(task.claims)}, at,
                           f"taken over by {ws.owner()} in {ws.where()}") if held is not None else []
        claim = _claim(ws, task, at)
        tasks.save(ws, task)  # first, the events last: a retry finds it unlogged here (`_finish_resume`)
        _make_active_here(ws, index, task_id, paused, at, write=True)
        events: list[tuple[str, dict[str, Any]]] = []
        if previous["status"] == "done":
            events.append(("task.reopen", {"by": ws.owner()}))
        extra: dict[str, Any] = {"previous": previous, "by": ws.owner()}
        if held is not None:
            extra["takeover"] = True
            if held == "orphaned":
                extra["branch_missing" if stranded else "orphaned"] = True
        # The claim first: `task.resume` stays the last event of a resume, as before claims existed.
        events.append(("task.claim", {"claim": claim, "ended": [i for i in [replaced, *taken] if i is not None]}))
        events.append(("task.resume", extra))
        _log(ws, at, paused, task_id, *events)
    return task


def _unfinished_resume(ws: Workspace, task: tasks.Task) -> bool:
    """A resume here whose task record landed and whose index or events did not: the record is active
    here, and its last change has no event — by time, or (within the same second) because the claim this
    machine took at that change is named by no `task.claim` event."""
    if task.status != "active" or (task.worktree, task.branch) != (ws.worktree, ws.branch):
        return False
    return unlogged(ws, task) or _claim_unlogged(ws, task)


def _claim_unlogged(ws: Workspace, task: tasks.Task) -> bool:
    """The claim this machine took at the task's last change is named by no `task.claim` event (and is
    not the start's own): a resume whose events did not land, told without comparing clocks."""
    ours = claims.mine(ws).get(task.id)
    if ours is None or ours.get("at") != task.updated_at or ours["id"] not in {c["id"] for c in claims.live(task.claims)}:
        return False
    earlier_here = any(c["id"] != ours["id"] and c.get("ended_at") is not None and c.get("host") == ours.get("host")
                       and c.get("worktree") == ours.get("worktree") for c in task.claims)
    if ours["at"] == task.started_at and not earlier_here:
        return False  # the start's own claim, which its `task.start` event stands for
    last = ledger.last_event(ws.paths.ledger, task.id, events=("task.claim",))
    return last is None or (last.get("claim") or {}).get("id") != ours["id"]


def unfinished(ws: Workspace, task: tasks.Task) -> str | None:
    """`task start` or `task resume` when that change of `task` (active here) landed without its events,
    which the same command run again writes; None otherwise (for doctor)."""
    if _unfinished_start(ws, task):
        return "task start"
    if task.status == "active" and (task.worktree, task.branch) == (ws.worktree, ws.branch) \
            and _claim_unlogged(ws, task):
        return "task resume"
    return None


def _finish_resume(ws: Workspace, task: tasks.Task, index: dict[str, str], at: str) -> tasks.Task:
    """A resume here whose task record landed and whose index or events did not: complete them."""
    paused = _previous_here(ws, index, task.id, task.updated_at)
    _make_active_here(ws, index, task.id, paused, task.updated_at)
    claim = claims.mine(ws).get(task.id)
    # The claims it ended say what the record no longer does: that it was taken from another place.
    taken = [c["id"] for c in task.claims if c.get("ended_at") == task.updated_at
             and (c.get("host"), c.get("worktree"), c.get("branch")) != (claims.host(), ws.worktree, ws.branch)]
    extra: dict[str, Any] = {"by": ws.owner(), "completed": True, **({"takeover": True} if taken else {})}
    _log(ws, task.updated_at, paused, task.id, ("task.claim", {"claim": claim, "ended": taken, "completed": True}),
         ("task.resume", extra))
    return task
