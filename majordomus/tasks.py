"""Task records and the one active task per (worktree, branch) (SPEC §5)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, fields
from typing import Any, Optional

from majordomus import clock, ledger, records, store
from majordomus.errors import EnvironmentProblem, MajordomusError, NoActiveTask, NotFound, Refused, UsageError
from majordomus.workspace import Workspace

TASK_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
STATUSES = ("active", "paused", "handed-off", "done")
# A task started without an objective carries this sentinel; the continuity render skips it.
INTERACTIVE_OBJECTIVE = "(interactive: the objective comes from the principal)"


@dataclass
class Task:
    id: str
    title: str
    objective: str
    profile: str
    owner: str
    status: str
    worktree: Optional[str]
    branch: Optional[str]
    started_at: str
    updated_at: str
    checkpoint_at: Optional[str] = None
    handoff_at: Optional[str] = None
    checkpoint: Optional[str] = None  # latest checkpoint, relative to the state directory
    handoff: Optional[str] = None  # latest handoff, relative to the state directory

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Task":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def validate_id(task_id: str) -> str:
    if not TASK_ID.match(task_id):
        raise UsageError(
            f"`{task_id}` is not a valid task id",
            "use 1–64 characters of a-z, 0-9, `.`, `_`, `-`, starting with a letter or digit",
        )
    return task_id


def load(ws: Workspace, task_id: str) -> Task:
    path = ws.paths.task_file(task_id)
    try:
        data = store.read_nofollow(path)
    except FileNotFoundError:
        raise NotFound(f"no task `{task_id}`", "list tasks with `majordomus task list`") from None
    except OSError as exc:
        raise MajordomusError(f"cannot read {path}: {exc.strerror}", "check the state directory") from exc
    try:
        return Task.from_dict(records.parse_yaml(data.decode("utf-8")))
    except (ValueError, TypeError, UnicodeDecodeError) as exc:
        raise EnvironmentProblem(
            f"the task record {path} is unreadable: {exc}", "run `majordomus doctor` to see what is wrong"
        ) from exc


def exists(ws: Workspace, task_id: str) -> bool:
    return os.path.lexists(ws.paths.task_file(task_id))


def save(ws: Workspace, task: Task) -> None:
    store.replace(ws.paths.task_file(task.id), records.emit_yaml(task.to_dict().items()).encode("utf-8"))


def all_tasks(ws: Workspace) -> list[Task]:
    try:
        names = sorted(os.listdir(ws.paths.tasks))
    except FileNotFoundError:
        return []
    return [load(ws, name[: -len(".yaml")]) for name in names if name.endswith(".yaml")]


# The active index maps (worktree, branch) to a task id, so that finding the task here is one small read.
def _slot(worktree: str, branch: Optional[str]) -> str:
    return json.dumps([worktree, branch])


def read_index(ws: Workspace) -> dict[str, str]:
    try:
        with open(ws.paths.active_index, "rb") as fh:
            data = json.load(fh)
    except (FileNotFoundError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_index(ws: Workspace, index: dict[str, str]) -> None:
    store.replace(ws.paths.active_index, json.dumps(index, indent=1, sort_keys=True).encode("utf-8") + b"\n")


def active_id(ws: Workspace) -> Optional[str]:
    return read_index(ws).get(_slot(ws.worktree, ws.branch))


def active(ws: Workspace) -> Task:
    """The active task in this worktree and branch, or exit 11."""
    task_id = active_id(ws)
    if task_id is None:
        raise NoActiveTask(ws.where())
    task = load(ws, task_id)
    if task.status != "active":
        raise NoActiveTask(ws.where())
    return task


def event(ws: Workspace, name: str, task: Optional[str], at: str, **extra: Any) -> dict[str, Any]:
    fields_ = {"task": task, "worktree": ws.worktree, "branch": ws.branch}
    fields_.update(extra)
    return ledger.append(ws.paths.ledger, name, fields_, at)


def _pause_current_here(ws: Workspace, index: dict[str, str], keep: str, at: str) -> None:
    current = index.get(_slot(ws.worktree, ws.branch))
    if current is None or current == keep or not exists(ws, current):
        return
    task = load(ws, current)
    if task.status == "active":
        task.status = "paused"
        task.updated_at = at
        save(ws, task)
        event(ws, "task.pause", task.id, at, reason=f"task `{keep}` became active here")


def start(
    ws: Workspace,
    task_id: str,
    *,
    title: Optional[str] = None,
    objective: Optional[str] = None,
    profile: Optional[str] = None,
    owner: Optional[str] = None,
    from_task: Optional[str] = None,
) -> Task:
    validate_id(task_id)
    if from_task is not None:
        validate_id(from_task)
    ws.ensure_state("tasks")
    at = clock.iso(clock.now())
    with store.locked(ws.paths.lock):
        if exists(ws, task_id):
            raise Refused(
                f"task `{task_id}` already exists; nothing was written",
                f"resume it with `majordomus task resume {task_id}`, or pick another id",
            )
        if from_task is not None and not exists(ws, from_task):
            raise NotFound(f"no task `{from_task}` to seed from (--from)", "list tasks with `majordomus task list`")
        task = Task(
            id=task_id,
            title=title or task_id,
            objective=objective or INTERACTIVE_OBJECTIVE,
            profile=profile or ws.config.profile,
            owner=ws.owner(owner),
            status="active",
            worktree=ws.worktree,
            branch=ws.branch,
            started_at=at,
            updated_at=at,
        )
        on_start(ws, task, from_task)
        index = read_index(ws)
        _pause_current_here(ws, index, task_id, at)
        save(ws, task)
        index[_slot(ws.worktree, ws.branch)] = task_id
        _write_index(ws, index)
        event(ws, "task.start", task_id, at, title=task.title, profile=task.profile, owner=task.owner,
              **({"from": from_task} if from_task else {}))
    return task


def on_start(ws: Workspace, task: Task, from_task: Optional[str]) -> None:
    """Seed the task's continuity (objective, and pins of `from_task`) when that module is present."""
    try:
        from majordomus import continuity
    except ImportError:
        return
    continuity.seed(ws, task, from_task)


