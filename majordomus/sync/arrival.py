"""The order in which a pull brings records in (design §9, §13): what "since the handoff" means for imported
records. The records of one pull arrive together, so their order is decided by what they say, never by the
times their clocks wrote: each handoff after the checkpoints it lists and after its previous handoff, and a
checkpoint that no handoff of the pull lists after every handoff of it (it was written since, or alongside
on another machine: shown, never hidden). The ledger's `sync.import` events and each task's index keep it."""

from __future__ import annotations

from typing import Any

from majordomus.lite import names
from majordomus.store import listing, records
from majordomus.sync.plan import RecordIn
from majordomus.workspace import Workspace


def _meta(item: RecordIn) -> dict[str, Any]:
    try:
        return records.split(item.data)[0]
    except (ValueError, UnicodeDecodeError):  # passed the rules already; an unreadable one keeps its place
        return {}


def order(items: list[RecordIn], latest: frozenset[str] = frozenset()) -> list[RecordIn]:
    """`items` in the order they arrive: runs and other records first, as planned; then, per the handoffs'
    chain (a handoff after its previous one), each handoff after the checkpoints it lists; the checkpoints
    that no handoff of the pull lists last, as planned. Within one second, where the names cannot tell,
    the checkpoint a task record points at (`latest`: its newest, as it says) comes after the others."""
    # The plan lists records as the remote's trees hold them (by digest within a month): by time first, so
    # that within each place records come oldest first, as their names say.
    items = sorted(items, key=lambda i: i.name[:listing.SECOND] if i.directory in ("checkpoints", "runs") else "")
    handoffs = {f"handoffs/{i.name}": i for i in items if i.directory == "handoffs"}
    if not handoffs:
        return _latest_last(items, latest)
    metas = {rel: _meta(item) for rel, item in handoffs.items()}

    depths: dict[str, int] = {}

    def depth(rel: str) -> int:
        """How many handoffs of this pull come before `rel` by `previous_handoff`: walked, not recursed (a
        pulled chain can be thousands long), each handoff once, a loop cut where it closes."""
        path: list[str] = []
        on_path: set[str] = set()
        while rel not in depths and rel in metas and rel not in on_path:
            path.append(rel)
            on_path.add(rel)
            previous = metas[rel].get("previous_handoff")
            rel = str(previous) if isinstance(previous, str) else ""
        below = depths.get(rel, -1) if rel not in on_path else -1
        for step in reversed(path):
            below += 1
            depths[step] = below
        return depths.get(path[0], below) if path else depths.get(rel, 0)

    chain = sorted(handoffs, key=lambda rel: (depth(rel), rel))
    place: dict[str, int] = {}
    for rank, rel in enumerate(chain):
        place[rel] = 2 * rank + 1
        for listed in metas[rel].get("checkpoints") or []:
            if isinstance(listed, str):
                place.setdefault(listed, 2 * rank)
    last = 2 * len(chain)

    def place_of(item: RecordIn) -> int:
        rel = f"{item.directory}/{item.name}"
        if item.directory == "handoffs":
            return place[rel]
        if item.directory == "checkpoints":
            return place.get(rel, last)
        return -1

    return _latest_last(sorted(items, key=place_of), latest)  # stable: the plan's order within each place


def _latest_last(items: list[RecordIn], latest: frozenset[str]) -> list[RecordIn]:
    """`items`, each record a task points at moved after the others of its second that come right before it."""
    if not latest:
        return items
    out = list(items)
    for item in items:
        if f"{item.directory}/{item.name}" not in latest:
            continue
        at = out.index(item)
        end = at
        while end + 1 < len(out) and out[end + 1].directory == item.directory \
                and out[end + 1].name[:listing.SECOND] == item.name[:listing.SECOND]:
            end += 1
        out.insert(end, out.pop(at))
    return out


def pointers(tasks: list[Any]) -> frozenset[str]:
    """The records the task records of a pull point at as their newest (`checkpoint`, `handoff`)."""
    found: set[str] = set()
    for task in tasks:
        try:
            meta = records.parse_yaml(task.data.decode("utf-8"))
        except Exception:  # refused or reported by the rules already: no pointer to take
            continue
        found.update(str(meta[key]) for key in ("checkpoint", "handoff") if isinstance(meta.get(key), str))
    return frozenset(found)


def stamp_in_order(ws: Workspace, arrived: list[RecordIn]) -> None:
    """Records of one second arrived in parallel: their modification times, by which a listing orders what
    their names cannot tell (`listing.ordered`), are set in the order they arrive. Best effort."""
    import os
    import time

    seconds: dict[tuple[str, str], int] = {}
    for item in arrived:
        key = (item.directory, item.name[:listing.SECOND])
        seconds[key] = seconds.get(key, 0) + 1
    base = time.time_ns()
    for n, item in enumerate(arrived):
        if seconds[(item.directory, item.name[:listing.SECOND])] > 1:
            try:
                os.utime(os.path.join(ws.paths.directory(item.directory), item.name), ns=(base + n, base + n),
                         follow_symlinks=False)
            except OSError:
                pass


def index(ws: Workspace, arrived: list[RecordIn]) -> None:
    """Append what arrived (in that order) to each task's index that exists here. Best effort, as a local
    write's append: a task without an index is briefed from the ledger's `sync.import` events."""
    entries: dict[str, list[str]] = {}
    for item in arrived:
        entry = listing.entry_of(f"{item.directory}/{item.name}")
        if entry is not None and item.task is not None and names.is_task_id(item.task):
            entries.setdefault(item.task, []).append(entry)
    for task_id, found in entries.items():
        listing.add_names(listing.index_path(ws, task_id), found)
