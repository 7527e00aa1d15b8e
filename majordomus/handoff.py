"""`majordomus handoff` (design §7): the bundle from which another worker continues a task.

A handoff is written rarely and must carry every required section; it uses the same identity helper and
the same exclusive-link discipline as a checkpoint, adds where the previous handoff and the checkpoints
since then are, and releases the task (`handed-off`) so that `task resume` can take it anywhere.
"""

from __future__ import annotations

import os
import re

from majordomus import checkpoint, clock, identity, lifecycle, tasks
from majordomus.errors import EnvironmentProblem, NoActiveTask, Refused
from majordomus.lite import safeio
from majordomus.lite.stdin import read_bounded
from majordomus.store import files, ledger, records
from majordomus.workspace import Workspace

TYPE_CHECKING = False  # on the session-start path: typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any, BinaryIO, Union

    _Entry = Union["_Named", os.DirEntry[str]]  # a listed file, or a name from the task's index


_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


class Record:
    """A stored record read back: where it is (relative to the state directory), its front matter and body."""

    __slots__ = ("body", "meta", "path", "rel")

    def __init__(self, rel: str, path: str, meta: dict[str, Any], body: str) -> None:
        self.rel, self.path, self.meta, self.body = rel, path, meta, body


def read_record(ws: Workspace, rel: str) -> Record:
    """Raises OSError (e.g. FileNotFoundError) or ValueError when the record is gone or unreadable."""
    path = ws.paths.absolute(rel)
    meta, body = records.split(safeio.read(path))
    return Record(rel=rel, path=path, meta=meta, body=body)


def _section_key(title: str) -> str:
    title = _CLOSING_HASHES.sub("", title.strip())
    return " ".join(title.split()).rstrip(":").strip().casefold()


def sections(body: str) -> dict[str, bool]:
    """Each `## Heading` of the body (normalised) and whether any occurrence has non-blank content.
    Headings inside fenced code blocks are content, not headings."""
    found: dict[str, bool] = {}
    current: str | None = None
    fence: str | None = None
    for line in body.split("\n"):
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
            if current is not None and line.strip():
                found[current] = True
            continue
        opening = _FENCE.match(line)
        if opening:
            fence = opening.group(1)[0] * 3
            if current is not None:
                found[current] = True
            continue
        heading = _HEADING.match(line)
        if heading and len(heading.group(1)) <= 2:
            current = _section_key(heading.group(2) or "") if len(heading.group(1)) == 2 else None
            if current is not None:
                found.setdefault(current, False)
            continue
        if current is not None and line.strip() and not heading:
            found[current] = True
    return found


def check_sections(body: str, required: list[str]) -> None:
    """Every required section present with content; all that are not are named in one refusal."""
    present = sections(body)
    missing = [name for name in required if _section_key(name) not in present]
    empty = [name for name in required if present.get(_section_key(name)) is False]
    if not missing and not empty:
        return
    problems = []
    if missing:
        problems.append("missing " + ", ".join(f"`## {name}`" for name in missing))
    if empty:
        problems.append("empty " + ", ".join(f"`## {name}`" for name in empty))
    raise Refused(
        f"the handoff is incomplete: {'; '.join(problems)}; nothing was written",
        "write each required section as a `## Heading` line with at least one non-blank line under it "
        f"(handoff.required_sections: {', '.join(required)})",
    )


def _candidates(ws: Workspace, task: tasks.Task, previous: Record | None) -> tuple[list[_Entry], set[str]]:
    """Checkpoint files named from the second of `previous` (the task's start when None) on, oldest first,
    and the paths `previous` already listed. Record names begin with their UTC second, so older names are
    never opened; a checkpoint in the very second of the previous handoff counts unless it was listed."""
    since = previous.meta.get("timestamp") if previous else None
    lower = clock.compact(clock.parse(since or task.started_at))
    listed = set(previous.meta.get("checkpoints") or []) if previous else set()
    indexed = checkpoint.indexed_names(ws, task)
    try:
        entries: list[_Entry]
        if indexed is not None:  # the task's own names: no listing of a store of 100,000 records
            entries = [_Named(ws.paths.checkpoints, n) for n in indexed if n[:16] >= lower]
        else:
            entries = [e for e in os.scandir(ws.paths.checkpoints)
                       if e.name.endswith(".md") and not e.name.startswith(".") and e.name[:16] >= lower]
    except FileNotFoundError:
        return [], listed
    return _chronological(entries), listed


class _Named:
    """What `_candidates` needs of an os.DirEntry, for a name that came from the task's index."""

    __slots__ = ("name", "path")

    def __init__(self, directory: str, name: str) -> None:
        self.name = name
        self.path = os.path.join(directory, name)

    def stat(self, follow_symlinks: bool = False) -> os.stat_result:
        return os.lstat(self.path)


def _chronological(entries: list[_Entry]) -> list[_Entry]:
    """Oldest first by the second in the name; within one second by mtime — stat only where names tie."""
    entries.sort(key=lambda e: e.name)
    out: list[_Entry] = []
    start = 0
    while start < len(entries):
        end = start + 1
        while end < len(entries) and entries[end].name[:16] == entries[start].name[:16]:
            end += 1
        group = entries[start:end]
        if len(group) > 1:
            group.sort(key=lambda e: (e.stat(follow_symlinks=False).st_mtime_ns, e.name))
        out.extend(group)
        start = end
    return out


