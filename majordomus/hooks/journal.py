"""The compaction journal's tolerant replay (design §12), for `context status`: generation, pending, last.

Writing lives in `compact`, which must stay light; this module only reads what it wrote.
"""

from __future__ import annotations

from typing import Any

from majordomus import tasks
from majordomus.hooks.compact import PHASES, WHITELIST
from majordomus.lite import jsonbound, safeio

TRIGGERS = ("manual", "auto")
MAX_BYTES = 64 << 20  # rotation keeps each file near journal.rotate_bytes; far past it is not ours


def _lines(path: str) -> list[bytes]:
    data = safeio.read_optional(path, MAX_BYTES)
    return [] if data is None else data.split(b"\n")


def _event(line: bytes) -> dict[str, Any] | None:
    """A valid journal event, normalised; None for a torn or foreign line."""
    try:
        obj = jsonbound.loads(line)
    except ValueError:
        return None
    if not (isinstance(obj, dict) and isinstance(obj.get("phase"), str) and isinstance(obj.get("runtime"), str)):
        return None  # what follows looks them up in tables: a list or an object is no key
    if obj["phase"] not in PHASES or obj["runtime"] not in WHITELIST:
        return None
    if not isinstance(obj.get("at"), str):
        return None
    trigger = obj.get("trigger")
    event = {"at": obj["at"], "phase": obj["phase"], "runtime": obj["runtime"],
             "trigger": trigger if trigger in TRIGGERS else "unknown",
             "_raw_trigger": trigger if isinstance(trigger, str) else None}
    for key in ("session_id", "agent_id", "agent_type", "turn_id", "prompt_id", "model", "parseError"):
        value = obj.get(key)
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            event[key] = value if isinstance(value, str) else str(value)
    return event


def _stream(event: dict[str, Any]) -> tuple[Any, ...]:
    """One session (or one subagent of it): its compactions happen one after the other."""
    return (event["runtime"], event.get("session_id"), event.get("agent_id"))


def _dedupe_key(event: dict[str, Any]) -> tuple[Any, ...]:
    keys = ("phase", "turn_id", "prompt_id", "_raw_trigger", "parseError")
    return _stream(event) + tuple(event.get(k) for k in keys)


def replay(current: str, rotated: str) -> dict[str, Any]:
    """Reduce `rotated` (the `.1` file) then `current` to generation, pending and last_completed.

    Duplicates first: a line whose dedupe key (runtime, session, agent, phase, turn/prompt id,
    trigger) equals the previous line's of the same session is the same event written twice (a hook
    registered in two settings files, a runtime that retried it) and is merged. Then each session's
    events pair up in order: a `post` completes a compaction (generation + 1) whether or not its `pre`
    was recorded; a `pre` followed by another `pre` was abandoned; a `pre` still open at the end is
    pending, which is a normal state (a compaction in progress, or Claude Code re-injecting before
    PostCompact), not an error.
    """
    previous: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    open_pre: dict[tuple[Any, ...], dict[str, Any]] = {}
    # The order is the order of importance: `context status` prints the keys as they come.
    result: dict[str, Any] = {
        "generation": 0, "pending": 0, "last_completed": None, "dropped_lines": 0, "duplicates": 0,
        "abandoned": 0, "completed_without_pre": 0, "parse_errors": 0, "events": 0,
        "triggers": {"manual": 0, "auto": 0, "unknown": 0}, "open": [],
    }
    for path in (rotated, current):
        for line in _lines(path):
            if not line.strip():
                continue
            event = _event(line)
            if event is None:
                result["dropped_lines"] += 1
                continue
            stream, key = _stream(event), _dedupe_key(event)
            if previous.get(stream) == key:
                result["duplicates"] += 1
                continue
            previous[stream] = key
            result["events"] += 1
            if "parseError" in event:
                result["parse_errors"] += 1
            if event["phase"] == "pre":
                if stream in open_pre:
                    result["abandoned"] += 1
                open_pre[stream] = event
                continue
            started = open_pre.pop(stream, None)
            if started is None:
                result["completed_without_pre"] += 1
            result["generation"] += 1
            result["triggers"][event["trigger"]] += 1
            done = {k: v for k, v in event.items() if k not in ("phase", "parseError", "_raw_trigger")}
            done["started_at"] = started["at"] if started else None
            result["last_completed"] = done
    result["open"] = sorted(({k: v for k, v in e.items() if k not in ("phase", "_raw_trigger")}
                             for e in open_pre.values()),
                            key=lambda e: e["at"])
    result["pending"] = len(result["open"])
    return result


def status(ws: Any, task_id: str | None = None) -> dict[str, Any]:
    """The compaction status of a task (default: the active one here), for `context status`."""
    if task_id is None:
        task_id = tasks.active(ws).id
    result = replay(ws.paths.journal(task_id), ws.paths.journal_rotated(task_id))
    result["journal"] = ws.display(ws.paths.journal(task_id))
    return result


def summary(result: dict[str, Any]) -> str:
    """One line for people: `generation 2, pending 0, last completed … (auto, claude), …`."""
    parts = [f"generation {result['generation']}", f"pending {result['pending']}"]
    last = result.get("last_completed")
    if last:
        parts.append(f"last completed {last['at']} ({last['trigger']}, {last['runtime']})")
    for key, one, many in (("dropped_lines", "dropped line", "dropped lines"),
                           ("duplicates", "duplicate merged", "duplicates merged"),
                           ("abandoned", "abandoned", "abandoned"),
                           ("parse_errors", "unparsed payload", "unparsed payloads")):
        count = result.get(key) or 0
        if count:
            parts.append(f"{count} {one if count == 1 else many}")
    return ", ".join(parts)
