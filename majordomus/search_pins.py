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

from majordomus.errors import EnvironmentProblem
from majordomus.lite import jsonbound, safeio

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from majordomus.workspace import Workspace

FILE = "continuity.json"  # continuity.FILE
PIN_KEYS = ("decisions", "constraints", "openItems", "nextActions")  # continuity.PIN_KEYS
SOURCES = ("principal", "agent", "execution")  # continuity.SOURCES
KEYS = ("version", "task", "configHash", "runtime", "createdAt", "updatedAt", "objective") + PIN_KEYS
PIN_FIELDS = ("id", "text", "source", "createdAt")


def path_of(ws: Workspace, task_id: str) -> str:
    return os.path.join(ws.paths.context_dir(task_id), FILE)


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
    if doc is not None and intact(doc, task_id):
        return doc  # type: ignore[no-any-return]
    from majordomus import continuity

    return continuity.load(ws, task_id)


def intact(doc: Any, task_id: str) -> bool:
    """Whether `continuity.examine` finds nothing wrong with `doc`, the parsed continuity of `task_id`."""
    if not isinstance(doc, dict) or not all(key in doc for key in KEYS) or doc["task"] != task_id:
        return False
    if not isinstance(doc["objective"], str):
        return False
    for key in PIN_KEYS:
        pins = doc[key]
        if not isinstance(pins, list):
            return False
        for pin in pins:
            if not (isinstance(pin, dict) and all(isinstance(pin.get(k), str) for k in PIN_FIELDS)
                    and pin["source"] in SOURCES):
                return False
    integrity = doc.get("integrity")
    if not isinstance(integrity, dict) or not isinstance(integrity.get("sha256"), str):
        return False
    canonical = json.dumps({k: v for k, v in doc.items() if k != "integrity"}, sort_keys=True,
                           separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return bool(_sha256()(canonical).hexdigest() == integrity["sha256"])


def _sha256() -> Callable[[bytes], Any]:
    """sha256 from the interpreter's own module (`_sha2`, before 3.12 `_sha256`), else hashlib's."""
    for name in ("_sha2", "_sha256"):
        try:
            return __import__(name).sha256  # type: ignore[no-any-return]
        except (ImportError, AttributeError):
            continue
    import hashlib

    return hashlib.sha256
