"""`hook session-start` and `hook stop` (SPEC §12): what an agent session is handed, and its bookkeeping.

Both are fail-open: they never raise and never block a session. session-start reads identity (the
profile text) and continuity (the briefing) in separate failure domains, so that a broken continuity
never costs the identity. `hook compact` lives in journal.py, which imports nothing heavy.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Optional

PAYLOAD_MAX = 4 << 20  # a Stop payload carries the final message; more than this is not parsed
_PROFILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_FINAL_MESSAGE_KEYS = ("last_assistant_message", "output", "final_output", "result")
_VALUE_MAX = 256
NO_TASK_LINE = ("majordomus: no active task in {where}. Start one with `majordomus task start ID` "
                "or resume one with `majordomus task resume ID`.")


def read_payload(stream: Optional[BinaryIO]) -> dict[str, Any]:
    """The runtime's JSON object from stdin, or {} for anything else (garbage, empty, too large)."""
    from majordomus.journal import read_stdin

    data = read_stdin(stream, PAYLOAD_MAX)
    if data is None:
        return {}
    try:
        payload = json.loads(data)
    except (ValueError, RecursionError):
        return {}
    return payload if isinstance(payload, dict) else {}


def _short(value: Any) -> Optional[str]:
    return value[:_VALUE_MAX] if isinstance(value, str) else None


@dataclass
class Session:
    """Where a hook runs: the workspace (None outside a git work tree) and the problems met opening it."""

    ws: Any = None
    task: Any = None
    problems: list[str] = field(default_factory=list)


def open_session(cwd: Optional[str]) -> Session:
    from majordomus import config, git, paths, tasks
    from majordomus.errors import MajordomusError, NoActiveTask
    from majordomus.workspace import Workspace

    session = Session()
    cwd = os.path.abspath(cwd or os.getcwd())
    try:
        repo = git.open_repo(cwd)
    except MajordomusError:
        return session  # not a git work tree: nothing of ours here, and nothing to say
    state = paths.for_worktrees(repo.main_worktree, repo.common_dir, repo.worktree)
    try:
        cfg = config.load(state.config_root)
    except MajordomusError as exc:
        session.problems.append(f"majordomus: {exc.message} ({exc.hint}); the defaults apply meanwhile.")
        cfg = config.load(None)
    session.ws = Workspace(repo=repo, paths=state, config=cfg, cwd=cwd)
    try:
        session.task = tasks.active(session.ws)
    except NoActiveTask:
        pass
    except MajordomusError as exc:
        session.problems.append(f"majordomus: cannot read the active task: {exc.message}")
    return session


def _record(session: Session, event: str, **fields: Any) -> None:
    """A ledger event where majordomus already keeps state: a hook never creates the state directory."""
    from majordomus import clock, tasks

    ws = session.ws
    if ws is None or not os.path.isdir(ws.paths.root):
        return
    task_id = session.task.id if session.task is not None else None
    tasks.event(ws, event, task_id, clock.iso(clock.now()), **fields)


# ---------------------------------------------------------------- identity


def profile_paths(ws: Any, name: str) -> list[str]:
    """Where `.ai/profiles/NAME.md` is looked for: beside the config first, then in this worktree."""
    roots = [ws.paths.config_root, ws.worktree]
    out = []
    for root in roots:
        if root:
            path = os.path.join(root, ".ai", "profiles", f"{name}.md")
            if path not in out:
                out.append(path)
    return out


def read_identity(ws: Any, name: str, limit: int) -> str:
    """The profile text, or a line saying why it could not be read and how to fix that."""
    if not _PROFILE_NAME.match(name or ""):
        return (f"majordomus: identity not loaded: `{name}` is not a valid profile name. "
                "Fix `profile:` in .ai/config.yaml (or the task's profile) to a plain name such as `default`.")
    candidates = profile_paths(ws, name)
    for path in candidates:
        try:
            with open(path, "rb") as fh:
                data = fh.read(limit + 1)
        except FileNotFoundError:
            continue
        except OSError as exc:
            return (f"majordomus: identity not loaded: cannot read {ws.display(path)}: {exc.strerror}. "
                    "Fix its permissions.")
        text = data.decode("utf-8", "replace").replace("\r\n", "\n").strip()
        if not text:
            return (f"majordomus: identity not loaded: {ws.display(path)} is empty. "
                    f"Write the role of profile `{name}` into it.")
        return text
    return (f"majordomus: identity not loaded: no profile `{name}` ({ws.display(candidates[0])} is missing). "
            f"Run `majordomus init` for the default profile, or write .ai/profiles/{name}.md.")


# ---------------------------------------------------------------- session-start


