"""`majordomus checkpoint` and `check` (design §6): a few lines of what holds now, with identity from git."""

from __future__ import annotations

import os

from majordomus import clock, identity, tasks
from majordomus.store import commit, records, taskfile

TYPE_CHECKING = False  # a hot path: no typing at run time
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import BinaryIO

    from majordomus.workspace import Workspace


def write(ws: Workspace, stdin: BinaryIO, notice: Callable[[], None] | None = None) -> commit.Committed | None:
    """Store the checkpoint read from `stdin` for the active task here (None for an empty body, which only
    moves `checkpoint_at`), in one pass down: the task read once (exit 11 before stdin is read; `notice` is
    called just before), the body read with its bound and its rules, the identity from git, then the one
    transaction, which checks again under the lock that the task is still the one active here."""
    task = taskfile.read_active(ws.paths, ws.worktree, ws.branch, ws.where())  # the one read; handed down
    if notice is not None:
        notice()
    body = records.read_body(stdin, what="checkpoint", max_lines=ws.config.get("checkpoint", "max_body_lines"),
                             max_bytes=ws.config.get("checkpoint", "max_body_bytes"))
    at = clock.now_iso()
    empty = not body.text
    fields, cache = ([], None) if empty else identity.taken(ws, "checkpoint", task, at)
    return commit.transact(commit.Write(
        ws, task, at, body.text, fields, kind="checkpoint", what="checkpoint", subdir="checkpoints",
        event="task.checkpoint", pointer="checkpoint", indexed=True, touch=empty,
        caches=(cache, ws.config.cache_entry(ws.paths.config_cache))))


def latest(ws: Workspace) -> str | None:
    """Path of the newest checkpoint of the active task here; the task record points at it (no scan)."""
    task = tasks.active(ws)
    if not task.checkpoint:
        return None
    path = ws.paths.absolute(task.checkpoint)
    # A task record brought by `majordomus sync` can point at a checkpoint that was not shared with it.
    return path if os.path.lexists(path) else None
