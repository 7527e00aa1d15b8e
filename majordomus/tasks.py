"""The task record (design §5) seen from a workspace: reading and writing it (its file and fields are
`store.taskfile`), the active task here, and the one staleness rule. What happens to a task over its life
(start, resume, done, handoff) is in `lifecycle`, so that continuity can depend on tasks without the
reverse."""

from __future__ import annotations

import json
import os

from majordomus import claims, clock
from majordomus.lite import active as active_index
from majordomus.lite.statepaths import TASKS
from majordomus.store import files, paths, taskfile
from majordomus.store.taskfile import FIELDS as FIELDS  # re-exported: the record is the package's vocabulary
from majordomus.store.taskfile import MAX_BYTES as MAX_BYTES
from majordomus.store.taskfile import MAX_RUN_POINTERS as MAX_RUN_POINTERS
from majordomus.store.taskfile import STATUSES as STATUSES
from majordomus.store.taskfile import Task as Task
from majordomus.store.taskfile import validate_id as validate_id

TYPE_CHECKING = False  # the hot paths read tasks: no typing, no dataclasses at run time
if TYPE_CHECKING:
    from majordomus.workspace import Workspace

# A task started without an objective carries this sentinel; the continuity render skips it.
INTERACTIVE_OBJECTIVE = "(interactive: the objective comes from the principal)"


def load(ws: Workspace, task_id: str) -> Task:
    return taskfile.load(ws.paths, task_id)


def must_exist(ws: Workspace, task_id: str) -> None:
    """A task named by an option (`--task T`): a valid id of a task that has a record here, else exit 2
    naming it (its record is not read: a reader of the ledger still lists the events of a broken one)."""
    validate_id(task_id)
    if not exists(ws, task_id):
        from majordomus.errors import NotFound

        raise NotFound(f"no task `{task_id}`", "list tasks with `majordomus task list`")


def exists(ws: Workspace, task_id: str) -> bool:
    return paths.check_readable(ws.paths, TASKS) and os.path.lexists(ws.paths.task_file(task_id))


def save(ws: Workspace, task: Task) -> None:
    taskfile.save(ws.paths, task)


def all_tasks(ws: Workspace, skipped: list[str] | None = None) -> list[Task]:
    """Every task record of `tasks/`. A file whose name is no task id (`Bad.yaml`, copied in by hand) is no
    task: it is left out, and named in `skipped` (doctor reports it)."""
    from majordomus.lite import names as grammar

    if not paths.check_readable(ws.paths, TASKS):  # no state yet; a link on the way to it is refused
        return []
    try:
        listed = sorted(os.listdir(ws.paths.tasks))
    except FileNotFoundError:
        return []
    ids = [name[: -len(".yaml")] for name in listed if name.endswith(".yaml")]
    if skipped is not None:
        skipped += [f"{TASKS}/{task_id}.yaml" for task_id in ids if not grammar.is_task_id(task_id)]
    return [load(ws, task_id) for task_id in ids if grammar.is_task_id(task_id)]


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


def named_or_active(ws: Workspace, task_id: str | None) -> Task:
    """The task `task_id` names, or the active task here when none is named (None: an empty name is a name,
    and no task id: exit 2, never the active task in its place)."""
    return load(ws, validate_id(task_id)) if task_id is not None else active(ws)


def active(ws: Workspace) -> Task:
    """The active task in this worktree and branch, or exit 11."""
    return taskfile.read_active(ws.paths, ws.worktree, ws.branch, ws.where())


def staleness(task: Task, limit_minutes: int, now: str) -> str | None:
    """None when an active task is fresh, else why not, as `was last checkpointed N minutes ago` or
    `has no checkpoint N minutes after it started`: the one staleness rule (design §6, §11).

    Stale means more than `limit_minutes` since its last checkpoint or, never checkpointed, since it
    started; exactly at the limit it is still fresh. `now` is a stamp (`clock.now_iso()`): the post-commit
    hook asks this, and datetime is not loaded for it."""
    since = task.checkpoint_at or task.started_at
    minutes = (clock.seconds_of(now) - clock.seconds_of(since)) / 60
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
