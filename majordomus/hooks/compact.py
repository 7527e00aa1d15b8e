"""`hook compact` (design §12): one raw line per PreCompact/PostCompact in the active task's journal.

It runs at every compaction, so it imports only the `lite` layer (no pygit2, click or yaml; a test probes
it): it appends one line and does nothing else. Normalising happens on replay (`journal`).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
import sys
import time

from majordomus.lite import active, dotgit, limits
from majordomus.lite.stdin import read_hook_payload

TYPE_CHECKING = False  # annotations only: every import on this path is paid at every compaction
if TYPE_CHECKING:
    from typing import Any, BinaryIO

STDIN_MAX = 1 << 20  # more than this is a parseError line, and none of it is kept
VALUE_MAX = 256  # characters per kept value
FILE = "compact-events.jsonl"
ROTATED = FILE + ".1"
PHASES = ("pre", "post")
WHITELIST = {
    "claude": ("session_id", "trigger", "model", "prompt_id", "agent_id", "agent_type"),
    "codex": ("session_id", "trigger", "model", "turn_id", "agent_id", "agent_type"),
}


def _value(value: Any) -> Any:
    if isinstance(value, str):
        return value[:VALUE_MAX]
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and len(repr(value)) <= VALUE_MAX:
        return value
    return _DROP  # objects, lists, giant numbers: not a value a whitelisted key should carry


_DROP = object()


def build_line(raw: bytes | None, phase: str, runtime: str, at: str) -> bytes:
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


def record(phase: str, runtime: str, stdin: BinaryIO | None, cwd: str) -> str | None:
    """Journal one compaction event for the task active at `cwd`; None (and nothing written) when none."""
    raw = read_hook_payload(stdin, STDIN_MAX)
    place = dotgit.locate(cwd)
    if place is None:
        return None
    task_id = active.active_id(place.state_root, place.worktree, place.branch)
    if task_id is None:
        return None
    bounds = limits.journal_limits(place.config_root)
    line = build_line(raw, phase, runtime, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))  # clock.ISO
    if len(line) > bounds["line_max_bytes"]:
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
    return append(directory, line, bounds["rotate_bytes"])


def _parse_argv(argv: list[str]) -> tuple[str, str, str | None]:
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


USAGE = ("usage: majordomus hook compact --phase pre|post --runtime claude|codex\n\n"
         "Append one line to the active task's compaction journal. Always exits 0.\n")


def main(argv: list[str]) -> int:
    """`majordomus hook compact --phase pre|post --runtime claude|codex`: always exits 0 (fail-open)."""
    if "-h" in argv or "--help" in argv:
        sys.stdout.write(USAGE)
        return 0
    try:
        phase, runtime, problem = _parse_argv(argv)
        if problem is not None:
            sys.stderr.write(f"majordomus: hook compact: {problem}; nothing recorded\n")
            return 0
        stdin = sys.stdin.buffer if sys.stdin is not None and not sys.stdin.isatty() else None
        record(phase, runtime, stdin, os.getcwd())
    except BaseException as exc:
        if os.environ.get("MAJORDOMUS_DEBUG") == "1":
            import traceback

            traceback.print_exception(type(exc), exc, exc.__traceback__)
        if isinstance(exc, OSError) and exc.errno in (errno.EROFS, errno.EACCES, errno.ENOSPC, errno.ELOOP):
            sys.stderr.write(f"majordomus: hook compact: not recorded: {exc.strerror}\n")
        else:
            sys.stderr.write(f"majordomus: hook compact: not recorded: {getattr(exc, 'message', type(exc).__name__)}\n")
    return 0
