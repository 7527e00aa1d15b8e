"""`majordomus checkpoint` and `check` (design §6): a few lines of what holds now, with identity from git."""

from __future__ import annotations

import os

from majordomus import clock, identity, tasks
from majordomus.lite import names, safeio
from majordomus.lite.stdin import read_bounded
from majordomus.store import files, ledger, records

TYPE_CHECKING = False  # a hot path: no typing at run time
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, BinaryIO

    from majordomus.workspace import Workspace


class Written:
    __slots__ = ("created", "path", "sha256")

    def __init__(self, path: str | None, created: bool, sha256: str | None = None) -> None:
        self.path = path  # None for an empty body
        self.created = created
        self.sha256 = sha256


def store_record(ws: Workspace, directory: str, fields: list[tuple[str, Any]], body: str) -> tuple[str, bool, str]:
    """Render and link in a record; returns (path, created, sha256)."""
    meta = dict(fields)
    data = records.render(fields, body)
    digest = records.sha256(data)
    name = names.record_name(clock.compact_of(meta["timestamp"]), meta["branch"], meta["head"], digest)
    path, created = files.link_in(directory, name, data)
    return path, created, digest


def write(ws: Workspace, stdin: BinaryIO) -> Written:
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
        return Written(path=None, created=False)
    ws.ensure_state()  # the state root, there already while a task is active: the lock lives in it
    with files.locked(ws.paths.lock):
        # Lock, then check again (design §5): refused here, the write has created nothing at all.
        current = tasks.still_active(ws, task.id)
        ledger.check_writable(ws.paths.ledger)
        ws.ensure_state("tasks", "checkpoints")
        fields = identity.fields(ws, "checkpoint", current, at)
        path, created, digest = store_record(ws, ws.paths.checkpoints, fields, body.text)
        if not created:
            return Written(path=path, created=False, sha256=digest)
        rel = ws.paths.relative(path)
        current.checkpoint = rel
        current.checkpoint_at = at
        current.updated_at = at
        tasks.save(ws, current)
        _index(ws, task.id, os.path.basename(path))
        ws.event("task.checkpoint", task.id, at, path=rel, sha256=digest, lines=body.lines)
    return Written(path=path, created=True, sha256=digest)


# A per-task list of checkpoint names, derived and rebuildable: `brief` and session-start read it instead
# of listing every record of the store. It is trusted only while its last name is the one the task
# record points at (a checkpoint brought by sync, or a lost append, sends readers back to the listing).
INDEX_MAX_BYTES = 16 << 20


def index_path(ws: Workspace, task_id: str) -> str:
    return os.path.join(ws.paths.root, "cache", f"checkpoints-{task_id}.idx")


def start_index(ws: Workspace, task_id: str) -> None:
    """An empty index, made when the task starts here: only an index that saw every checkpoint is whole."""
    files.write_derived(index_path(ws, task_id), b"")


def _index(ws: Workspace, task_id: str, name: str) -> None:
    try:  # never created here: a task started elsewhere (or before indexes) keeps using the listing
        fd = os.open(index_path(ws, task_id), os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return  # derived data: the briefing falls back to the listing
    try:
        os.write(fd, name.encode("ascii") + b"\n")
    except OSError:
        pass
    finally:
        os.close(fd)


def indexed_names(ws: Workspace, task: tasks.Task) -> list[str] | None:
    """The task's checkpoint names, oldest first, when its index is whole; None to fall back to a listing."""
    if not task.checkpoint:
        return []
    try:
        data = safeio.read_optional(index_path(ws, task.id), INDEX_MAX_BYTES)
    except (OSError, safeio.UnsafeFile):
        return None
    if not data:
        return None
    found = [n for n in data.decode("ascii", "replace").split("\n") if n]
    if not found or "checkpoints/" + found[-1] != task.checkpoint or not all(names.RecordName.parse(n) for n in found):
        return None
    return found


def latest(ws: Workspace) -> str | None:
    """Path of the newest checkpoint of the active task here; the task record points at it (no scan)."""
    task = tasks.active(ws)
    if not task.checkpoint:
        return None
    path = ws.paths.absolute(task.checkpoint)
    # A task record brought by `majordomus sync` can point at a checkpoint that was not shared with it.
    return path if os.path.lexists(path) else None


def describe(ws: Workspace, path: str) -> dict[str, Any]:
    """The summary `--show --json` and `--list --json` give for one stored record."""
    return _summary(safeio.read(path, records.MAX_RECORD_BYTES), ws.display(path), os.path.basename(path))


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
    limit = 1 << 16  # below malloc's mmap threshold: no mmap/munmap per record; longer files read on
    for name in list_names(directory):
        path = f"{directory}/{name}"
        try:
            fd = safeio.open_regular(path, records.MAX_RECORD_BYTES)  # no link, no FIFO, no directory
        except FileNotFoundError:
            continue
        try:
            data = os.read(fd, limit)
        finally:
            os.close(fd)
        if len(data) == limit:
            data = safeio.read(path, records.MAX_RECORD_BYTES)
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