def resume(ws: Workspace, task_id: str, *, force: bool = False) -> Task:
    validate_id(task_id)
    ws.ensure_state("tasks")
    at = clock.iso(clock.now())
    with store.locked(ws.paths.lock):
        task = load(ws, task_id)
        here = (ws.worktree, ws.branch)
        index = read_index(ws)
        # Only this machine's index makes a task active here: a record brought by `majordomus sync` can name
        # a worktree path that is also a path here (CI runners and sandboxes share paths).
        elsewhere = task.status == "active" and index.get(_slot(*here)) != task_id
        if task.status == "active" and not elsewhere:
            return task
        if elsewhere and not force:
            where = f"worktree {task.worktree} on " + (f"branch {task.branch}" if task.branch else "a detached HEAD")
            if task_id not in index.values():
                where += " on another machine (its record came through `majordomus sync`)"
            raise Refused(
                f"task `{task_id}` is active in {where}; nothing was written",
                f"hand it off there first, or take it over with `majordomus task resume {task_id} --force`",
            )
        previous = {"worktree": task.worktree, "branch": task.branch, "status": task.status}
        if elsewhere and index.get(_slot(task.worktree or "", task.branch)) == task_id:
            index.pop(_slot(task.worktree or "", task.branch))
        _pause_current_here(ws, index, task_id, at)
        task.status = "active"
        task.worktree, task.branch = here
        task.updated_at = at
        save(ws, task)
        index[_slot(*here)] = task_id
        _write_index(ws, index)
        extra: dict[str, Any] = {"previous": previous, "by": ws.owner()}
        if elsewhere:
            extra["takeover"] = True
        event(ws, "task.resume", task_id, at, **extra)
    return task


def done(ws: Workspace, task_id: Optional[str]) -> Task:
    ws.ensure_state("tasks")
    at = clock.iso(clock.now())
    with store.locked(ws.paths.lock):
        task = load(ws, validate_id(task_id)) if task_id else active(ws)
        if task.status == "done":
            return task
        _leave_slot(ws, task)
        task.status = "done"
        task.updated_at = at
        save(ws, task)
        event(ws, "task.done", task.id, at)
    return task


def _leave_slot(ws: Workspace, task: Task) -> None:
    """The task is no longer the active one of the (worktree, branch) it was active in."""
    index = read_index(ws)
    slot = _slot(task.worktree or "", task.branch)
    if index.get(slot) == task.id:
        index.pop(slot)
        _write_index(ws, index)


def release(ws: Workspace, task_id: str) -> bool:
    """Forget that `task_id` is active on this machine (it is held elsewhere now); the caller holds the lock."""
    index = read_index(ws)
    kept = {slot: held for slot, held in index.items() if held != task_id}
    if len(kept) == len(index):
        return False
    _write_index(ws, kept)
    return True


def set_handed_off(ws: Workspace, task: Task, handoff_rel: str, at: str) -> None:
    """Record a handoff on the task: it leaves this slot and waits for `task resume` anywhere."""
    _leave_slot(ws, task)
    task.status = "handed-off"
    task.handoff = handoff_rel
    task.handoff_at = at
    task.updated_at = at
    save(ws, task)
