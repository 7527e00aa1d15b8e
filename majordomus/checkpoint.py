"""`majordomus checkpoint` and `check` (design §6): a few lines of what holds now, with identity from git."""

from __future__ import annotations

import os

from majordomus import clock, identity, tasks
from majordomus.lite.stdin import read_bounded
from majordomus.store import commit, records

TYPE_CHECKING = False  # a hot path: no typing at run time
if TYPE_CHECKING:
    from typing import BinaryIO

    from majordomus.workspace import Workspace


def write(ws: Workspace, task: tasks.Task, stdin: BinaryIO) -> commit.Committed | None:
    """Store the checkpoint read from `stdin` for `task`, the active task the command read (None for an
    empty body, which only moves `checkpoint_at`). The body's rules, then its identity, then the one
    transaction, which checks again under the lock that the task is still the one active here."""
    limit = ws.config.get("checkpoint", "max_body_bytes")
    raw = read_bounded(stdin, limit)
    body = records.normalise(
        raw, what="checkpoint", max_lines=ws.config.get("checkpoint", "max_body_lines"), max_bytes=limit,
        more=stdin,
    )
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
