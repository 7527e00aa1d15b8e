"""What this machine holds, as edits of its last pushed tree: only entries the tree lacks are read, checked
and written, so a push costs what changed, not what is stored (SPEC §13).

Task records are few and mutable: each is read and compared by blob id. Records are immutable and named
by their digest: a name the tree holds is the same record, and the names of a directory listing are
looked up bucket by bucket in the tree, without reading a file that is already shared.
"""

from __future__ import annotations

import os
import stat
from typing import Optional

from majordomus.errors import EnvironmentProblem
from majordomus.git import odb as git
from majordomus.lite import names, safeio
from majordomus.sync import layout, rules
from majordomus.sync.layout import ALWAYS, DIRS, ON_REQUEST, Refusal
from majordomus.tasks import MAX_BYTES as TASK_MAX_BYTES
from majordomus.workspace import Workspace


def local_names(directory: str) -> list[str]:
    """Regular files of a store directory (no dot files, no links); a linked directory is exit 12."""
    try:
        if stat.S_ISLNK(os.lstat(directory).st_mode):
            raise EnvironmentProblem(f"{directory} is a symbolic link; majordomus never follows links inside its state",
                                     "replace the link with a real directory (move its contents in)")
        return [e.name for e in os.scandir(directory) if not e.name.startswith(".") and e.is_file(follow_symlinks=False)]
    except FileNotFoundError:
        return []


def read_local(path: str, rel: str, limit: int, refused: list[Refusal]) -> Optional[bytes]:
    try:
        return safeio.read(path, limit)
    except FileNotFoundError:
        return None
    except EnvironmentProblem as exc:
        refused.append(Refusal(rel, exc.message, side="local"))
    except OSError as exc:
        refused.append(Refusal(rel, f"unreadable here ({exc.strerror})", side="local"))
    return None


class Edits:
    """The snapshot's edits of the previous tree; with `dry`, blob ids are computed and nothing is written."""

    def __init__(self, ws: Workspace, base: Optional[str], dry: bool) -> None:
        self.ws = ws
        self.writer = git.TreeWriter(ws.repo, base)
        self.dry = dry
        self.sent = {d: 0 for d in DIRS}
        self.added: list[tuple[str, str]] = []  # (path as the store names it, blob id)
        self.refused: list[Refusal] = []

    def put(self, path: tuple[str, ...], data: bytes) -> None:
        oid = git.blob_id(data) if self.dry else git.write_blob(self.ws.repo, data)
        self.writer.put(path, git.Entry(oid, git.BLOB))
        self.sent[path[0]] += 1
        self.added.append((f"{path[0]}/{path[-1]}", oid))


def _tasks(ws: Workspace, previous: Optional[git.TreeView], edits: Edits) -> None:
    refused = edits.refused
    held = previous.sub("tasks") if previous is not None else None
    for name in sorted(local_names(ws.paths.tasks)):
        if not name.endswith(".yaml"):
            continue
        rel = f"tasks/{name}"
        data = read_local(os.path.join(ws.paths.tasks, name), rel, TASK_MAX_BYTES, refused)
        if data is None:
            continue
        reason = rules.check_task(name, data)
        if reason is not None:
            refused.append(Refusal(rel, reason, side="local"))
            continue
        if held is not None and held.get(name) == git.Entry(git.blob_id(data), git.BLOB):
            continue
        edits.put(("tasks", name), data)


def _records(ws: Workspace, directory: str, previous: Optional[git.TreeView], edits: Edits) -> None:
    refused = edits.refused
    full = os.path.join(ws.paths.root, directory)
    groups: dict[tuple[str, str], list[str]] = {}
    for name in local_names(full):
        parsed = names.RecordName.parse(name)
        if parsed is not None:  # anything else in the directory is not a record (doctor's to report)
            groups.setdefault(layout.month_bucket(parsed), []).append(name)
    top = previous.sub(directory) if previous is not None else None
    months: dict[str, Optional[git.TreeView]] = {}
    for (month, bucket), found in sorted(groups.items()):
        if month not in months:
            months[month] = top.sub(month) if top is not None else None
        held = months[month].sub(bucket) if months[month] is not None else None  # type: ignore[union-attr]
        for name in found:
            if held is not None and name in held:
                continue
            rel = f"{directory}/{name}"
            data = read_local(os.path.join(full, name), rel, rules.MAX_RECORD_BYTES, refused)
            if data is None:
                continue
            reason = rules.check_record(directory, name, data, ws.config)
            if reason is not None:
                refused.append(Refusal(rel, reason, side="local"))
                continue
            edits.put((directory, month, bucket, name), data)


def snapshot(ws: Workspace, previous: Optional[git.Commit], checkpoints: bool, *, dry: bool = False) -> Edits:
    """Edits that bring `previous` (this machine's last commit) up to the store: what they send, and the local
    entries that will not be shared, with why. `dry` writes no object (for `sync status`)."""
    view = git.tree(ws.repo, previous.tree) if previous is not None else None
    edits = Edits(ws, view.oid if view is not None else None, dry)
    if view is None and not dry:
        edits.writer.put((layout.FORMAT_PATH,), git.Entry(git.write_blob(ws.repo, layout.FORMAT), git.BLOB))
    _tasks(ws, view, edits)
    for directory in ALWAYS + (ON_REQUEST if checkpoints else ()):
        _records(ws, directory, view, edits)
    return edits