def _rel(entry: _Entry) -> str:
    return os.path.join("checkpoints", entry.name)


def _read_if_ours(ws: Workspace, entry: _Entry, task_id: str) -> Record | None:
    try:
        found = read_record(ws, _rel(entry))
    except (OSError, ValueError, UnicodeDecodeError):
        return None  # doctor reports unreadable records; a briefing goes on with the rest
    if found.meta.get("task") == task_id and found.meta.get("kind", "checkpoint") == "checkpoint":
        return found
    return None


def checkpoints_since(ws: Workspace, task: tasks.Task, previous: Record | None) -> list[Record]:
    """This task's checkpoints written since `previous` (the task's start when None), oldest first."""
    entries, listed = _candidates(ws, task, previous)
    out = []
    for entry in entries:
        if _rel(entry) not in listed:
            found = _read_if_ours(ws, entry, task.id)
            if found is not None:
                out.append(found)
    return out


def recent_checkpoints(ws: Workspace, task: tasks.Task, previous: Record | None,
                       enough: int) -> tuple[list[Record], int]:
    """Like `checkpoints_since`, but read newest first only until the bodies pass `enough` bytes; the
    older ones are only counted. A briefing drops the oldest checkpoints before anything else, so once
    the newer ones alone exceed its budget every older one would be dropped anyway."""
    entries, listed = _candidates(ws, task, previous)
    out: list[Record] = []
    older = 0
    total = 0
    key = f'\ntask: "{task.id}"\n'.encode()
    for entry in reversed(entries):
        if _rel(entry) in listed:
            continue
        if total > enough:
            older += _is_ours_cheaply(ws, entry, task.id, key)
            continue
        found = _read_if_ours(ws, entry, task.id)
        if found is not None:
            out.append(found)
            total += len(found.body.encode("utf-8"))
    out.reverse()
    return out, older


def _is_ours_cheaply(ws: Workspace, entry: _Entry, task_id: str, key: bytes) -> int:
    """1 when the record belongs to the task, read from its first KiB (front matter puts `task` 4th)."""
    try:
        fd = safeio.open_regular(entry.path, records.MAX_RECORD_BYTES)
        try:
            head = os.read(fd, 1024)
        finally:
            os.close(fd)
    except (OSError, safeio.UnsafeFile):
        return 0
    if b'\nkind: "checkpoint"\n' in head and b"\ntask: " in head:
        return int(key in head)
    return int(_read_if_ours(ws, entry, task_id) is not None)


def previous(ws: Workspace, task: tasks.Task) -> Record | None:
    """The task's latest handoff record, or None (also when its file is gone: the ledger still says so)."""
    if not task.handoff:
        return None
    try:
        return read_record(ws, task.handoff)
    except (OSError, ValueError, UnicodeDecodeError):
        return None


class Written:
    __slots__ = ("created", "path", "sha256", "task")

    def __init__(self, path: str, created: bool, sha256: str, task: str) -> None:
        self.path, self.created, self.sha256, self.task = path, created, sha256, task


def write(ws: Workspace, stdin: BinaryIO) -> Written:
    """Refusals first (nothing written); then the record, the task's release and the ledger event."""
    task = tasks.active(ws)
    limit = ws.config.get("handoff", "max_bytes")
    raw = read_bounded(stdin, limit)
    body = records.normalise(raw, what="handoff", max_lines=None, max_bytes=limit, more=stdin)
    check_sections(body.text, ws.config.get("handoff", "required_sections"))
    ws.ensure_state()  # the state root, there already while a task is active: the lock lives in it
    at = clock.now_iso()
    with files.locked(ws.paths.lock):
        # Lock, then check again (design §5): another worktree may have taken the task over meanwhile, and
        # refused here the write has created nothing at all.
        current = tasks.still_active(ws, task.id)
        ledger.check_writable(ws.paths.ledger)
        ws.ensure_state("tasks", "handoffs")
        before = previous(ws, current)
        since = checkpoints_since(ws, current, before)
        fields = identity.fields(ws, "handoff", current, at)
        fields += [("previous_handoff", current.handoff), ("checkpoints", [r.rel for r in since])]
        path, created, digest = checkpoint.store_record(ws, ws.paths.handoffs, fields, body.text)
        if not created:
            return Written(path=path, created=False, sha256=digest, task=current.id)
        rel = ws.paths.relative(path)
        prior = current.handoff
        lifecycle.set_handed_off(ws, current, rel, at)
        ws.event("task.handoff", current.id, at, path=rel, sha256=digest, lines=body.lines,
                    previous_handoff=prior, checkpoints=len(since))
    return Written(path=path, created=True, sha256=digest, task=current.id)


def latest(ws: Workspace, task_id: str | None) -> str | None:
    """Path of the newest handoff of the named task, or of the active task here; None when it has none."""
    if task_id is None:
        try:
            task = tasks.active(ws)
        except NoActiveTask as exc:
            exc.hint = "after a handoff the task is no longer active here: name it, `majordomus handoff --show TASK`"
            raise
    else:
        task = tasks.load(ws, tasks.validate_id(task_id))
    if not task.handoff:
        return None
    path = ws.paths.absolute(task.handoff)
    if not os.path.lexists(path):
        raise EnvironmentProblem(
            f"the handoff record {ws.display(path)} of task `{task.id}` is missing",
            "run `majordomus doctor`; records are never deleted by majordomus",
        )
    return path
