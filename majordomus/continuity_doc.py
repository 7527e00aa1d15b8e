"""The continuity document (design §8): its keys and sections, and what its only writers could ever have
stored in it, checked at every read (the integrity hash is unkeyed: anyone can recompute it)."""

from __future__ import annotations

from majordomus import clock
from majordomus.lite import names, textrules

TYPE_CHECKING = False  # on the session-start path: typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any


VERSION = 1
FILE = "continuity.json"
RENDERED = "continuity.md"
KINDS = {"decision": "decisions", "constraint": "constraints", "open-item": "openItems", "next-action": "nextActions"}
SOURCES = ("principal", "agent", "execution")
# The render's fixed order, and the order in which an over-budget render gives things up: a stale next
# action is the cheapest thing to lose, a settled decision the dearest (forgetting it reopens a debate).
SECTIONS = (("objective", "Objective"), ("decisions", "Decisions"), ("constraints", "Constraints"),
            ("openItems", "Open items"), ("nextActions", "Next actions"))
CUT_ORDER = ("nextActions", "openItems", "objective", "constraints", "decisions")
LABELS = {"decisions": "decision", "constraints": "constraint", "openItems": "open item", "nextActions": "next action"}
PIN_KEYS = tuple(KINDS.values())


def schema_findings(doc: Any, task_id: str) -> list[str]:
    if not isinstance(doc, dict):
        return ["the document is not a JSON object"]
    found = []
    for key in ("version", "task", "configHash", "runtime", "createdAt", "updatedAt", "objective") + PIN_KEYS:
        if key not in doc:
            found.append(f"the key `{key}` is missing")
    if doc.get("task", task_id) != task_id:
        found.append(f"it names task `{textrules.escape(str(doc.get('task'))[:40])}`, not `{task_id}`")
    if "objective" in doc and not isinstance(doc["objective"], str):
        found.append("`objective` is not a string")
    for key in PIN_KEYS:
        pins = doc.get(key, [])
        if not isinstance(pins, list) or not all(is_pin(p) for p in pins):
            found.append(f"`{key}` is not a list of pins {{id, text, source, createdAt}}")
    integrity = doc.get("integrity")
    if not isinstance(integrity, dict) or not isinstance(integrity.get("sha256"), str):
        found.append("`integrity.sha256` is missing")
    return found


def field_findings(doc: dict[str, Any], pin_max_bytes: int) -> list[str]:
    """What its only writers could never have stored (design §2a, §8): a pin that is not one sentence by the
    field grammar of `lite.textrules` (no control, line-break, bidi or invisible character; at most
    `continuity.pin_max_bytes`), a pin id or time of another grammar, an objective not collapsed to one line.
    Checked at every read, whatever the integrity hash says: the hash is unkeyed, anyone can recompute it."""
    found = []
    objective = doc["objective"]
    if objective:
        problem = textrules.field_problem(objective, limit=len(objective))
        if problem is not None:
            found.append(f"its objective {problem}; `task start` keeps an objective on one line")
    for key in PIN_KEYS:
        for number, pin in enumerate(doc[key], 1):
            what = f"{LABELS[key]} pin {number}"
            if not names.is_pin_id(pin["id"]):
                found.append(f"the {what} has the id `{textrules.escape(pin['id'][:40])}`, not a pin id")
            elif not clock.is_iso(pin["createdAt"]):
                found.append(f"the {what} (`{pin['id']}`) has `createdAt` "
                             f"`{textrules.escape(pin['createdAt'][:40])}`, not a UTC time")
            else:
                problem = pin_problem(pin["text"], pin_max_bytes)
                if problem is not None:
                    found.append(f"the {what} (`{pin['id']}`) {problem}; `context pin` never stores such a pin")
    return found


def pin_problem(text: str, pin_max_bytes: int) -> str | None:
    """Why `text` is not a pin `pin_text` could have stored, or None; never echoing the text."""
    problem = textrules.field_problem(text, limit=len(text))
    if problem is not None:
        return problem
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return "is not valid UTF-8 (a lone surrogate)"
    if size > pin_max_bytes:
        return f"is {size} bytes; the limit is {pin_max_bytes} (continuity.pin_max_bytes)"
    return None  # the secret patterns are the writer's alone: 50 µs a pin is too dear on every session start


def is_pin(pin: Any) -> bool:
    return (isinstance(pin, dict) and all(isinstance(pin.get(k), str) for k in ("id", "text", "source", "createdAt"))
            and pin["source"] in SOURCES)
