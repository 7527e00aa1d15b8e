"""How a task's stay in a worktree ends (design §5, §10): done, release, and the release after a handoff.
Each takes the state lock, checks again under it, and leaves the active index last, so that a failure part
way leaves what the same command run again completes."""

from __future__ import annotations

from majordomus import claims, clock, lifecycle, tasks
from majordomus.errors import EnvironmentProblem, MajordomusError, NoActiveTask, Refused
from majordomus.lite import active as active_index
from majordomus.store import files
from majordomus.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def done(ws: Workspace, task_id: str | None, *, force: bool = False) -> tasks.Task:
    """Finish a task (terminal). One active in another worktree or branch needs `force`, like `resume`."""
    lifecycle.known(ws, task_id)
    ws.ensure_state("tasks")
    at = clock.now_iso()
    with files.locked(ws.paths.lock):
        task = tasks.load(ws, tasks.validate_id(task_id)) if task_id is not None else lifecycle.slot_here(ws)
        if task.status == "done":
            _finish(ws, task, "task.done", {"completed": True}, "task done")
            return task
        if task_id is None and task.status != "active":
            raise NoActiveTask(ws.where())
        held = tasks.where_active(ws, task)
        if held in ("elsewhere", "remote") and not force:
            raise Refused(f"task `{task.id}` is active in {lifecycle.held_where(task)}; nothing was written",
                          f"finish it there, or here with `majordomus task done {task.id} --force`")
        task.status = "done"
        task.updated_at = at
        lifecycle.end_mine_in_record(ws, task, at, "task done")
        claims.end(task.claims, {c["id"] for c in claims.live(task.claims)}, at, "task done")
        tasks.save(ws, task)
        # Then the event, then the slot: a retry of a `done` that failed after its task record finds it here.
        lifecycle.event(ws, task.id, at, ("task.done", {"takeover": True} if held in ("elsewhere", "remote") else {}))
        lifecycle.forget_mine(ws, task, at, "task done")
        _leave_slot_last(ws, task, f"task `{task.id}` is done")
    return task


def _finish(ws: Workspace, task: tasks.Task, event: str, extra: dict[str, Any], why: str) -> None:
    """Complete a change whose task record landed: its event when missing, then this machine's claim file
    and the slot here (each a no-op when it is done already)."""
    if lifecycle.unlogged(ws, task, event):
        lifecycle.event(ws, task.id, task.updated_at, (event, extra))
    lifecycle.forget_mine(ws, task, task.updated_at, why)
    _leave_slot(ws, task)


def _leave_slot(ws: Workspace, task: tasks.Task) -> None:
    """The task is no longer the active one of the (worktree, branch) it was active in."""
    index = tasks.read_index(ws)
    slot = active_index.slot(task.worktree or "", task.branch)
    if index.get(slot) == task.id:
        index.pop(slot)
        tasks.write_index(ws, index)


class Landed(EnvironmentProblem):
    """A change whose every step landed, whose last step's durability the disk could not confirm: exit 12
    with a message that says it landed (the same command run again would find nothing to do)."""


def _leave_slot_last(ws: Workspace, task: tasks.Task, what: str) -> None:
    """The last step of a change: leave the slot. When it fails after the index was replaced (the state
    directory's fsync), everything has landed and the same command run again would find nothing to do:
    the message says so instead of asking for a rerun (design §2b)."""
    try:
        _leave_slot(ws, task)
    except EnvironmentProblem as exc:
        try:
            left = tasks.read_index(ws).get(active_index.slot(task.worktree or "", task.branch)) != task.id
        except MajordomusError:
            left = False
        if not left:
            raise  # the slot is still there: the same command run again leaves it
        raise Landed(
            f"{what}: every step of it landed, but then {exc.message}",
            "the change is complete and needs no rerun; the disk reported an error while making it durable: "
            "check it (`dmesg`) and `majordomus doctor`") from exc


def release(ws: Workspace, task_id: str) -> bool:
    """After sync imported a version of `task_id` from another machine: put this machine's own claims
    back into it (see `claims.restore_mine`), then forget that the task is active here unless
    the imported version still says it is held here, by our live claim. The caller holds the lock."""
    held_here = tasks.restore_claims(ws, task_id)
    index = tasks.read_index(ws)
    kept = {slot: held for slot, held in index.items() if held != task_id}
    if len(kept) == len(index) or held_here:
        return False
    tasks.write_index(ws, kept)
    return True


def release_claim(ws: Workspace, task_id: str | None) -> tuple[tasks.Task, bool]:
    """`task release`: give up this machine's claim on a task (default: the active one here). If the task
    is active here it becomes paused; if it is held elsewhere (a double claim), only our claim ends.
    Returns the task and whether it was paused."""
    lifecycle.known(ws, task_id)
    ws.ensure_state("tasks")
    at = clock.now_iso()
    with files.locked(ws.paths.lock):
        task = tasks.load(ws, tasks.validate_id(task_id)) if task_id is not None else lifecycle.slot_here(ws)
        if task.status == "paused" and tasks.active_id(ws) == task.id:  # a release that failed part way
            _finish(ws, task, "task.release", {"status": task.status, "by": ws.owner(), "completed": True},
                    "released")
            return task, True
        if task_id is None and task.status != "active":
            raise NoActiveTask(ws.where())
        held = tasks.where_active(ws, task)
        ours = claims.mine(ws).get(task.id)
        live = ours is not None and any(c["id"] == ours["id"] for c in claims.live(task.claims))
        if held != "here" and not live:
            raise Refused(f"task `{task.id}` is not held here: this machine has no live claim on it and it is "
                          f"not active in {ws.where()}; nothing was written",
                          "release it where it is held, or take it over with "
                          f"`majordomus task resume {task.id} --force`")
        ended = ours["id"] if live and ours is not None else None
        if live:
            lifecycle.end_mine_in_record(ws, task, at, "released")
        paused = held == "here"
        if paused:
            task.status = "paused"
        task.updated_at = at
        tasks.save(ws, task)
        lifecycle.event(ws, task.id, at, ("task.release", {"claim": ended, "status": task.status, "by": ws.owner()}))
        lifecycle.forget_mine(ws, task, at, "released")
        if paused:
            _leave_slot_last(ws, task, f"task `{task.id}` is released (paused)")
    return task, paused


def hand_off(ws: Workspace, task: tasks.Task, handoff_rel: str, at: str) -> None:
    """Record a handoff in the task record: handed-off, pointing at it, this machine's claim ended in it.
    The slot here and this machine's claim file follow after the event (`release_after_handoff`)."""
    held = claims.mine(ws).get(task.id)
    if held is not None:
        claims.end(task.claims, {held["id"]}, at, "handed off")
    task.status = "handed-off"
    task.handoff = handoff_rel
    task.handoff_at = at
    task.updated_at = at
    tasks.save(ws, task)


def release_after_handoff(ws: Workspace, task: tasks.Task) -> None:
    """After the handoff's event: forget this machine's claim, then leave the slot, which is what a retry
    looks for to finish a handoff that did not (design §10)."""
    held = claims.mine(ws).get(task.id)
    if held is not None:
        ended = next((c for c in task.claims if c["id"] == held["id"]),
                     dict(held, ended_at=task.handoff_at, ended_by="handed off"))
        claims.remember(ws, task.id, None, ended=ended)
    _leave_slot_last(ws, task, f"task `{task.id}` is handed off")
