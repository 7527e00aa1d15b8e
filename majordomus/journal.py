"""The compaction journal (SPEC §12): one raw line per PreCompact/PostCompact, and its tolerant replay.

Writing (`hook compact`) runs at every compaction, so this module imports no pygit2, click or yaml
(`majordomus.main` dispatches `hook compact` here before the click CLI is even imported). It appends one
line and does nothing else: no normalising, no reading the journal back, no touching continuity.
Normalising happens on replay (`status`, used by `context status`).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
import sys
import time

from majordomus import quickstate

TYPE_CHECKING = False  # annotations only: every import on this path is paid at every compaction
if TYPE_CHECKING:
    from typing import Any, BinaryIO, Optional

STDIN_MAX = 1 << 20  # more than this is a parseError line, and none of it is kept
VALUE_MAX = 256  # characters per kept value
_DRAIN_MAX = 64 << 20  # read (and drop) at most this much past the bound, so the writer is not cut off
FILE = "compact-events.jsonl"
ROTATED = FILE + ".1"
PHASES = ("pre", "post")
WHITELIST = {
    "claude": ("session_id", "trigger", "model", "prompt_id", "agent_id", "agent_type"),
    "codex": ("session_id", "trigger", "model", "turn_id", "agent_id", "agent_type"),
}
TRIGGERS = ("manual", "auto")


# ---------------------------------------------------------------- writing


def read_stdin(stream: Optional[BinaryIO], limit: int = STDIN_MAX) -> Optional[bytes]:
    """At most `limit` bytes of `stream`; None when there was more (the rest is read and dropped).

    No stream (a terminal, which nobody will close) reads as empty."""
    if stream is None:
        return b""
    data = stream.read(limit + 1)
    if len(data) <= limit:
        return data
    drained = 0
    while drained < _DRAIN_MAX and stream.read(65536):
        drained += 65536
    return None


def _value(value: Any) -> Any:
    if isinstance(value, str):
        return value[:VALUE_MAX]
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and len(repr(value)) <= VALUE_MAX:
        return value
    return _DROP  # objects, lists, giant numbers: not a value a whitelisted key should carry


_DROP = object()


def build_line(raw: Optional[bytes], phase: str, runtime: str, at: str) -> bytes:
    """The journal line for one payload; phase and runtime come from argv, never from the payload."""
    line: dict[str, Any] = {"v": 1, "at": at, "phase": phase, "runtime": runtime}
    payload: Any = None
    if raw is None:
        line["parseError"] = "PayloadTooLarge"
    elif not raw.strip():
        line["parseError"] = "EmptyPayload"
    else:
        try:
            payload = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            # Only the error's name: the payload may carry the user's prompt.
            line["parseError"] = type(exc).__name__
        else:
            if not isinstance(payload, dict):
                line["parseError"] = "NotAnObject"
    if isinstance(payload, dict):
        for key in WHITELIST[runtime]:
            if key in payload:
                kept = _value(payload[key])
                if kept is not _DROP:
                    line[key] = kept
    return json.dumps(line, separators=(",", ":")).encode("ascii")


def _safe_dir(path: str, create: bool) -> bool:
    """True when `path` is a real directory (created 0700 when asked); never through a symlink."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if not create:
            return False
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        os.chmod(path, 0o700)
        st = os.lstat(path)
    return stat.S_ISDIR(st.st_mode)


def append(directory: str, line: bytes, rotate_bytes: int) -> str:
    """Append one line under `flock`, rotating a full file to `.1` first; returns the file written."""
    path = os.path.join(directory, FILE)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            st = os.fstat(fd)
            try:
                current = os.lstat(path)
            except FileNotFoundError:
                current = None
            if current is None or (current.st_ino, current.st_dev) != (st.st_ino, st.st_dev):
                continue  # another writer rotated it while we waited for the lock: open the new one
            if st.st_size and st.st_size + len(line) + 1 > rotate_bytes:
                os.replace(path, os.path.join(directory, ROTATED))
                continue
            if stat.S_IMODE(st.st_mode) != 0o600:
                os.fchmod(fd, 0o600)  # the umask may have taken bits away at creation
            data = line + b"\n"
            if st.st_size and os.pread(fd, 1, st.st_size - 1) != b"\n":
                data = b"\n" + data  # a writer killed mid-line: keep its torn tail on a line of its own
            os.write(fd, data)
            return path
        finally:
            os.close(fd)


