"""Which records a directory of the store holds, and the one order they come in (design §6, §7, §17).

A record's name begins with the UTC second it was written in, so names sort by time down to the second;
within one second, where the name cannot tell, the older record is the one modified first, and a tie there
falls back to the name. `--list`, the API, `brief` and the handoff's list of checkpoints all use this order.

The per-task checkpoint index lives here too: a derived list of one task's checkpoint names that readers
use instead of listing a store of 100,000 records.
"""

from __future__ import annotations

import os

from majordomus.lite import names, safeio, statepaths
from majordomus.store import files, records

TYPE_CHECKING = False  # on the hot paths: no typing at run time
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from majordomus.store.paths import Site
    from majordomus.store.taskfile import Task

SECOND = 16  # `YYYYMMDDTHHMMSSZ`: the part of a record name that says when it was written


def is_record_file(name: str) -> bool:
    """A stored record's file name: temporary files (`.tmp-…`) and anything not Markdown are not records."""
    return name.endswith(".md") and not name.startswith(".")


def _mtime(path: str) -> int:
    try:
        return os.lstat(path).st_mtime_ns
    except OSError:
        return 0


def ordered(directory: str, found: list[str], *, newest_first: bool) -> list[str]:
    """`found` (names in `directory`) in the one order: by second, then modification time, then name.
    Only names that share a second are stat'ed."""
    found = sorted(found)
    out: list[str] = []
    start = 0
    while start < len(found):
        end = start + 1
        while end < len(found) and found[end][:SECOND] == found[start][:SECOND]:
            end += 1
        group = found[start:end]
        if len(group) > 1:
            group.sort(key=lambda n: (_mtime(os.path.join(directory, n)), n))
        out.extend(group)
        start = end
    if newest_first:
        out.reverse()
    return out


def list_names(directory: str) -> list[str]:
    """Record file names in `directory`, newest first; never listed through a symbolic link."""
    if not statepaths.is_real_dir(directory):
        return []
    found = [n for n in os.listdir(directory) if is_record_file(n)]
    return ordered(directory, found, newest_first=True)


def list_paths(directory: str) -> list[str]:
    """Every record file in `directory`, newest first."""
    return [os.path.join(directory, n) for n in list_names(directory)]


def names_since(directory: str, lower: str, candidates: list[str] | None = None) -> list[str]:
    """Record names in `directory` whose second is `lower` (compact UTC) or later, oldest first; from
    `candidates` (a task's index) when given, else from a listing. Older names are never opened, and
    nothing is looked at through a symbolic link where the directory belongs."""
    if not statepaths.is_real_dir(directory):
        return []
    if candidates is None:
        candidates = os.listdir(directory)
    return ordered(directory, [n for n in candidates if is_record_file(n) and n[:SECOND] >= lower],
                   newest_first=False)


# ---------------------------------------------------------------- summaries (`--list`, `--show --json`)

_SUMMARY_KEYS = ("timestamp", "task", "kind", "branch", "head", "worktree", "worktree_state")


def summary(data: bytes, shown: str, name: str) -> dict[str, Any]:
    """The summary `--show --json` and `--list --json` give for one stored record."""
    meta, body_lines = records.summary_fields(data, _SUMMARY_KEYS)
    out: dict[str, Any] = {"path": shown, "name": name}
    for key in _SUMMARY_KEYS:
        out[key] = meta.get(key)
    out["lines"] = body_lines
    out["sha256"] = records.sha256(data)
    return out


def summaries(ws: Site, directory: str) -> Iterator[dict[str, Any]]:
    """Every record in `directory`, newest first, one read each: streamed, never all in memory.

    This loop runs once per record of a store that may hold 100,000, so it is written flat: one open,
    one read, one hash and one regular-expression pass each, with `store`/`records` only as fallbacks.
    """
    import hashlib

    if not statepaths.readable_dir(ws.paths, directory):
        return
    caps = records.body_caps(os.path.basename(directory), ws.config)
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
        over = records.over_cap(data, caps)
        if over is not None:
            yield {"path": f"{shown_dir}/{name}", "name": name, "sha256": hashlib.sha256(data).hexdigest(),
                   "error": f"{over}: majordomus did not write it (run `majordomus doctor`)"}
            continue
        try:
            yield summary(data, f"{shown_dir}/{name}", name)
        except ValueError:
            yield {"path": f"{shown_dir}/{name}", "name": name, "sha256": hashlib.sha256(data).hexdigest(),
                   "error": "no readable front matter (run `majordomus doctor`)"}


# ---------------------------------------------------------------- the per-task checkpoint index
# Derived and rebuildable: `brief` and session-start read it instead of listing every record of the store.
# It is trusted only while its last name is the one the task record points at (a checkpoint brought by
# sync, or a lost append, sends readers back to the listing).
INDEX_MAX_BYTES = 16 << 20


def index_path(ws: Site, task_id: str) -> str:
    return ws.paths.checkpoint_index(task_id)


def start_index(ws: Site, task_id: str) -> None:
    """An empty index, made when the task starts here: only an index that saw every checkpoint is whole."""
    files.write_derived(index_path(ws, task_id), b"")


def has_name(index: str, name: str) -> bool:
    """Whether the task's checkpoint index already lists `name` (a completion must not list it twice)."""
    try:
        data = safeio.read_optional(index, INDEX_MAX_BYTES)
    except (OSError, safeio.UnsafeFile):
        return True
    return data is not None and name.encode("ascii") + b"\n" in data


def add_name(index: str, name: str) -> None:
    """Append `name` to the task's index at `index`. Best effort: a failure costs readers a listing, never
    a write."""
    try:  # never created here: a task started elsewhere (or before indexes) keeps using the listing
        fd = os.open(index, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return
    try:
        os.write(fd, name.encode("ascii") + b"\n")
    except OSError:
        pass
    finally:
        os.close(fd)


def indexed_names(ws: Site, task: Task) -> list[str] | None:
    """The task's checkpoint names, oldest first, when its index is whole; None to fall back to a listing."""
    if not task.checkpoint:
        return []
    try:  # a link where `cache/` belongs is never read through: the index is only derived
        data = safeio.read_optional(index_path(ws, task.id), INDEX_MAX_BYTES) if statepaths.is_real_dir(
            ws.paths.cache) else None
    except (OSError, safeio.EnvironmentProblem):
        return None
    if not data:
        return None
    found = [n for n in data.decode("ascii", "replace").split("\n") if n]
    if not found or "checkpoints/" + found[-1] != task.checkpoint or not all(names.RecordName.parse(n) for n in found):
        return None
    return found
