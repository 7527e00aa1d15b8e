"""Folding remote refs into one tree without touching the store: what `sync compact` writes to
`refs/majordomus/state`, what a push writes when its own ref moved under it, and the format-1 state
migrated to format 2. Records are a union, a task keeps its newest version; every entry taken passes the
rules of a local write first, as on a pull.
"""

from __future__ import annotations

from majordomus.git import odb
from majordomus.sync import layout, rules
from majordomus.sync.layout import Refusal
from majordomus.sync.plan import key, read_entry
from majordomus.sync.remote import RemoteRef
from majordomus.tasks import MAX_BYTES as TASK_MAX_BYTES
from majordomus.workspace import Workspace


class Folder:
    """A format-2 tree being built from `base` (a trusted format-2 tree, or None) and the refs folded in."""

    def __init__(self, ws: Workspace, base: odb.TreeView | None) -> None:
        self.ws = ws
        self.base = base
        self.writer = odb.TreeWriter(ws.repo, base.oid if base is not None else None)
        if base is None:
            self.writer.put((layout.FORMAT_PATH,), odb.Entry(odb.write_blob(ws.repo, layout.FORMAT), odb.BLOB))
        self.refused: list[Refusal] = []
        self._records: dict[tuple[str, str], str] = {}
        self._tasks: dict[str, tuple[tuple[str, str], str]] = {}
        self.taken = 0  # entries taken from the refs

    def _refuse(self, ref: RemoteRef, where: str, reason: str) -> None:
        self.refused.append(Refusal(where, reason, ref=ref.name))

    def fold(self, ref: RemoteRef) -> None:
        """Take in what `ref` holds and the tree does not."""
        ws = self.ws
        for directory in rules.RECORD_KINDS:
            walk: list[Refusal] = []
            for found in layout.new_records(ref.view, ref.fmt, self.base, directory, walk):
                at = (directory, found.name)
                if self._records.get(at) == found.entry.oid:
                    continue
                data, reason = read_entry(ws, found.entry, rules.MAX_RECORD_BYTES)
                reason = reason or rules.check_record(directory, found.name, data or b"", ws.config)
                if reason is not None:
                    self._refuse(ref, found.where, reason)
                    continue
                if at in self._records or layout.holds(self.base, directory, found.name) is not None:
                    continue  # one name holds one content; the first valid copy stays
                self._records[at] = found.entry.oid
                self.writer.put(layout.record_path(directory, found.name), odb.Entry(found.entry.oid, odb.BLOB))
                self.taken += 1
            for r in walk:
                self._refuse(ref, r.path, r.reason)
        walk = []
        for task_id, entry, where in layout.task_entries(ref.view, self.base, walk):
            data, reason = read_entry(ws, entry, TASK_MAX_BYTES)
            reason = reason or rules.check_task(f"{task_id}.yaml", data or b"")
            if reason is not None:
                self._refuse(ref, where, reason)
                continue
            assert data is not None
            version = key(data)
            if version > self._task_key(task_id):
                self._tasks[task_id] = (version, entry.oid)
                self.writer.put(("tasks", f"{task_id}.yaml"), odb.Entry(entry.oid, odb.BLOB))
                self.taken += 1
        for r in walk:
            self._refuse(ref, r.path, r.reason)

    def _task_key(self, task_id: str) -> tuple[str, str]:
        if task_id in self._tasks:
            return self._tasks[task_id][0]
        entry = layout.lookup(self.base, ("tasks", f"{task_id}.yaml"))
        data = read_entry(self.ws, entry, TASK_MAX_BYTES)[0] if entry is not None else None
        return key(data) if data is not None else ("", "")

    def write(self) -> str:
        if not self.writer.changed and self.base is not None:
            return self.base.oid
        return self.writer.write()