def record(phase: str, runtime: str, stdin: Optional[BinaryIO], cwd: str) -> Optional[str]:
    """Journal one compaction event for the task active at `cwd`; None (and nothing written) when none."""
    raw = read_stdin(stdin)
    place = quickstate.locate(cwd)
    if place is None:
        return None
    task_id = quickstate.active_task(place)
    if task_id is None:
        return None
    limits = quickstate.journal_limits(place.config_root)
    line = build_line(raw, phase, runtime, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))  # clock.ISO
    if len(line) > limits["line_max_bytes"]:
        sys.stderr.write(f"majordomus: hook compact: a {len(line)}-byte line is over journal.line_max_bytes; "
                         "not recorded\n")
        return None
    root = place.state_root
    for directory in (os.path.dirname(os.path.dirname(root)), os.path.dirname(root), root):
        if not _safe_dir(directory, create=False):
            return None  # no state here (or a symlink where a directory belongs): nothing to record into
    directory = root
    for part in ("context", task_id):
        directory = os.path.join(directory, part)
        if not _safe_dir(directory, create=True):
            return None
    return append(directory, line, limits["rotate_bytes"])


def _parse_argv(argv: list[str]) -> tuple[str, str, Optional[str]]:
    """(phase, runtime, problem): argv is all this path trusts for phase and runtime."""
    opts: dict[str, str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if name in ("--phase", "--runtime"):
            if not eq:
                i += 1
                value = argv[i] if i < len(argv) else ""
            opts[name[2:]] = value
        else:
            return "", "", f"unexpected argument `{arg}`"
        i += 1
    phase, runtime = opts.get("phase", ""), opts.get("runtime", "")
    if phase not in PHASES:
        return phase, runtime, "--phase must be pre or post"
    if runtime not in WHITELIST:
        return phase, runtime, "--runtime must be claude or codex"
    return phase, runtime, None


def main(argv: list[str], cwd: Optional[str] = None) -> int:
    """`majordomus hook compact --phase pre|post --runtime claude|codex`: always exits 0 (fail-open)."""
    try:
        phase, runtime, problem = _parse_argv(argv)
        if problem is not None:
            sys.stderr.write(f"majordomus: hook compact: {problem}; nothing recorded\n")
            return 0
        if cwd is not None and not os.path.isdir(cwd):
            sys.stderr.write(f"majordomus: hook compact: -C {cwd}: not a directory; nothing recorded\n")
            return 0
        stdin = sys.stdin.buffer if sys.stdin is not None and not sys.stdin.isatty() else None
        record(phase, runtime, stdin, os.path.abspath(cwd or os.getcwd()))
    except BaseException as exc:  # noqa: BLE001 - fail-open: a compaction never waits on our bookkeeping
        if os.environ.get("MAJORDOMUS_DEBUG") == "1":
            import traceback

            traceback.print_exception(type(exc), exc, exc.__traceback__)
        if isinstance(exc, OSError) and exc.errno in (errno.EROFS, errno.EACCES, errno.ENOSPC, errno.ELOOP):
            sys.stderr.write(f"majordomus: hook compact: not recorded: {exc.strerror}\n")
        else:
            sys.stderr.write(f"majordomus: hook compact: not recorded: {type(exc).__name__}\n")
    return 0


# ---------------------------------------------------------------- replay


def _lines(path: str) -> list[bytes]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return []
    with os.fdopen(fd, "rb") as fh:
        return fh.read().split(b"\n")


def _event(line: bytes) -> Optional[dict[str, Any]]:
    """A valid journal event, normalised; None for a torn or foreign line."""
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    if not isinstance(obj, dict) or obj.get("phase") not in PHASES or obj.get("runtime") not in WHITELIST:
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


def replay(directory: str) -> dict[str, Any]:
    """Reduce `.1` then the current file to generation, pending and last_completed.

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
    for path in (os.path.join(directory, ROTATED), os.path.join(directory, FILE)):
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


def status(ws: Any, task_id: Optional[str] = None) -> dict[str, Any]:
    """The compaction status of a task (default: the active one here), for `context status`."""
    if task_id is None:
        from majordomus import tasks

        task_id = tasks.active(ws).id
    directory = ws.paths.context_dir(task_id)
    result = replay(directory)
    result["journal"] = ws.display(os.path.join(directory, FILE))
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
