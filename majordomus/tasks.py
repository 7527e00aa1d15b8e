"""The task record (design §5): its fields and types, reading and writing it, the active task here, and
the one staleness rule. What happens to a task over its life (start, resume, done, handoff) is in
`lifecycle`, so that continuity can depend on tasks without the reverse."""

from __future__ import annotations

import json
import os

from majordomus import claims, clock
from majordomus.errors import EnvironmentProblem, NoActiveTask, NotFound, UsageError
from majordomus.lite import active as active_index
from majordomus.lite import names, safeio, textrules
from majordomus.lite.statepaths import TASKS
from majordomus.store import files, paths, records

TYPE_CHECKING = False  # the hot paths read tasks: no typing, no dataclasses at run time
if TYPE_CHECKING:
    from typing import Any

    from majordomus.workspace import Workspace

MAX_BYTES = 256 << 10  # a task record is a few hundred bytes; more was not written by majordomus
STATUSES = ("active", "paused", "handed-off", "done")
# A task started without an objective carries this sentinel; the continuity render skips it.
INTERACTIVE_OBJECTIVE = "(interactive: the objective comes from the principal)"


FIELDS = ("id", "title", "objective", "profile", "owner", "status", "worktree", "branch", "started_at",
          "updated_at", "checkpoint_at", "handoff_at", "checkpoint", "handoff", "claims", "runs")
# `claims` (design §18, see `majordomus.claims`) and `runs`, the latest run record per label
# (design §17, pointers like `checkpoint`) are lists, empty when absent, checked by `_check_lists`.
MAX_RUN_POINTERS = 16


class Task:
    """A task record, its fields in design §5's order; `checkpoint`/`handoff` are the paths (relative to the
    state directory) of its latest records."""

    __slots__ = (*FIELDS, "stamp")

    def __init__(self, id: str, title: str, objective: str, profile: str, owner: str, status: str,
                 worktree: str | None, branch: str | None, started_at: str, updated_at: str,
                 checkpoint_at: str | None = None, handoff_at: str | None = None,
                 checkpoint: str | None = None, handoff: str | None = None,
                 claims: list[dict[str, Any]] | None = None, runs: list[str] | None = None) -> None:
        self.id, self.title, self.objective, self.profile, self.owner = id, title, objective, profile, owner
        self.status, self.worktree, self.branch = status, worktree, branch
        self.started_at, self.updated_at, self.checkpoint_at, self.handoff_at = (started_at, updated_at,
                                                                                 checkpoint_at, handoff_at)
        self.checkpoint, self.handoff = checkpoint, handoff
        self.claims = list(claims or [])
        self.runs = list(runs or [])
        self.stamp: tuple[int, int, int] | None = None  # the version of the record it was read from

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in FIELDS}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Task) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"Task({self.id!r}, status={self.status!r})"

    @classmethod
    def from_dict(cls, data: Any) -> Task:
        """A task from a stored (untrusted) mapping: every field of its type, or ValueError naming it."""
        if not isinstance(data, dict):
            raise ValueError("not a mapping")
        kept = {k: v for k, v in data.items() if k in FIELDS}
        for name in _REQUIRED:
            if not isinstance(kept.get(name), str):
                raise ValueError(f"`{name}` is missing or not a string")
        for name in _OPTIONAL:
            if not isinstance(kept.get(name), (str, type(None))):
                raise ValueError(f"`{name}` is not a string")
        if not names.is_task_id(kept["id"]):
            raise ValueError(f"`id` {kept['id'][:80]!r} is not a valid task id")
        if kept["status"] not in STATUSES:
            raise ValueError(f"`status` {kept['status'][:80]!r} is not one of {', '.join(STATUSES)}")
        for name in ("started_at", "updated_at", "checkpoint_at", "handoff_at"):
            if kept.get(name) is not None and not clock.is_iso(kept[name]):
                raise ValueError(f"`{name}` {kept[name][:80]!r} is not a UTC time like 2026-09-03T19:45:00Z")
        _check_lists(kept)
        return cls(**kept)


def _check_lists(kept: dict[str, Any]) -> None:
    """`claims` and `runs`: absent or null is empty; anything else is checked by type."""
    for name in ("claims", "runs"):
        if kept.get(name) is None:
            kept[name] = []
        elif not isinstance(kept[name], list):
            raise ValueError(f"`{name}` is not a list")
    if len(kept["runs"]) > MAX_RUN_POINTERS or not all(names.is_record_pointer(p, "runs") for p in kept["runs"]):
        raise ValueError(f"`runs` is not a list of at most {MAX_RUN_POINTERS} records in runs/")
    claims.check(kept["claims"])


_REQUIRED = ("id", "title", "objective", "profile", "owner", "status", "started_at", "updated_at")
_OPTIONAL = ("worktree", "branch", "checkpoint_at", "handoff_at", "checkpoint", "handoff")


def validate_id(task_id: str) -> str:
    if not names.is_task_id(task_id):
        raise UsageError(
            f"`{textrules.escape(task_id)}` is not a valid task id",
            "use 1–64 characters of a-z, 0-9, `.`, `_`, `-`, starting with a letter or digit",
        )
    return task_id


