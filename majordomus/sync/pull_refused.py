"""The ledger's account of what a `sync pull` refused (design §13: "all are in the ledger"), bounded.

A hostile remote may hold thousands of bad entries, and every pull of it refuses them again: one
`sync.refused` event per pull that refused anything, never one per entry. It carries the count, the first
`KEPT` entries (as many as the pull prints, each field cut at `FIELD_CHARS`), and the sha256 of the whole
list as `sync pull --json` prints it, one entry a line, so that the rest can be listed and checked later.
Standard library only: `ledger` and `log` show the event without importing the sync machinery.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

EVENT = "sync.refused"
KEPT = 20  # the entries an event names: the lines the pull prints
FIELD_CHARS = 256  # of a path or a reason: a remote's tree path can be long


def digest(refused: Sequence[Any]) -> str:
    """The sha256 of the whole list: each entry as `--json` lists it, compact JSON with sorted keys, one a line;
    a lone surrogate (a ref name's byte that is not UTF-8, as `surrogateescape` keeps it) is hashed in its
    `surrogatepass` form, so that no name a remote can hold stops the digest."""
    import hashlib

    lines = (json.dumps(vars(r), sort_keys=True, separators=(",", ":"), ensure_ascii=False) for r in refused)
    return hashlib.sha256("\n".join(lines).encode("utf-8", "surrogatepass")).hexdigest()


def fields(remote: str, refused: Sequence[Any]) -> dict[str, Any]:
    """The event's fields, for a pull that refused `refused` (not empty)."""
    kept = []
    for refusal in refused[:KEPT]:
        entry = dict(vars(refusal))  # as `--json` lists it
        for key in ("path", "reason"):
            text = str(entry.get(key, ""))
            entry[key] = text if len(text) <= FIELD_CHARS else text[:FIELD_CHARS - 1] + "…"
        kept.append(entry)
    return {"remote": remote, "count": len(refused), "refused": kept, "sha256": digest(refused)}


def summary(event: dict[str, Any]) -> str:
    """One line for `ledger` and `log`: the count, the first entry, how many more, the digest's start."""
    count = event.get("count")
    kept = event.get("refused")
    first = kept[0] if isinstance(kept, list) and kept and isinstance(kept[0], dict) else {}
    where = f" ({first['ref']})" if isinstance(first.get("ref"), str) else ""
    line = f"{count} entr{'y' if count == 1 else 'ies'} refused from {event.get('remote')}"
    if first:
        line += f": {first.get('path')}{where}: {first.get('reason')}"
    if isinstance(count, int) and count > 1:
        line += f"; and {count - 1} more"
    return line + f" (sha256 {str(event.get('sha256'))[:16]})"
