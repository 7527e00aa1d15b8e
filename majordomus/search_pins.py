"""The pins a search reads (design §22): a task's continuity exactly as `continuity.load` trusts it.

`continuity` is the module that writes continuity, and loading it loads what writing needs (tasks, the
ledger, hashlib's OpenSSL): a tenth of a whole search of 10,000 records. Here the common case — a document
its writers left intact — is checked with the same rules (every key, every pin's fields, the task, the
sha256 of its canonical form), and only a document that fails any of them goes to `continuity.load`,
which reads it again and says what is wrong in its own words. A test holds the two to the same answer.
"""

from __future__ import annotations

import json
import os

from majordomus import continuity_doc, search_query
from majordomus.errors import EnvironmentProblem, UsageError
from majordomus.lite import jsonbound, names, safeio, statepaths

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from majordomus.search_listing import Row
    from majordomus.search_query import Query
    from majordomus.workspace import Workspace

def path_of(ws: Workspace, task_id: str) -> str:
    return os.path.join(ws.paths.context_dir(task_id), continuity_doc.FILE)


def load(ws: Workspace, task_id: str) -> dict[str, Any] | None:
    """`continuity.load(ws, task_id)`: the trusted document, None when there is none; EnvironmentProblem
    (continuity's `Broken`, or an unsafe file) when it cannot be trusted."""
    try:
        raw = safeio.read(path_of(ws, task_id), int(ws.config.get("continuity", "max_bytes")))
        doc = jsonbound.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        return None
    except (EnvironmentProblem, OSError, ValueError):  # UnicodeDecodeError and bad JSON included
        doc = None
    if doc is not None and intact(doc, task_id, int(ws.config.get("continuity", "pin_max_bytes"))):
        return doc  # type: ignore[no-any-return]
    from majordomus import continuity

    return continuity.load(ws, task_id)


def intact(doc: Any, task_id: str, pin_max_bytes: int) -> bool:
    """Whether `continuity.examine` finds nothing wrong with `doc`, the parsed continuity of `task_id`: the
    same rules (continuity_doc's), and the same hash of the same canonical form."""
    if continuity_doc.schema_findings(doc, task_id) or continuity_doc.field_findings(doc, pin_max_bytes):
        return False
    from majordomus.lite.sha import hexdigest

    canonical = json.dumps({k: v for k, v in doc.items() if k != "integrity"}, sort_keys=True,
                           separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return bool(hexdigest(canonical) == doc["integrity"]["sha256"])


def hits(ws: Workspace, query: Query, task: str | None, skipped: list[str]) -> list[tuple[str, Row]]:
    """(sort key, row) of every matching pin: pins are few, so they are gathered, then merged in."""
    # A link where `context/` or a `context/ID/` belongs is refused (exit 12, naming it), as every reader
    # of a state directory refuses it (statepaths.readable_dir): nothing is read through it.
    if not statepaths.readable_dir(ws.paths, ws.paths.contexts):
        return []
    ids = [n for n in sorted(os.listdir(ws.paths.contexts))
           if names.is_task_id(n) and statepaths.is_real_dir(ws.paths.context_dir(n))]
    out = []
    for task_id in ids:
        if task is not None and task_id != task:
            continue
        try:
            doc = load(ws, task_id)  # as continuity.load trusts it
        except EnvironmentProblem as exc:
            skipped.append(f"the pins of `{task_id}`: {exc.message}")
            continue
        shown = ws.display(path_of(ws, task_id))
        for key in continuity_doc.PIN_KEYS:
            for pin in (doc or {}).get(key, []):
                try:
                    line = query.line(pin["text"])
                except UsageError as exc:  # -E past its deadline (regexbound.TooSlow): where
                    raise search_query.where(exc, f"a pin in {shown}") from None
                if line is not None:
                    at = str(pin["createdAt"])
                    out.append((at.replace("-", "").replace(":", ""), (task_id, "pin", at, shown, line)))
    out.sort(key=lambda pair: pair[0], reverse=True)
    return out
