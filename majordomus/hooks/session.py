"""`hook session-start` and `hook stop` (design §12): what an agent session is handed, and its bookkeeping.

Both are fail-open (`majordomus.main` keeps `hook` at exit 0, and these functions catch what they can to
still say something useful). session-start reads identity (the profile text) and continuity (the
briefing) in separate failure domains, so that a broken continuity never costs the identity; it cuts to
the calling runtime's own budget, and on a resumed session it does not inject an unchanged briefing twice.
"""

from __future__ import annotations

import json
import sys

from majordomus.hooks.injection import OTHER_RUNTIMES, build_context, give, other_runtime, short, whole_context
from majordomus.lite import jsonbound
from majordomus.lite.stdin import read_hook_payload
from majordomus.lite.textrules import escape

TYPE_CHECKING = False  # on the session-start path: typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any, BinaryIO


PAYLOAD_MAX = 4 << 20  # a Stop payload carries the final message; more than this is not parsed
_FINAL_MESSAGE_KEYS = ("last_assistant_message", "output", "final_output", "result", "finalMessage")


def read_payload(stream: BinaryIO | None) -> dict[str, Any]:
    """The runtime's JSON object from stdin, or {} for anything else (garbage, empty, too large)."""
    data = read_hook_payload(stream, PAYLOAD_MAX)
    if data is None:
        return {}
    try:
        payload = jsonbound.loads(data)
    except (ValueError, RecursionError):
        return {}
    return payload if isinstance(payload, dict) else {}


class Session:
    """Where a hook runs: the workspace (None outside a git work tree), its task, the problems met."""

    def __init__(self) -> None:
        self.ws: Any = None
        self.task: Any = None
        self.problems: list[str] = []
        self.refused: str | None = None  # git refuses the repository: the one line a hook says


def refused_line(exc: Any) -> str:
    """The one line a hook says in a repository git refuses (`git.run.RepositoryRefused`)."""
    return escape(f"majordomus: {exc.message}; nothing from this repository is given to the agent ({exc.hint})")


def open_session() -> Session:
    from majordomus import tasks
    from majordomus.errors import MajordomusError, NoActiveTask
    from majordomus.workspace import Workspace

    session = Session()
    try:
        session.ws = Workspace.open(lenient_config=True)
    except MajordomusError as exc:
        from majordomus.git.run import RepositoryRefused

        if isinstance(exc, RepositoryRefused):  # nothing from this repository reaches the agent (design §2a)
            session.refused = refused_line(exc)
        return session  # not a git work tree: nothing of ours here, and nothing to say
    from majordomus.store.paths import refuse_shared

    try:
        refuse_shared(session.ws.paths)
    except MajordomusError as exc:  # a state no one here wrote: one line, nothing from it (nor written to it)
        session.refused, session.ws = refused_line(exc), None
        return session
    problem = session.ws.config_problem
    if problem is not None:
        session.problems.append(f"majordomus: {problem.message} ({problem.hint}); the defaults apply meanwhile.")
    try:
        session.task = tasks.active(session.ws)
    except NoActiveTask:
        pass
    except MajordomusError as exc:
        session.problems.append(f"majordomus: cannot read the active task: {exc.message} ({exc.hint})")
    return session


def _record(session: Session, event: str, **fields: Any) -> None:
    """A ledger event where majordomus already keeps state: a hook never creates the state directory, and
    never writes through a link on the way to it (`check_readable` refuses one, naming it)."""
    from majordomus import clock
    from majordomus.store import paths

    ws = session.ws
    if ws is None or not paths.check_readable(ws.paths):
        return
    task_id = session.task.id if session.task is not None else None
    ws.event(event, task_id, clock.now_iso(), **fields)


def _shaped(other: Any, context: str | None, source: str | None) -> str | None:
    """`context` as Gemini CLI or Copilot CLI reads it (None: print nothing)."""
    out: str | None = other.session_start_output(context, source)
    return out


def session_start(stdin: BinaryIO | None, runtime: str = "claude") -> str | None:
    """The JSON to print for SessionStart, or None outside a git work tree."""
    payload = read_payload(stdin)
    other = other_runtime(runtime) if runtime in OTHER_RUNTIMES else None
    if other is not None:
        payload = other.session_fields(payload)
    session = open_session()
    if session.ws is None:
        context = session.refused  # a repository git refuses: one line, nothing from it
        if other is not None:
            return _shaped(other, context, short(payload.get("source")))
        return None if context is None else _output(context)
    from majordomus.git.run import RepositoryRefused

    try:
        try:
            if other is not None and other.inject_whole(short(payload.get("source"))):
                context = whole_context(session, runtime).text  # its resume keeps no earlier context
            else:
                context = give(session, runtime, payload)
        except RepositoryRefused:
            raise
        except Exception as exc:
            sys.stderr.write(f"majordomus: session bookkeeping skipped: {escape(str(exc))}\n")
            context = build_context(session, runtime)
    except RepositoryRefused as exc:  # found only once git ran: the profile read before it goes unsaid too
        context = refused_line(exc)
    try:
        _record(session, "session.start", session_id=short(payload.get("session_id")),
                source=short(payload.get("source")))
    except Exception as exc:
        sys.stderr.write(f"majordomus: session.start not recorded: {escape(str(exc))}\n")
    if other is not None:
        return _shaped(other, context, short(payload.get("source")))
    return _output(context)


def _output(context: str) -> str:
    """What Claude Code and Codex read from a SessionStart hook."""
    return json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}})


# ---------------------------------------------------------------- stop


def final_message_length(payload: dict[str, Any]) -> int | None:
    """Length of the final message (never its text), from the first of the runtimes' names for it."""
    for key in _FINAL_MESSAGE_KEYS:
        value = payload.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            return len(value)
        return len(json.dumps(value, ensure_ascii=False))
    return None


def stop(stdin: BinaryIO | None) -> None:
    """Record `session.stop`; prints nothing to stdout (a Stop hook's stdout can be read as a decision)."""
    payload = read_payload(stdin)
    if "sessionId" in payload and "session_id" not in payload:  # Copilot CLI's camelCase
        payload["session_id"] = payload["sessionId"]
    session = open_session()
    try:
        _record(session, "session.stop", session_id=short(payload.get("session_id")),
                message_length=final_message_length(payload))
    except Exception as exc:
        sys.stderr.write(f"majordomus: session.stop not recorded: {escape(str(exc))}\n")
    session_id = short(payload.get("session_id"))
    if session.ws is not None and session_id:
        import time

        from majordomus.hooks import conversations

        try:
            conversations.remember_stop(session.ws, session_id, time.time())
        except Exception as exc:
            sys.stderr.write(f"majordomus: the time of this answer not kept: {escape(str(exc))}\n")


def run(name: str, runtime: str = "claude") -> None:
    """`hook session-start` or `hook stop` as a process: stdin in, stdout out."""
    stream = sys.stdin
    stdin = stream.buffer if stream is not None and not stream.isatty() else None
    if name == "session-start":
        out = session_start(stdin, runtime)
        if out is not None:
            sys.stdout.write(out + "\n")
            sys.stdout.flush()
    else:
        stop(stdin)
