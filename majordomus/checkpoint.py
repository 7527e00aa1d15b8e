"""`majordomus checkpoint` and `check` (SPEC §6): a few lines of what holds now, with identity from git."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, BinaryIO, Iterator, Optional

from majordomus import clock, git, records, store, tasks
from majordomus.records import SCHEMA_VERSION
from majordomus.workspace import Workspace


@dataclass
class Written:
    path: Optional[str]  # None for an empty body
    created: bool
    sha256: Optional[str] = None


def read_bounded(stream: BinaryIO, limit: int) -> bytes:
    """Never hold more than `limit` + 1 bytes of stdin: one more than allowed is enough to refuse."""
    chunks = []
    remaining = limit + 1
    while remaining > 0:
        chunk = stream.read(remaining)
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def identity_fields(ws: Workspace, kind: str, task: tasks.Task, at: str) -> list[tuple[str, Any]]:
    """The front matter every record carries (SPEC §4), in order; the one place identity is computed."""
    ident = git.identity(ws.repo, ws.config.get("checkpoint", "max_changed_files"), ws.paths.root_commit_cache)
    out: list[tuple[str, Any]] = [
        ("schema_version", SCHEMA_VERSION),
        ("kind", kind),
        ("timestamp", at),
        ("task", task.id),
        ("profile", task.profile),
        ("owner", task.owner),
        ("repo_id", ident.repo_id),
        ("worktree", ident.worktree),
        ("branch", ident.branch),
        ("head", ident.head),
        ("worktree_state", ident.worktree_state),
        ("changed_files", ident.changed_files),
    ]
    if ident.changed_files_omitted:
        out.append(("changed_files_omitted", ident.changed_files_omitted))
    return out


def store_record(ws: Workspace, directory: str, fields: list[tuple[str, Any]], body: str) -> tuple[str, bool, str]:
    """Render and link in a record; returns (path, created, sha256)."""
    meta = dict(fields)
    data = records.render(fields, body)
    digest = records.sha256(data)
    name = records.record_name(clock.compact_of(meta["timestamp"]), meta["branch"], meta["head"], digest)
    path, created = store.link_in(directory, name, data)
    return path, created, digest


def write(ws: Workspace, stdin: BinaryIO) -> Written:
    task = tasks.active(ws)
    limit = ws.config.get("checkpoint", "max_body_bytes")
    raw = read_bounded(stdin, limit)
    body = records.normalise(
        raw, what="checkpoint", max_lines=ws.config.get("checkpoint", "max_body_lines"), max_bytes=limit
    )
    moment = clock.now()
    at = clock.iso(moment)
    if not body.text:
        touch(ws, task.id, at)
        return Written(path=None, created=False)
    ws.ensure_state("tasks", "checkpoints", "cache")
    fields = identity_fields(ws, "checkpoint", task, at)
    path, created, digest = store_record(ws, ws.paths.checkpoints, fields, body.text)
    if not created:
        return Written(path=path, created=False, sha256=digest)
    rel = ws.paths.relative(path)
    with store.locked(ws.paths.lock):
        current = tasks.load(ws, task.id)
        current.checkpoint = rel
        current.checkpoint_at = at
        current.updated_at = at
        tasks.save(ws, current)
    tasks.event(ws, "task.checkpoint", task.id, at, path=rel, sha256=digest, lines=body.lines)
    return Written(path=path, created=True, sha256=digest)


def touch(ws: Workspace, task_id: str, at: str) -> None:
    """An empty checkpoint: only `checkpoint_at` moves (exactly `check --checkpoint`)."""
    ws.ensure_state("tasks")
    with store.locked(ws.paths.lock):
        current = tasks.load(ws, task_id)
        current.checkpoint_at = at
        tasks.save(ws, current)


def latest(ws: Workspace) -> Optional[str]:
    """Path of the newest checkpoint of the active task here; the task record points at it (no scan)."""
    task = tasks.active(ws)
    if not task.checkpoint:
        return None
    path = ws.paths.absolute(task.checkpoint)
    # A task record brought by `majordomus sync` can point at a checkpoint that was not shared with it.
    return path if os.path.lexists(path) else None


def staleness(ws: Workspace, task: tasks.Task) -> Optional[str]:
    """None when the task's checkpoint is fresh; otherwise why it is not."""
    limit = ws.config.get("checkpoint", "stale_after_minutes")
    if task.checkpoint_at is None:
        return f"task `{task.id}` has no checkpoint yet"
    minutes = int((clock.now() - clock.parse(task.checkpoint_at)) / timedelta(minutes=1))
    if minutes > limit:
        return f"task `{task.id}` was last checkpointed {minutes} minutes ago (the limit is {limit})"
    return None


def describe(ws: Workspace, path: str) -> dict[str, Any]:
    """The summary `--show --json` and `--list --json` give for one stored record."""
    return _summary(store.read_nofollow(path), ws.display(path), os.path.basename(path))


_SUMMARY_KEYS = ("timestamp", "task", "kind", "branch", "head", "worktree", "worktree_state")


def _summary(data: bytes, shown: str, name: str) -> dict[str, Any]:
    meta, body_lines = records.summary_fields(data, _SUMMARY_KEYS)
    out: dict[str, Any] = {"path": shown, "name": name}
    for key in _SUMMARY_KEYS:
        out[key] = meta.get(key)
    out["lines"] = body_lines
    out["sha256"] = records.sha256(data)
    return out


def summaries(ws: Workspace, directory: str) -> Iterator[dict[str, Any]]:
    """Every record in `directory`, newest first, one read each: streamed, never all in memory.

    This loop runs once per record of a store that may hold 100,000, so it is written flat: one open,
    one read, one hash and one regular-expression pass each, with `store`/`records` only as fallbacks.
    """
    import hashlib

    shown_dir = ws.display(directory)
    flags = os.O_RDONLY | os.O_NOFOLLOW
    limit = 1 << 16  # below malloc's mmap threshold: no mmap/munmap per record; longer files read on
    for name in list_names(directory):
        path = f"{directory}/{name}"
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            continue
        try:
            data = os.read(fd, limit)
        finally:
            os.close(fd)
        if len(data) == limit:
            data = store.read_nofollow(path)
        try:
            yield _summary(data, f"{shown_dir}/{name}", name)
        except ValueError:
            yield {"path": f"{shown_dir}/{name}", "name": name, "sha256": hashlib.sha256(data).hexdigest(),
                   "error": "no readable front matter (run `majordomus doctor`)"}


def list_names(directory: str) -> list[str]:
    """Record file names in `directory`, newest first: by the UTC second their name begins with, then
    (only within one second, where the name cannot tell) by modification time."""
    try:
        names = [n for n in os.listdir(directory) if n.endswith(".md") and not n.startswith(".")]
    except FileNotFoundError:
        return []
    names.sort(reverse=True)
    out: list[str] = []
    i = 0
    while i < len(names):
        j = i + 1
        while j < len(names) and names[j][:16] == names[i][:16]:
            j += 1
        group = names[i:j]
        if len(group) > 1:
            group.sort(key=lambda n: _mtime(os.path.join(directory, n)), reverse=True)
        out.extend(group)
        i = j
    return out


def _mtime(path: str) -> int:
    try:
        return os.lstat(path).st_mtime_ns
    except OSError:
        return 0


def list_paths(directory: str) -> list[str]:
    """Every record file in `directory`, newest first."""
    return [os.path.join(directory, n) for n in list_names(directory)]
