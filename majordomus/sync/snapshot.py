"""What this machine holds, as edits of its last pushed tree: only entries the tree lacks are read, checked
and written, so a push costs what changed, not what is stored (design §13).

Task records are few and mutable: each is read and compared by blob id. Records are immutable and named
by their digest: a name the tree holds is the same record, and the names of a directory listing are
looked up bucket by bucket in the tree, without reading a file that is already shared.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat

from majordomus.errors import EnvironmentProblem
from majordomus.git import odb
from majordomus.lite import jsonbound, names, safeio, statepaths
from majordomus.store import files
from majordomus.sync import layout, rules
from majordomus.sync.layout import ALWAYS, DIRS, ON_REQUEST, Refusal
from majordomus.tasks import MAX_BYTES as TASK_MAX_BYTES
from majordomus.workspace import Workspace


def local_names(directory: str) -> list[str]:
    """Names in a store directory but dot files (temporaries); a linked directory is exit 12. Whatever is
    not a regular file is refused when it is read (safeio), never followed."""
    try:
        if stat.S_ISLNK(os.lstat(directory).st_mode):
            raise EnvironmentProblem(f"{directory} is a symbolic link; majordomus never follows links inside its state",
                                     "replace the link with a real directory (move its contents in)")
        return [name for name in os.listdir(directory) if not name.startswith(".")]
    except FileNotFoundError:
        return []


def read_local(path: str, rel: str, limit: int, refused: list[Refusal]) -> bytes | None:
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

    def __init__(self, ws: Workspace, base: str | None, dry: bool, cache: MonthCache) -> None:
        self.ws = ws
        self.cache = cache
        self.writer = odb.TreeWriter(ws.repo, base)
        self.dry = dry
        self.sent = {d: 0 for d in DIRS}
        self.added: list[tuple[str, str]] = []  # (path as the store names it, blob id)
        self.refused: list[Refusal] = []

    def put(self, path: tuple[str, ...], data: bytes) -> None:
        oid = odb.blob_id(data) if self.dry else odb.write_blob(self.ws.repo, data)
        self.writer.put(path, odb.Entry(oid, odb.BLOB))
        self.sent[path[0]] += 1
        self.added.append((f"{path[0]}/{path[-1]}", oid))


def _tasks(ws: Workspace, previous: odb.TreeView | None, edits: Edits) -> None:
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
        if held is not None and held.get(name) == odb.Entry(odb.blob_id(data), odb.BLOB):
            continue
        edits.put(("tasks", name), data)


def _digest(found: list[str]) -> str:
    return hashlib.sha1("\n".join(sorted(found)).encode("utf-8")).hexdigest()


def _records(ws: Workspace, directory: str, previous: odb.TreeView | None, edits: Edits) -> None:
    """New records of `directory`: a month whose names are the ones pushed last time is not looked at again,
    nor a bucket of the month that changed, so the cost follows what changed, not the size of the store."""
    months: dict[str, list[str]] = {}
    for name in local_names(ws.paths.directory(directory)):
        months.setdefault(name[:6], []).append(name)
    top = previous.sub(directory) if previous is not None else None
    for stamp, found in sorted(months.items()):
        key = f"{directory}/{stamp}"
        digest = _digest(found)
        if edits.cache.same(key, digest):
            edits.cache.keep(key, digest)
            continue
        buckets: dict[str, list[str]] = {}
        for name in found:
            buckets.setdefault(name[-19:-17], []).append(name)  # the digest's first two hex, in a record name
        clean = True
        for bucket, names_ in buckets.items():
            sub_key, sub_digest = f"{key}/{bucket}", _digest(names_)
            if not edits.cache.same(sub_key, sub_digest) and not _month(ws, directory, top, names_, edits):
                clean = False
                continue
            edits.cache.keep(sub_key, sub_digest)
        if clean:
            edits.cache.keep(key, digest)


def _month(ws: Workspace, directory: str, top: odb.TreeView | None, found: list[str], edits: Edits) -> bool:
    """Put the records among `found` the tree lacks; True when every name is a record the tree now holds."""
    clean = True
    buckets: dict[tuple[str, str], odb.TreeView | None] = {}
    for name in found:
        parsed = names.RecordName.parse(name)
        if parsed is None:  # not a record (doctor's to report): never shared
            clean = False
            continue
        month, bucket = layout.month_bucket(parsed)
        if (month, bucket) not in buckets:
            month_view = top.sub(month) if top is not None else None
            buckets[(month, bucket)] = month_view.sub(bucket) if month_view is not None else None
        held = buckets[(month, bucket)]
        if held is not None and name in held:
            continue
        rel = f"{directory}/{name}"
        data = read_local(os.path.join(ws.paths.directory(directory), name), rel, rules.MAX_RECORD_BYTES, edits.refused)
        reason = rules.check_record(directory, name, data, ws.config) if data is not None else "unreadable"
        if reason is not None:
            if data is not None:
                edits.refused.append(Refusal(rel, reason, side="local"))
            clean = False
            continue
        assert data is not None
        edits.put((directory, month, bucket, name), data)
    return clean


class MonthCache:
    """What the last push found of each month (a digest of its names), and of each bucket of the months it
    looked into, valid for the commit it made: a cache in `cache/`, so losing it costs one full look."""

    def __init__(self, ws: Workspace, commit: str | None) -> None:
        self.path = ws.paths.sync_months_cache
        self.old: dict[str, str] = {}
        self.new: dict[str, str] = {}
        try:
            real = statepaths.is_real_dir(os.path.dirname(self.path))  # never read through a linked `cache/`
            data = jsonbound.loads((safeio.read_optional(self.path, 1 << 20) if real else None) or b"{}")
            if commit is not None and data.get("commit") == commit and isinstance(data.get("months"), dict):
                self.old = {str(k): str(v) for k, v in data["months"].items()}
        except (ValueError, OSError, EnvironmentProblem):
            pass

    def same(self, key: str, digest: str) -> bool:
        return self.old.get(key) == digest

    def keep(self, key: str, digest: str) -> None:
        self.new[key] = digest

    def save(self, commit: str) -> None:
        if os.path.isdir(os.path.dirname(self.path)):
            files.write_derived(self.path, json.dumps({"commit": commit, "months": self.new}).encode("utf-8"))


def snapshot(ws: Workspace, previous: odb.Commit | None, checkpoints: bool, *, dry: bool = False) -> Edits:
    """Edits that bring `previous` (this machine's last commit) up to the store: what they send, and the local
    entries that will not be shared, with why. `dry` writes no object (for `sync status`)."""
    view = odb.tree(ws.repo, previous.tree) if previous is not None else None
    edits = Edits(ws, view.oid if view is not None else None, dry,
                  MonthCache(ws, previous.oid if previous is not None else None))
    if view is None and not dry:
        edits.writer.put((layout.FORMAT_PATH,), odb.Entry(odb.write_blob(ws.repo, layout.FORMAT), odb.BLOB))
    _tasks(ws, view, edits)
    for directory in ALWAYS + (ON_REQUEST if checkpoints else ()):
        _records(ws, directory, view, edits)
    return edits
