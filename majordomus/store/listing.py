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
            found = summary(data, f"{shown_dir}/{name}", name)
        except ValueError:
            yield {"path": f"{shown_dir}/{name}", "name": name, "sha256": hashlib.sha256(data).hexdigest(),
                   "error": "no readable front matter (run `majordomus doctor`)"}
            continue
        if not records.intact(name, data, found["sha256"]):  # what was written, or only its name and why
            yield {"path": found["path"], "name": name, "sha256": found["sha256"],
                   "error": "no longer matches the digest in its name: replaced after it was written, not shown "
                            "(run `majordomus doctor`)"}
            continue
        yield found


# ---------------------------------------------------------------- the per-task checkpoint index
# Derived and rebuildable: `brief` and session-start read it instead of listing every record of the store.
# It keeps the order the task's records arrived here (design §9): a checkpoint's name when it was written
# here or imported, `handoffs/NAME` when a handoff was, one line each, appended. A handoff's place among the
# names is what "since the handoff" means; no clock is compared. It is trusted only while it names the
# records the task record points at that are here (a lost append, or an index from before handoffs were
# kept in it, sends readers to the ledger).
INDEX_MAX_BYTES = 16 << 20
HANDOFF_ENTRY = "handoffs/"


def index_path(ws: Site, task_id: str) -> str:
    return ws.paths.checkpoint_index(task_id)


def start_index(ws: Site, task_id: str) -> None:
    """An empty index, made when the task starts here: only an index that saw every checkpoint is whole."""
    files.write_derived(index_path(ws, task_id), b"")


def entry_of(rel: str) -> str | None:
    """The index line of the record at `rel` (`checkpoints/N` -> `N`, `handoffs/N` -> `handoffs/N`)."""
    if rel.startswith("checkpoints/"):
        return rel[len("checkpoints/"):]
    return rel if rel.startswith(HANDOFF_ENTRY) else None


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
    add_names(index, [name])


def add_names(index: str, entries: list[str]) -> None:
    """Append `entries` (index lines, in the order they arrived) in one write, to an index that exists."""
    try:  # never created here: a task started elsewhere (or before indexes) keeps using the ledger
        fd = os.open(index, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return
    try:
        if safeio.linked_elsewhere(os.fstat(fd)):  # never append to another file; without it, the ledger serves
            os.unlink(index)
            return
        os.write(fd, "".join(e + "\n" for e in entries).encode("ascii"))
    except (OSError, UnicodeEncodeError):
        pass
    finally:
        try:
            os.close(fd)
        except OSError:
            pass  # a cache: a close that fails never fails the write it follows (its record has landed)


class Arrivals:
    """A whole index read back: the task's checkpoint names in the order they arrived here, and where each
    handoff arrived among them (how many names came before it)."""

    __slots__ = ("handoffs", "names")

    def __init__(self, names: list[str], handoffs: dict[str, int]) -> None:
        self.names, self.handoffs = names, handoffs

    def since(self, handoff: str | None) -> list[str]:
        """The names that arrived after the handoff at `handoff` (every name without one), oldest first."""
        at = self.handoffs.get(handoff) if handoff else None
        return self.names[at:] if at is not None else list(self.names)

    def holds(self, rel: str) -> bool:
        """Whether the record at `rel` arrived here, as far as the index knows."""
        entry = entry_of(rel)
        return entry is not None and (entry in self.handoffs or entry in self.names)


def arrivals(ws: Site, task: Task) -> Arrivals | None:
    """The task's index when it is whole; None to fall back to the ledger (or a listing)."""
    try:  # a link where `cache/` belongs is never read through: the index is only derived
        data = safeio.read_optional(index_path(ws, task.id), INDEX_MAX_BYTES) if statepaths.is_real_dir(
            ws.paths.cache) else None
    except (OSError, safeio.EnvironmentProblem):
        return None
    if data is None:
        return None
    found: list[str] = []
    seen: set[str] = set()
    handoffs: dict[str, int] = {}
    for line in data.decode("ascii", "replace").split("\n"):
        if not line:
            continue
        if line.startswith(HANDOFF_ENTRY):
            if not names.RecordName.parse(line[len(HANDOFF_ENTRY):]):
                return None
            handoffs.setdefault(line, len(found))
        elif not names.RecordName.parse(line):
            return None
        elif line not in seen:
            seen.add(line)
            found.append(line)
    if task.handoff and task.handoff not in handoffs:
        return None  # an index from before handoffs were kept in it, or a lost append: the ledger tells
    pointer = task.checkpoint
    if pointer and entry_of(pointer) not in seen and os.path.lexists(ws.paths.absolute(pointer)):
        return None  # here, yet not in the index: an append was lost (one not here never came: not shared)
    return Arrivals(found, handoffs)


def indexed_names(ws: Site, task: Task) -> list[str] | None:
    """The task's checkpoint names, in the order they arrived here, when its index is whole; else None."""
    found = arrivals(ws, task)
    return None if found is None else found.names
