"""What session-start gave each agent conversation (design §12), and how a conversation is recognised.

One small file (`StatePaths.conversations`): per session id, when it was last given the briefing and a
digest per part of it. A fork continues its parent's conversation — Codex names the parent on the fork
transcript's first line; Claude Code 2.1.332 sends only `seconds_since_last_response`, matched against the
parent's last `session.stop` — and Codex's SessionStart `resume` right after a compaction is recognised
by its transcript's tail. Transcripts are read bounded, as untrusted input.
"""

from __future__ import annotations

import json
import os

from majordomus.lite import jsonbound, safeio

TYPE_CHECKING = False  # on the session-start path: typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any

VALUE_MAX = 256  # a parent id longer than a payload value may be is not one

CONVERSATIONS_KEPT = 32  # conversations remembered; the file stays one small read
MEMORY_MAX = 1 << 20
TRANSCRIPT_HEAD_MAX = 64 << 10  # the first line of a transcript is read up to this, as untrusted input
PAIR_SECONDS = 5  # Codex: SessionStart `resume` then `compact` after a compaction, within about 100 ms


def _cache_is_real(ws: Any) -> bool:
    """True when the state and its cache directory exist as real directories: the memory is never read or
    written through a link on the way (design §2), and a hook never creates the state directory."""
    from majordomus.lite.statepaths import CACHE, is_real_dir
    from majordomus.store import paths

    try:
        return paths.check_readable(ws.paths, CACHE) and is_real_dir(ws.paths.cache)
    except safeio.EnvironmentProblem:
        return False


def load_memory(ws: Any) -> dict[str, Any]:
    if not _cache_is_real(ws):
        return {}  # a memory that cannot be read costs a whole briefing
    try:
        data = jsonbound.loads(safeio.read_optional(ws.paths.conversations, MEMORY_MAX) or b"{}")
    except (ValueError, RecursionError, safeio.EnvironmentProblem):
        return {}
    return data if isinstance(data, dict) else {}


def save_memory(ws: Any, memory: dict[str, Any]) -> None:
    if not _cache_is_real(ws):
        return
    from majordomus.store import files

    kept = dict(list(memory.items())[-CONVERSATIONS_KEPT:])
    files.write_derived(ws.paths.conversations, json.dumps(kept, separators=(",", ":")).encode("utf-8"))


def _read_head(path: Any, limit: int) -> bytes:
    if not isinstance(path, str) or not path:
        return b""
    try:
        fd = safeio.open_regular(path, 1 << 62)
    except (OSError, safeio.EnvironmentProblem):
        return b""
    try:
        return os.read(fd, limit)
    except OSError:
        return b""
    finally:
        os.close(fd)


STOP_TOLERANCE_S = 2.5  # a Stop's recorded second against Claude Code's whole seconds since the response
# With the Stop's own clock kept (`remember_stop`): Claude Code's whole seconds are the time since the answer,
# whole or rounded; the Stop hook runs some milliseconds after the answer.
STOP_EARLY_S, STOP_LATE_S = 0.6, 1.2


def remember_stop(ws: Any, session_id: str, at: float) -> None:
    """When a remembered conversation last answered, to the millisecond (the ledger keeps whole seconds):
    what tells a Claude Code fork's parent from another conversation that answered a second or two apart."""
    memory = load_memory(ws)
    entry = memory.get(session_id)
    if isinstance(entry, dict):
        entry["stopped"] = round(at, 3)
        save_memory(ws, memory)


def stopped_ago(ws: Any, seconds: Any, memory: dict[str, Any]) -> str | None:
    """The remembered conversation whose last answer (its `session.stop` in the ledger) came `seconds`
    ago: how a Claude Code fork is traced to its parent. Claude Code 2.1.332 sends the fork's new session
    id and no parent, and writes the fork's transcript only after SessionStart; what it does send is
    `seconds_since_last_response` of the conversation forked. One match, or None (two sessions that
    answered in the same seconds are not guessed between). The ledger's tail only, bounded."""
    from majordomus import brief, clock

    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds < 1e9:
        return None
    import time

    precise = {sid: time.time() - entry["stopped"] for sid, entry in memory.items()
               if isinstance(entry, dict) and isinstance(entry.get("stopped"), (int, float))
               and not isinstance(entry.get("stopped"), bool)}
    if precise:  # the Stop hook's own times: no second-rounding on this side
        close = [sid for sid, ago in precise.items() if seconds - STOP_EARLY_S <= ago <= seconds + STOP_LATE_S]
        return close[0] if len(close) == 1 else None
    now = clock.now()
    found: set[str] = set()
    seen: set[str] = set()
    for event in brief.ledger_tail(ws, b'"event":"session.stop"'):
        sid = event.get("session_id")
        if event.get("event") != "session.stop" or not isinstance(sid, str) or sid in seen:
            continue
        seen.add(sid)  # newest first: only each session's last answer counts
        ago = age(event.get("at"), now)
        if ago is not None and abs(ago - float(seconds)) <= STOP_TOLERANCE_S and sid in memory:
            found.add(sid)
    return found.pop() if len(found) == 1 else None


def forked_from(transcript_path: Any) -> str | None:
    """The parent session a Codex fork names on its transcript's first line (a `session_meta` whose
    `payload.forked_from_id` is set), read bounded and as untrusted input; None otherwise."""
    head = _read_head(transcript_path, TRANSCRIPT_HEAD_MAX)
    line = head.split(b"\n", 1)[0]
    try:
        meta = jsonbound.loads(line)
    except (ValueError, RecursionError, UnicodeDecodeError):
        return None
    if not isinstance(meta, dict) or meta.get("type") != "session_meta" or not isinstance(meta.get("payload"), dict):
        return None
    parent = meta["payload"].get("forked_from_id")
    return parent if isinstance(parent, str) and 0 < len(parent) <= VALUE_MAX else None


def just_compacted(transcript_path: Any) -> bool:
    """Whether a Codex transcript ends with a compaction (the `resume` it sends right before `compact`):
    of its conversation items (`response_item`) and compactions, the last is `compacted` — Codex 0.171.0
    writes `world_state`, `turn_context` and `event_msg` lines after it. Read bounded from the end."""
    if not isinstance(transcript_path, str) or not transcript_path:
        return False
    try:
        fd = safeio.open_regular(transcript_path, 1 << 62)
    except (OSError, safeio.EnvironmentProblem):
        return False
    try:
        end = os.fstat(fd).st_size
        tail = os.pread(fd, TRANSCRIPT_HEAD_MAX, max(end - TRANSCRIPT_HEAD_MAX, 0))
    except OSError:
        return False
    finally:
        os.close(fd)
    for line in reversed(tail.split(b"\n")[1:] if end > TRANSCRIPT_HEAD_MAX else tail.split(b"\n")):
        if not line.strip():
            continue
        try:
            item = jsonbound.loads(line)
        except (ValueError, RecursionError, UnicodeDecodeError):
            continue
        kind = item.get("type") if isinstance(item, dict) else None
        if kind in ("response_item", "compacted"):  # others (turn_context, world_state, event_msg, …) aside
            return bool(kind == "compacted")
    return False


def age(at: Any, now: Any) -> float | None:
    from majordomus import clock

    try:
        return float((now - clock.parse(str(at))).total_seconds())
    except (ValueError, TypeError):
        return None
