"""What this machine settled on at its last pull and no longer holds (design §13): a record or task record
deleted by hand, or the whole state removed. A pull reads again what it lost, by the same rules as any entry.

Records: the names a pull finds here are grouped by the bucket the layout puts them in, and each bucket's
names are digested. `cache/sync-pull.json` keeps, for the tree of `refs/majordomus/synced`, the digest of
each of its buckets' names here once every record of that bucket was known to be here. A bucket whose
names here are the same as then is not looked at; any other is read from the settled tree (one tree) and
what it holds that is not here is looked up in the refs. So an ordinary pull reads the month trees of the
settled state and the buckets that changed here, never every record; without the cache (the first pull of
this version, or `cache/` removed) every bucket of the settled state is read once (trees only, no file).
Task records are few: the settled ones are compared with the directory each pull.
"""

from __future__ import annotations

import hashlib
import json
import os

from majordomus.errors import EnvironmentProblem
from majordomus.git import odb
from majordomus.lite import jsonbound, safeio, statepaths
from majordomus.store import files
from majordomus.sync import rules
from majordomus.workspace import Workspace


def bucket_key(directory: str, name: str) -> str:
    """`DIR/YYYY-MM/XX` of a record name, as the layout places it (by slicing: a name that is no record
    lands in a bucket that no settled tree has)."""
    return f"{directory}/{name[0:4]}-{name[4:6]}/{name[-19:-17]}"


def _group(names: set[str] | list[str]) -> dict[str, list[str]]:
    """Names by `YYYYMMXX` (month and bucket, sliced): one pass, no call per name (100,000 names: ~0.1 s)."""
    out: dict[str, list[str]] = {}
    for name in names:
        key = name[:6] + name[-19:-17]
        group = out.get(key)
        if group is None:
            out[key] = [name]
        else:
            group.append(name)
    return out


def _short(month: str, bucket: str) -> str:
    return month[:4] + month[5:7] + bucket


def _digest(found: list[str]) -> str:
    return hashlib.sha1("\n".join(sorted(found)).encode("utf-8")).hexdigest()


def _buckets(view: odb.TreeView | None, directory: str) -> list[tuple[str, odb.TreeView, str]]:
    """(month, month tree, bucket) of every bucket of a format-2 tree's `directory` (the month trees only)."""
    top = view.sub(directory) if view is not None else None
    out: list[tuple[str, odb.TreeView, str]] = []
    for month, entry, _raw in top.entries() if top is not None else ():
        month_view = top.sub(month) if month is not None and entry.is_tree and top is not None else None
        for bucket, sub, _rb in month_view.entries() if month_view is not None else ():
            if bucket is not None and sub.is_tree and month is not None and month_view is not None:
                out.append((month, month_view, bucket))
    return out


class Restore:
    """What the pull finds lost here, and the cache that lets the next pull skip what is still here."""

    def __init__(self, ws: Workspace, base: odb.TreeView | None, full: bool) -> None:
        self.ws = ws
        self.base = base  # the settled tree (format 2), or None
        self.full = full  # `sync pull --full`: every entry of every ref is read, the settled tree skips nothing
        self.path = ws.paths.sync_pull_cache
        self.old: dict[str, str] = {}
        self.here: dict[str, dict[str, list[str]]] = {}  # directory -> YYYYMMXX -> names here (as listed)
        self.lost: set[tuple[str, str]] = set()  # (directory, name) settled on and not here
        self.tasks: set[str] = set()  # `ID.yaml` of task records settled on and not here
        try:
            real = statepaths.is_real_dir(os.path.dirname(self.path))  # never read through a linked `cache/`
            data = jsonbound.loads((safeio.read_optional(self.path, 1 << 22) if real else None) or b"{}")
            if base is not None and data.get("tree") == base.oid and isinstance(data.get("buckets"), dict):
                self.old = {str(k): str(v) for k, v in data["buckets"].items()}
        except (ValueError, OSError, EnvironmentProblem):
            pass
        tasks_view = base.sub("tasks") if base is not None else None
        if tasks_view is not None:
            try:
                present = set(os.listdir(ws.paths.tasks))
            except OSError:
                present = set()
            self.tasks = {n for n, _e, _r in tasks_view.entries() if n is not None and n not in present}
            if not present and len(tasks_view):
                self.full = True  # the state was removed (or never was here): read everything again

    def records(self, directory: str, present: set[str]) -> list[str]:
        """Names of `directory` the settled tree holds and this machine does not (none with --full: the
        walk reads everything then)."""
        here = self.here[directory] = _group(present)
        if self.base is None:
            return []
        out: list[str] = []
        for month, month_view, bucket in _buckets(self.base, directory):
            key = f"{directory}/{month}/{bucket}"
            if not self.full and key in self.old and self.old[key] == _digest(here.get(_short(month, bucket), [])):
                continue  # the same names here as when all of it was: nothing lost
            bucket_view = month_view.sub(bucket)
            for held, _leaf, _raw in bucket_view.entries() if bucket_view is not None else ():
                if held is not None and held not in present:
                    out.append(held)
                    self.lost.add((directory, held))
        return [] if self.full else out  # with --full the walk reads every entry of every ref anyway

    def save(self, settled: str | None, imported: list[tuple[str, str]]) -> None:
        """Remember, for the settled commit, the names here of each of its buckets that are all here."""
        found = odb.commit(self.ws.repo, settled) if settled else None
        view = odb.tree(self.ws.repo, found.tree) if found is not None else None
        if settled is None or view is None or not os.path.isdir(os.path.dirname(self.path)):
            return
        missing = {bucket_key(d, n) for d, n in self.lost - set(imported)}
        buckets: dict[str, str] = {}
        for directory in rules.RECORD_KINDS:
            here = self.here.get(directory, {})
            came = _group([n for d, n in imported if d == directory])
            for month, _view, bucket in _buckets(view, directory):
                key, short = f"{directory}/{month}/{bucket}", _short(month, bucket)
                if key not in missing:  # one still missing is looked for again at every pull
                    names = here.get(short, [])
                    buckets[key] = _digest(list(set(names).union(came[short])) if short in came else names)
        data = {"tree": view.oid, "buckets": buckets}
        if not buckets or (self.old == buckets and self.base is not None and self.base.oid == view.oid):
            return  # nothing changed: nothing written
        files.write_derived(self.path, json.dumps(data, sort_keys=True).encode("utf-8"))