def _cut(text: str, max_bytes: int, max_chars: int, note: str) -> str:
    """`text` within both limits, cut at a line boundary, ending with `note` when anything went."""
    if len(text) <= max_chars and len(text.encode("utf-8")) <= max_bytes:
        return text
    room_chars, room_bytes = max_chars - len(note) - 1, max_bytes - len(note.encode("utf-8")) - 1
    kept: list[str] = []
    chars = size = 0
    for line in text.split("\n"):
        cost_c, cost_b = len(line) + 1, len(line.encode("utf-8")) + 1
        if chars + cost_c > room_chars or size + cost_b > room_bytes:
            break
        kept.append(line)
        chars, size = chars + cost_c, size + cost_b
    return "\n".join(kept + [note]) if room_chars > 0 and room_bytes > 0 else ""


def build_context(session: Session) -> str:
    ws = session.ws
    max_bytes = int(ws.config.get("continuity", "render_max_bytes"))
    max_chars = int(ws.config.get("hooks", "max_context_chars"))
    task = session.task
    head = "\n".join(session.problems)
    # Identity: its own failure domain.
    try:
        name = task.profile if task is not None else ws.config.profile
        identity = read_identity(ws, name, max_bytes)
    except Exception as exc:  # noqa: BLE001
        identity = f"majordomus: identity not loaded: {type(exc).__name__}: {exc}. Run `majordomus doctor`."
    first = "\n\n".join(part for part in (head, identity) if part)
    first = _cut(first, max_bytes, max_chars, "[majordomus: the profile was cut to fit the context limit]")
    used_bytes, used_chars = len(first.encode("utf-8")) + 2, len(first) + 2
    budget = min(max_bytes - used_bytes, max_chars - used_chars)  # UTF-8: characters <= bytes
    # Continuity and the briefing: a second failure domain.
    if task is None:
        rest = NO_TASK_LINE.format(where=ws.where())
    elif budget <= 0:
        rest = "majordomus: no room left for the briefing; run `majordomus brief` to read it."
    else:
        try:
            from majordomus import brief

            rest = brief.build(ws, task_id=task.id, budget_bytes=budget).strip()
        except Exception as exc:  # noqa: BLE001 - a broken continuity must not cost the identity
            rest = (f"majordomus: the briefing of task `{task.id}` could not be built "
                    f"({type(exc).__name__}: {exc}). Run `majordomus brief` to see the error, "
                    "and `majordomus doctor` for what is wrong.")
    rest = _cut(rest, max(budget, 0), max(budget, 0),
                "[majordomus: the briefing was cut to fit; run `majordomus brief` for all of it]")
    return "\n\n".join(part for part in (first, rest) if part)


def session_start(stdin: Optional[BinaryIO], cwd: Optional[str] = None) -> Optional[str]:
    """The JSON to print for SessionStart (every source alike), or None outside a git work tree."""
    payload = read_payload(stdin)
    session = open_session(cwd)
    if session.ws is None:
        return None
    context = build_context(session)
    try:
        _record(session, "session.start", session_id=_short(payload.get("session_id")),
                source=_short(payload.get("source")))
    except Exception as exc:  # noqa: BLE001 - bookkeeping is noted, never blocks
        sys.stderr.write(f"majordomus: session.start not recorded: {exc}\n")
    out = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}}
    return json.dumps(out)


# ---------------------------------------------------------------- stop


def final_message_length(payload: dict[str, Any]) -> Optional[int]:
    """Length of the final message (never its text), from the first of the runtimes' names for it."""
    for key in _FINAL_MESSAGE_KEYS:
        value = payload.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            return len(value)
        return len(json.dumps(value, ensure_ascii=False))
    return None


def stop(stdin: Optional[BinaryIO], cwd: Optional[str] = None) -> None:
    """Record `session.stop`; prints nothing to stdout (a Stop hook's stdout can be read as a decision)."""
    payload = read_payload(stdin)
    session = open_session(cwd)
    try:
        _record(session, "session.stop", session_id=_short(payload.get("session_id")),
                message_length=final_message_length(payload))
    except Exception as exc:  # noqa: BLE001 - bookkeeping is noted, never blocks
        sys.stderr.write(f"majordomus: session.stop not recorded: {exc}\n")


def fail_open(what: str, exc: BaseException) -> None:
    """The note a hook leaves on stderr when something went wrong; the exit status stays 0."""
    if os.environ.get("MAJORDOMUS_DEBUG") == "1":
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__)
    sys.stderr.write(f"majordomus: hook {what}: {type(exc).__name__}: {exc} (the session goes on)\n")


def run(name: str, directory: Optional[str] = None) -> None:
    """`hook session-start` or `hook stop` as a process: stdin in, stdout out, never an exception."""
    try:
        stream = sys.stdin
        stdin = stream.buffer if stream is not None and not stream.isatty() else None
        cwd = None if directory is None else os.path.abspath(directory)
        if cwd is not None and not os.path.isdir(cwd):
            raise NotADirectoryError(f"-C {directory}: not a directory")
        if name == "session-start":
            out = session_start(stdin, cwd)
            if out is not None:
                sys.stdout.write(out + "\n")
                sys.stdout.flush()
        else:
            stop(stdin, cwd)
    except BaseException as exc:  # noqa: BLE001 - fail-open
        fail_open(name, exc)
