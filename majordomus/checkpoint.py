"""`majordomus checkpoint` and `check` (design §6): a few lines of what holds now, with identity from git."""

from __future__ import annotations

import os

from majordomus import clock, identity, tasks
from majordomus.lite.stdin import read_bounded
from majordomus.store import commit, listing, records

TYPE_CHECKING = False  # a hot path: no typing at run time
if TYPE_CHECKING:
    from typing import Any, BinaryIO

    from majordomus.workspace import Workspace


class CheckpointWrite(commit.Write):
    kind, what, subdir, event = "checkpoint", "checkpoint", "checkpoints", "task.checkpoint"

    def __init__(self, ws: Workspace, task_id: str, at: str, body: records.Body) -> None:
        super().__init__(ws, task_id, at, body.text)

    def check(self) -> tasks.Task:
        return tasks.still_active(self.ws, self.task_id)

    def fields(self, task: tasks.Task) -> list[tuple[str, Any]]:
        return identity.fields(self.ws, "checkpoint", task, self.at)

    def pointer(self, task: tasks.Task) -> str | None:
        return task.checkpoint

    def points_at(self, task: tasks.Task, rel: str) -> bool:
        # A record of a later second keeps the pointer: completing an older write never moves it back.
        return task.checkpoint is not None and (task.checkpoint == rel or commit.second(task.checkpoint) > commit.second(rel))

    def point(self, task: tasks.Task, rel: str, meta: dict[str, Any]) -> None:
        task.checkpoint = rel
        task.checkpoint_at = task.updated_at = str(meta["timestamp"])
        tasks.save(self.ws, task)

    def index(self, task: tasks.Task, name: str, *, fresh: bool) -> None:
        if fresh or not commit.in_index(self.ws, task.id, name):
            listing.add_to_index(self.ws, task.id, name)

    def event_fields(self, rel: str, digest: str, meta: dict[str, Any], body: str) -> dict[str, Any]:
        return {"path": rel, "sha256": digest, "lines": body.count("\n") + 1 if body else 0}


def write(ws: Workspace, stdin: BinaryIO) -> commit.Committed | None:
    """Store the checkpoint read from `stdin` (None for an empty body, which only moves `checkpoint_at`)."""
    task = tasks.active(ws)
    limit = ws.config.get("checkpoint", "max_body_bytes")
    raw = read_bounded(stdin, limit)
    body = records.normalise(
        raw, what="checkpoint", max_lines=ws.config.get("checkpoint", "max_body_lines"), max_bytes=limit,
        more=stdin,
    )
    at = clock.now_iso()
    if not body.text:
        tasks.touch(ws, task.id, at)
        return None
    return commit.commit(CheckpointWrite(ws, task.id, at, body))


def latest(ws: Workspace) -> str | None:
    """Path of the newest checkpoint of the active task here; the task record points at it (no scan)."""
    task = tasks.active(ws)
    if not task.checkpoint:
        return None
    path = ws.paths.absolute(task.checkpoint)
    # A task record brought by `majordomus sync` can point at a checkpoint that was not shared with it.
    return path if os.path.lexists(path) else None
