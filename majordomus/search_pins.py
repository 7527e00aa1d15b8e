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

from majordomus import continuity_doc
from majordomus.errors import EnvironmentProblem
from majordomus.lite import jsonbound, safeio

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

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