def load(ws: Workspace, task_id: str) -> Task:
    path = ws.paths.task_file(validate_id(task_id))
    paths.check_readable(ws.paths, TASKS)  # never read through a link to the state or its tasks/
    stamp = files.stamp(path)  # before the read: a record replaced in between only costs a second read
    try:
        data = safeio.read(path, MAX_BYTES)
    except FileNotFoundError:
        raise NotFound(f"no task `{task_id}`", "list tasks with `majordomus task list`") from None
    try:
        task = Task.from_dict(records.parse_yaml(data.decode("utf-8")))
        if task.id != task_id:
            raise ValueError(f"it names task `{task.id}`")
        task.stamp = stamp
        return task
    except (ValueError, TypeError, UnicodeDecodeError, RecursionError) as exc:
        raise EnvironmentProblem(
            f"the task record {path} is unreadable: {exc}", "run `majordomus doctor` to see what is wrong"
        ) from exc


def exists(ws: Workspace, task_id: str) -> bool:
    return paths.check_readable(ws.paths, TASKS) and os.path.lexists(ws.paths.task_file(task_id))


def save(ws: Workspace, task: Task) -> None:
    files.replace(ws.paths.task_file(task.id), records.emit_yaml(task.to_dict().items()).encode("utf-8"))
    task.stamp = None  # the version it was read from is gone


def all_tasks(ws: Workspace) -> list[Task]:
    if not paths.check_readable(ws.paths, TASKS):  # no state yet; a link on the way to it is refused
        return []
    try:
        names = sorted(os.listdir(ws.paths.tasks))
    except FileNotFoundError:
        return []
    return [load(ws, name[: -len(".yaml")]) for name in names if name.endswith(".yaml")]


def read_index(ws: Workspace) -> dict[str, str]:
    return active_index.read(ws.paths.root)


def write_index(ws: Workspace, index: dict[str, str]) -> None:
    files.replace(ws.paths.active_index, json.dumps(index, indent=1, sort_keys=True).encode("utf-8") + b"\n")


def active_id(ws: Workspace) -> str | None:
    return read_index(ws).get(active_index.slot(ws.worktree, ws.branch))


def where_active(ws: Workspace, task: Task, index: dict[str, str] | None = None) -> str | None:
    """For an active task: `here` (this worktree and branch), `elsewhere` (another worktree or branch of
    this machine), `orphaned` (a worktree of this machine that no longer exists), or `remote` (active on
    another machine: its record came through sync). None when the task is not active.

    Only this machine's index makes a task active here: a record brought by `majordomus sync` can name a
    worktree path that is also a path here (CI runners and sandboxes share paths)."""
    if task.status != "active":
        return None
    index = read_index(ws) if index is None else index
    if index.get(active_index.slot(task.worktree or "", task.branch)) != task.id:
        return "remote"
    if (task.worktree, task.branch) == (ws.worktree, ws.branch):
        return "here"
    if task.worktree is None or not os.path.isdir(task.worktree):
        return "orphaned"
    return "elsewhere"


def active(ws: Workspace) -> Task:
    """The active task in this worktree and branch, or exit 11."""
    task_id = active_id(ws)
    if task_id is None:
        raise NoActiveTask(ws.where())
    task = load(ws, task_id)
    if task.status != "active":
        raise NoActiveTask(ws.where())
    return task


def staleness(task: Task, limit_minutes: int, now: Any) -> str | None:
    """None when an active task is fresh, else why not, as `was last checkpointed N minutes ago` or
    `has no checkpoint N minutes after it started`: the one staleness rule (design §6, §11).

    Stale means more than `limit_minutes` since its last checkpoint or, never checkpointed, since it
    started; exactly at the limit it is still fresh."""
    since = task.checkpoint_at or task.started_at
    minutes = (now - clock.parse(since)).total_seconds() / 60
    if minutes <= limit_minutes:
        return None
    if task.checkpoint_at is not None:
        return f"was last checkpointed {int(minutes)} minutes ago"
    return f"has no checkpoint {int(minutes)} minutes after it started"


def restore_claims(ws: Workspace, task_id: str) -> bool:
    """Whether the imported record names this slot as the holder and our claim on it is live."""
    try:
        task = load(ws, task_id)
    except Exception:
        return False
    restored, done = claims.restore_mine(ws, task_id, task.claims)
    if done:
        task.claims = restored
        save(ws, task)  # not `updated_at`: nobody changed the task; the next push carries it
        ws.event("task.claim", task_id, clock.now_iso(), by="sync", restored=done,
                 reason="a version of the task record from another machine did not carry this machine's claims")
    ours = claims.mine(ws).get(task_id)
    live_ids = {c["id"] for c in claims.live(task.claims)}
    return (ours is not None and ours["id"] in live_ids and task.status == "active"
            and (task.worktree, task.branch) == (ours["worktree"], ours["branch"]))
