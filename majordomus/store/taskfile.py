"""The task record's file (design §5): its fields and their types, read and written under the state
directory. Plain data, below every command: the one write transaction (`store.commit`) reads and moves it
under the lock; `majordomus.tasks` gives the rest of the package the same record from a workspace. A claim
list (design §18) is part of the record, so its stored form is checked here too; what claims mean is
`majordomus.claims`.
"""

from __future__ import annotations

from majordomus import clock
from majordomus.errors import EnvironmentProblem, NoActiveTask, NotFound, UsageError, where_words
from majordomus.lite import active, names, safeio, statepaths, textrules
from majordomus.store import files, records

TYPE_CHECKING = False  # the hot paths read tasks: no typing, no dataclasses at run time
if TYPE_CHECKING:
    from typing import Any

    from majordomus.lite.statepaths import StatePaths

MAX_CLAIMS = 32  # a task record holding more was not written by majordomus (untrusted, design §2a)
MAX_TEXT = 4096
_CLAIM_STRINGS = ("id", "owner", "host", "worktree", "at")
_CLAIM_OPTIONAL = ("branch", "ended_at", "ended_by")
_ID_CHARS = frozenset("0123456789abcdef")


def check_claims(items: Any) -> None:
    """A stored (untrusted) claim list: each claim of its types, or ValueError naming what is wrong."""
    if not isinstance(items, list) or len(items) > MAX_CLAIMS:
        raise ValueError(f"`claims` is not a list of at most {MAX_CLAIMS} claims")
    for n, item in enumerate(items, 1):
        if not isinstance(item, dict):
            raise ValueError(f"claim {n} is not a mapping")
        unknown = set(item) - set(_CLAIM_STRINGS) - set(_CLAIM_OPTIONAL)
        if unknown:
            raise ValueError(f"claim {n} has unknown key `{sorted(unknown)[0][:40]}`")
        for key in _CLAIM_STRINGS:
            if not isinstance(item.get(key), str) or len(item[key]) > MAX_TEXT:
                raise ValueError(f"claim {n}: `{key}` is missing or not a string")
        for key in _CLAIM_OPTIONAL:
            if not isinstance(item.get(key), (str, type(None))) or len(item.get(key) or "") > MAX_TEXT:
                raise ValueError(f"claim {n}: `{key}` is not a string")
        if not (8 <= len(item["id"]) <= 32 and set(item["id"]) <= _ID_CHARS):
            raise ValueError(f"claim {n}: `id` is not 8–32 hex digits")
        for key in ("at", "ended_at"):
            if item.get(key) is not None and not clock.is_iso(item[key]):
                raise ValueError(f"claim {n}: `{key}` is not a UTC time like 2026-09-03T19:45:00Z")


MAX_BYTES = 256 << 10  # a task record is a few hundred bytes; more was not written by majordomus
STATUSES = ("active", "paused", "handed-off", "done")


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
    check_claims(kept["claims"])


_REQUIRED = ("id", "title", "objective", "profile", "owner", "status", "started_at", "updated_at")
_OPTIONAL = ("worktree", "branch", "checkpoint_at", "handoff_at", "checkpoint", "handoff")


def validate_id(task_id: str) -> str:
    if not names.is_task_id(task_id):
        shown = textrules.escape(task_id) if isinstance(task_id, str) else f"{type(task_id).__name__} {task_id!r}"
        raise UsageError(
            f"`{textrules.escape(shown)}` is not a valid task id",
            "use 1–64 characters of a-z, 0-9, `.`, `_`, `-`, starting with a letter or digit",
        )
    return task_id


def load(state: StatePaths, task_id: str) -> Task:
    """The task record `task_id` as stored, with the version it was read from (`stamp`)."""
    path = state.task_file(validate_id(task_id))
    stamp = safeio.stamp(path)  # before the read: a record replaced in between only costs a second read
    statepaths.readable_dir(state, state.tasks)  # never read through a link to the state or its tasks/
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


def read_active(state: StatePaths, worktree: str, branch: str | None, where: str, *,
                statuses: tuple[str, ...] = ("active",), held: Task | None = None) -> Task:
    """The task active in this worktree and branch (its id in the active index, design §5), or exit 11:
    the one reader of it, before stdin is read and again under the lock.

    `held` is the value read before the lock was taken: it must still be the one active here. It is used
    as it is while its record is unchanged (the same stamp); when another write of the task landed
    meanwhile the record is read again, and it must then be in one of `statuses`."""
    unchanged = held is not None and held.stamp is not None and safeio.stamp(state.task_file(held.id)) == held.stamp
    current = active.read(state.root).get(active.slot(worktree, branch))
    task = None
    if current is not None and (held is None or current == held.id):
        task = held if unchanged else load(state, current)
    if task is None or task.status not in statuses:
        moved = held is not None and current is not None and current != held.id  # another task took the slot
        raise NoActiveTask(where, changed_from=held.id if held is not None and moved else None)
    if task.status == "active" and (task.worktree, task.branch) != (worktree, branch):
        # The index here still names it, its record says it is active elsewhere: taken over by a resume whose
        # index write did not land (its retry removes this entry). Not this worktree's task any more.
        raise NoActiveTask(where, taken=(task.id, where_words(task.worktree, task.branch)))
    return task


def save(state: StatePaths, task: Task, undo: str | None = None) -> None:
    """Replace the task record (`undo`: the record it now points at, removed when the old one stays, see
    `files.replace`)."""
    files.replace(state.task_file(task.id), records.emit_yaml(task.to_dict().items()).encode("utf-8"), undo=undo)
    task.stamp = None  # the version it was read from is gone
