"""The shared state as git trees (design §13): where each entry lives, and walks that skip what is known.

Format 2 (this version writes it)::

    format                                   "majordomus-state 2\\n"
    tasks/ID.yaml                            task records (mutable; the newest `updated_at` wins)
    handoffs/YYYY-MM/XX/NAME.md              records, by the month of the timestamp in NAME and the first
    checkpoints/YYYY-MM/XX/NAME.md           two hex digits of its digest: a month that is over never
    runs/YYYY-MM/XX/NAME.md                  changes again, and a new record rewrites one small tree

Format 1 (majordomus before the per-machine layout, read only): `format` is "majordomus-state 1\\n" and records sit flat
in `handoffs/NAME.md`, `checkpoints/NAME.md`. Nothing here trusts a name before the grammar accepted it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from majordomus.git import odb
from majordomus.lite import names, textrules
from majordomus.sync.rules import RECORD_KINDS

FORMAT_PATH = "format"
FORMATS = {b"majordomus-state 1\n": 1, b"majordomus-state 2\n": 2}
FORMAT = b"majordomus-state 2\n"
DIRS = ("tasks", "handoffs", "checkpoints", "runs")
ALWAYS = ("handoffs",)  # records every push shares; checkpoints and runs go with --checkpoints
ON_REQUEST = ("checkpoints", "runs")


class NewerFormat(Exception):
    """A tree written by a newer majordomus: read nothing of it."""


class NotAFormat(NewerFormat):
    """A tree whose `format` file is not one any majordomus writes (garbage, empty, not a file): read nothing."""


@dataclass
class Refusal:
    path: str  # where the entry is (tree path, or the ref's name), for the user
    reason: str
    side: str = "remote"  # or "local": an entry here that will not be shared
    ref: str | None = None  # the remote ref it came from


@dataclass(frozen=True)
class Found:
    """A record entry a walk found: its name (grammar-checked), blob entry and tree path."""

    directory: str
    name: str
    entry: odb.Entry
    where: str


def month_bucket(parsed: names.RecordName) -> tuple[str, str]:
    stamp = parsed.timestamp
    return f"{stamp[0:4]}-{stamp[4:6]}", parsed.digest[:2]


def record_path(directory: str, name: str) -> tuple[str, ...]:
    """The format-2 path of a record whose name the grammar accepted."""
    parsed = names.RecordName.parse(name)
    assert parsed is not None, name
    month, bucket = month_bucket(parsed)
    return directory, month, bucket, name


def format_of(view: odb.TreeView) -> int:
    """1 or 2; raises NewerFormat for `majordomus-state N` above those, NotAFormat for anything else (a
    missing `format` is a format-1 tree)."""
    entry = view.get(FORMAT_PATH)
    if entry is None:
        return 1
    size = odb.blob_size(view.repo, entry.oid)
    data = odb.read_blob(view.repo, entry.oid) if size is not None and size <= 64 else None
    if data in FORMATS:
        return FORMATS[data]
    prefix = b"majordomus-state "
    number = data[len(prefix):-1] if data is not None and data.startswith(prefix) and data.endswith(b"\n") else b""
    if number.isdigit() and len(number) <= 6 and int(number) > max(FORMATS.values()):
        raise NewerFormat((prefix + number).decode("ascii"))
    raise NotAFormat("not a file" if size is None else f"{size} bytes" if data is None else "empty" if not data
                     else textrules.c_quote(data[:40].decode("utf-8", "replace")))


def _shown(parts: list[str], raw: bytes, name: str | None) -> str:
    return "/".join([*parts, name if name is not None else raw.decode("utf-8", "replace")])


def _is_month(name: str | None) -> bool:
    return (name is not None and len(name) == 7 and name[4] == "-" and name[:4].isdigit() and name[5:].isdigit()
            and name.isascii())


def _is_bucket(name: str | None) -> bool:
    return name is not None and len(name) == 2 and all(c in "0123456789abcdef" for c in name)


def new_records(view: odb.TreeView, fmt: int, base: odb.TreeView | None, directory: str,
                refused: list[Refusal]) -> Iterator[Found]:
    """Records of `view` in `directory` that `base` (a format-2 tree) does not hold under the same id.

    Subtrees whose id `base` has at the same path are skipped unread; whatever is not where the layout
    puts it, or not named by the grammar, is refused by its path and never yielded."""
    top_entry = view.get(directory)
    if top_entry is None:
        return
    top = view.sub(directory)
    if top is None:
        refused.append(Refusal(directory, "not a directory"))
        return
    base_top = base.sub(directory) if base is not None else None
    if base_top is not None and base_top.oid == top.oid:
        return
    if fmt == 1:
        yield from _flat(top, base_top, directory, refused)
        return
    for month, entry, raw in top.entries():
        if not _is_month(month) or not entry.is_tree:
            refused.append(Refusal(_shown([directory], raw, month), "not a month directory (YYYY-MM)"))
            continue
        assert month is not None
        base_month = base_top.sub(month) if base_top is not None else None
        if base_month is not None and base_month.oid == entry.oid:
            continue
        month_view = top.sub(month)
        assert month_view is not None
        for bucket, sub, raw_b in month_view.entries():
            if not _is_bucket(bucket) or not sub.is_tree:
                refused.append(Refusal(_shown([directory, month], raw_b, bucket), "not a bucket directory (XX)"))
                continue
            assert bucket is not None
            base_bucket = base_month.sub(bucket) if base_month is not None else None
            if base_bucket is not None and base_bucket.oid == sub.oid:
                continue
            bucket_view = month_view.sub(bucket)
            assert bucket_view is not None
            for name, leaf, raw_n in bucket_view.entries():
                where = _shown([directory, month, bucket], raw_n, name)
                parsed = names.RecordName.parse(name) if name is not None else None
                if parsed is None:
                    refused.append(Refusal(where, "not a record name"))
                    continue
                if name is None or month_bucket(parsed) != (month, bucket):
                    refused.append(Refusal(where, "not where its name puts it"))
                    continue
                if base_bucket is not None and base_bucket.get(name) == leaf:
                    continue
                yield Found(directory, name, leaf, where)


def _flat(top: odb.TreeView, base_top: odb.TreeView | None, directory: str,
          refused: list[Refusal]) -> Iterator[Found]:
    for name, leaf, raw in top.entries():
        where = _shown([directory], raw, name)
        parsed = names.RecordName.parse(name) if name is not None else None
        if parsed is None:
            refused.append(Refusal(where, "not a record name"))
            continue
        assert name is not None
        if base_top is not None and lookup(base_top, record_path(directory, name)[1:]) == leaf:
            continue
        yield Found(directory, name, leaf, where)


def lookup(view: odb.TreeView | None, parts: tuple[str, ...]) -> odb.Entry | None:
    """The entry at `parts` below `view`, or None."""
    for part in parts[:-1]:
        if view is None:
            return None
        view = view.sub(part)
    return view.get(parts[-1]) if view is not None else None


def holds(view: odb.TreeView | None, directory: str, name: str, fmt: int = 2) -> odb.Entry | None:
    """The entry of record `name` in a state tree of either format."""
    if view is None:
        return None
    if fmt == 1:
        return lookup(view, (directory, name))
    return lookup(view, record_path(directory, name))


def task_entries(view: odb.TreeView, base: odb.TreeView | None, refused: list[Refusal],
                 again: frozenset[str] | set[str] = frozenset()) -> Iterator[tuple[str, odb.Entry, str]]:
    """(task id, entry, path) of every task record in `view` whose id `base` does not hold the same way, and
    of those named in `again` (`ID.yaml`: settled on, lost here since) whatever `base` holds."""
    top = view.sub("tasks")
    if top is None:
        if view.get("tasks") is not None:
            refused.append(Refusal("tasks", "not a directory"))
        return
    base_top = base.sub("tasks") if base is not None else None
    if base_top is not None and base_top.oid == top.oid and not again:
        return
    for name, entry, raw in top.entries():
        where = _shown(["tasks"], raw, name)
        task_id = name[: -len(".yaml")] if name is not None and name.endswith(".yaml") else None
        if task_id is None or not names.is_task_id(task_id):
            refused.append(Refusal(where, "not a task record name"))
            continue
        if base_top is not None and base_top.get(name or "") == entry and name not in again:
            continue
        yield task_id, entry, where


def unknown_top(view: odb.TreeView) -> list[str]:
    """Top-level names this version does not read (a newer majordomus of the same format may add some)."""
    return [name or raw.decode("utf-8", "replace") for name, _e, raw in view.entries()
            if name not in DIRS and name != FORMAT_PATH]


def count(view: odb.TreeView | None) -> dict[str, int]:
    """How many task records and records a format-2 tree holds, by directory (lengths of the bucket trees)."""
    out = {d: 0 for d in DIRS}
    if view is None:
        return out
    tasks_view = view.sub("tasks")
    out["tasks"] = len(tasks_view) if tasks_view is not None else 0
    for directory in RECORD_KINDS:
        top = view.sub(directory)
        for _m, month, _r in top.entries() if top is not None else ():
            month_view = odb.tree(view.repo, month.oid) if month.is_tree else None
            for _b, bucket, _rb in month_view.entries() if month_view is not None else ():
                bucket_view = odb.tree(view.repo, bucket.oid) if bucket.is_tree else None
                out[directory] += len(bucket_view) if bucket_view is not None else 0
    return out
