"""The shared state as a git tree: what this machine holds, what may be imported, and the union merge.

The tree of `refs/majordomus/state` is `format`, `tasks/ID.yaml`, `handoffs/NAME.md`, `checkpoints/NAME.md`.
Records are immutable and named by their digest, so two trees merge as a union; a task record is mutable and
merges three-way against the merge base, the newest `updated_at` winning when both sides changed it.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import Callable, Optional

from majordomus.lite import safeio
from majordomus import clock, tasks
from majordomus.git import odb as git
from majordomus.store import records
from majordomus.store import files as store
from majordomus.lite import names
from majordomus.errors import EnvironmentProblem
from majordomus.workspace import Workspace

FORMAT_PATH = "format"
FORMAT = b"majordomus-state 1\n"
RECORD_DIRS = {"handoffs": "handoff", "checkpoints": "checkpoint"}
DIRS = ("tasks", "handoffs", "checkpoints")
# Far above anything majordomus writes (a 64 KiB handoff plus its front matter): a bigger entry from a
# remote is refused rather than imported.
MAX_ENTRY_BYTES = 4 * 1024 * 1024
BLOB = int(git.BLOB_MODES[0])
UNREADABLE = "unreadable"  # a disk oid that matches no blob: the local file could not be used


@dataclass
class Side:
    """One side of a merge: its entries, and the contents already in memory (read from disk or checked)."""

    entries: dict[str, git.Entry]
    data: dict[str, bytes] = field(default_factory=dict)
    disk: dict[str, str] = field(default_factory=dict)  # task path -> blob id of the file as it was on disk

    def read(self, repo: git.Repo, path: str) -> bytes:
        if path not in self.data:
            self.data[path] = git.read_blob(repo, self.entries[path].oid)
        return self.data[path]


@dataclass
class Refusal:
    path: str
    reason: str
    side: str = "remote"  # or "local": a record here that will not be shared


@dataclass
class Conflict:
    task: str
    kept: str  # "local" or "remote"
    local_updated_at: Optional[str]
    remote_updated_at: Optional[str]
    local_sha256: str
    remote_sha256: str


@dataclass
class Plan:
    entries: dict[str, git.Entry]
    data: dict[str, bytes]
    refused: list[Refusal] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)


def check_record(directory: str, name: str, data: bytes) -> Optional[str]:
    """Why a record may not be imported, or None: its name's digest must be its content's."""
    digest = records.name_digest(name)
    if digest is None:
        return "not a record name"
    if len(data) > MAX_ENTRY_BYTES:
        return f"{len(data)} bytes, over the {MAX_ENTRY_BYTES}-byte bound"
    actual = records.sha256(data)
    if actual[:16] != digest:
        return f"its content does not match its name (the name says {digest}, the content hashes to {actual[:16]})"
    try:
        meta, _body = records.split(data)
    except Exception as exc:  # noqa: BLE001 - whatever a remote sends, unreadable is a refusal, not a crash
        return f"its front matter is unreadable ({exc})"
    if meta.get("kind") != RECORD_DIRS[directory]:
        return f"a record of kind `{meta.get('kind')}` does not belong in {directory}/"
    return None


def check_task(name: str, data: bytes) -> Optional[str]:
    """Why a task record may not be imported, or None."""
    task_id = name[: -len(".yaml")] if name.endswith(".yaml") else ""
    if not names.is_task_id(task_id):
        return "not a task record name"
    if len(data) > MAX_ENTRY_BYTES:
        return f"{len(data)} bytes, over the {MAX_ENTRY_BYTES}-byte bound"
    try:
        task = tasks.Task.from_dict(records.parse_yaml(data.decode("utf-8")))
        clock.parse(task.updated_at)
    except Exception as exc:  # noqa: BLE001 - whatever a remote sends, unreadable is a refusal, not a crash
        return f"unreadable ({exc})"
    if task.id != task_id:
        return f"it names task `{task.id}`, not `{task_id}`"
    if task.status not in tasks.STATUSES:
        return f"unknown status `{task.status}`"
    for key, directory in (("checkpoint", "checkpoints"), ("handoff", "handoffs")):
        pointer = getattr(task, key)
        if pointer is not None and not names.is_record_pointer(pointer, directory):
            return f"its `{key}` is not a record in {directory}/"
    return None


def check_entry(repo: git.Repo, side: Side, path: str) -> Optional[str]:
    entry = side.entries[path]
    if not entry.is_blob:
        return "not a regular file"
    directory, _, name = path.partition("/")
    data = side.read(repo, path)
    return check_task(name, data) if directory == "tasks" else check_record(directory, name, data)


def _names(directory: str) -> list[str]:
    try:
        if stat.S_ISLNK(os.lstat(directory).st_mode):
            raise EnvironmentProblem(f"{directory} is a symbolic link; majordomus never follows links inside its state",
                                     "replace the link with a real directory (move its contents in)")
        return sorted(e.name for e in os.scandir(directory) if not e.name.startswith(".") and e.is_file(follow_symlinks=False))
    except FileNotFoundError:
        return []


def _read(path: str, rel: str, skipped: list[Refusal]) -> Optional[bytes]:
    try:
        return safeio.read(path)
    except OSError as exc:
        skipped.append(Refusal(rel, f"unreadable here ({exc.strerror})", side="local"))
        return None


def snapshot(ws: Workspace, base: dict[str, git.Entry], *, checkpoints: bool, write: bool) -> tuple[Side, list[Refusal]]:
    """`base` (the last synced tree) with what this machine holds now on top; writes blobs when `write`."""
    entries = dict(base)
    side = Side(entries=entries)
    skipped: list[Refusal] = []
    put = (lambda data: git.write_blob(ws.repo, data)) if write else git.blob_id
    for name in _names(ws.paths.tasks):
        if not name.endswith(".yaml"):
            continue
        path = f"tasks/{name}"
        data = _read(os.path.join(ws.paths.tasks, name), path, skipped)
        reason = None if data is None else check_task(name, data)
        if data is None or reason:
            side.disk[path] = UNREADABLE  # never replaced by a sync: the user sees the refusal and decides
            if reason:
                skipped.append(Refusal(path, reason, side="local"))
            continue
        oid = git.blob_id(data)
        side.disk[path] = oid
        side.data[path] = data
        if path not in entries or entries[path].oid != oid:
            entries[path] = git.Entry(put(data), BLOB)
    for directory in ("handoffs", "checkpoints") if checkpoints else ("handoffs",):
        for name in _names(os.path.join(ws.paths.root, directory)):
            path = f"{directory}/{name}"
            if path in entries or records.name_digest(name) is None:
                continue  # content-named: the same name is the same record
            data = _read(os.path.join(ws.paths.root, directory, name), path, skipped)
            if data is None:
                continue
            reason = check_record(directory, name, data)
            if reason:
                skipped.append(Refusal(path, reason, side="local"))
                continue
            entries[path] = git.Entry(put(data), BLOB)
            side.data[path] = data
    entries[FORMAT_PATH] = git.Entry(put(FORMAT), BLOB)
    return side, skipped


def _version(data: bytes) -> tuple[str, str]:
    """What orders two versions of a task: `updated_at`, then the content digest (same answer everywhere)."""
    try:
        updated = str(records.parse_yaml(data.decode("utf-8")).get("updated_at") or "")
    except Exception:  # noqa: BLE001 - an unreadable version orders first and loses
        updated = ""
    return updated, records.sha256(data)


def merge(repo: git.Repo, base: dict[str, git.Entry], ours: Side, theirs: Side) -> Plan:
    """The union of both sides' records and the three-way merge of their task records."""
    plan = Plan(entries={}, data={})

    def keep(side: Side, path: str) -> None:
        plan.entries[path] = side.entries[path]
        if path in side.data:
            plan.data[path] = side.data[path]

    for path in sorted(set(ours.entries) | set(theirs.entries)):
        directory = path.partition("/")[0]
        if path == FORMAT_PATH:
            continue
        if "/" not in path or directory not in DIRS:
            # Written by a newer majordomus of the same format: carried along, never imported.
            plan.entries[path] = theirs.entries.get(path) or ours.entries[path]
            continue
        mine, other = ours.entries.get(path), theirs.entries.get(path)
        if other is None or (mine is not None and mine.oid == other.oid):
            keep(ours, path)
            continue
        if directory == "tasks" and mine is not None:
            before = base.get(path)
            if before is not None and before.oid == other.oid:
                keep(ours, path)  # only this side changed it
                continue
        reason = check_entry(repo, theirs, path)
        if reason:
            plan.refused.append(Refusal(path, reason))
            if mine is not None:
                keep(ours, path)
            continue
        if mine is None:
            keep(theirs, path)
        elif directory != "tasks":
            keep(ours, path)  # a name holds one content; ours was checked when it was stored
        elif (before := base.get(path)) is not None and before.oid == mine.oid:
            keep(theirs, path)  # only the other side changed it
        else:
            _both_changed(repo, plan, path, ours, theirs, keep)
    plan.entries[FORMAT_PATH] = theirs.entries.get(FORMAT_PATH) or ours.entries[FORMAT_PATH]
    return plan


def _both_changed(repo: git.Repo, plan: Plan, path: str, ours: Side, theirs: Side,
                  keep: Callable[[Side, str], None]) -> None:
    local, remote = _version(ours.read(repo, path)), _version(theirs.read(repo, path))
    kept = "remote" if remote > local else "local"
    keep(theirs if kept == "remote" else ours, path)
    plan.conflicts.append(Conflict(
        task=path[len("tasks/"):-len(".yaml")], kept=kept,
        local_updated_at=local[0] or None, remote_updated_at=remote[0] or None,
        local_sha256=local[1], remote_sha256=remote[1],
    ))
