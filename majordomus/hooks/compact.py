"""`hook compact` (design §12): one raw line per PreCompact/PostCompact in the active task's journal.

It runs at every compaction, so it imports only the `lite` layer, the clock and the calling runtime's key
table (`gemini` or `copilot`: plain data; no pygit2, click or yaml; a test probes it): it appends one line
and does nothing else. Normalising happens on replay (`journal`).
"""

from __future__ import annotations

import errno
import json
import os
import sys

from majordomus import clock
from majordomus.lite import active, appendlog, dotgit, jsonbound, limits, statepaths
from majordomus.lite.statepaths import state_exists
from majordomus.lite.stdin import read_hook_payload
from majordomus.lite.textrules import escape

TYPE_CHECKING = False  # annotations only: every import on this path is paid at every compaction
if TYPE_CHECKING:
    from typing import Any, BinaryIO

STDIN_MAX = 1 << 20  # more than this is a parseError line, and none of it is kept
VALUE_MAX = 256  # characters per kept value
FILE, ROTATED = statepaths.JOURNAL, statepaths.JOURNAL_ROTATED
PHASES = ("pre", "post")
RUNTIMES = ("claude", "codex", "gemini", "copilot")
_OWN_KEYS = {
    "claude": ("session_id", "trigger", "model", "prompt_id", "agent_id", "agent_type"),
    "codex": ("session_id", "trigger", "model", "turn_id", "agent_id", "agent_type"),
}


def journal_keys(runtime: str) -> dict[str, str]:
    """payload key -> journal key of `runtime`: where a runtime's names differ (Copilot's camelCase), its
    module's table, imported only for that runtime; one journal for all."""
    if runtime == "gemini":
        from majordomus.hooks import gemini

        return gemini.JOURNAL_KEYS
    if runtime == "copilot":
        from majordomus.hooks import copilot

        return copilot.JOURNAL_KEYS
    return {key: key for key in _OWN_KEYS[runtime]}


def __getattr__(name: str) -> Any:
    """`WHITELIST` (runtime -> the journal keys it may fill), for replay and the tests: built when asked."""
    if name == "WHITELIST":
        return {runtime: tuple(journal_keys(runtime).values()) for runtime in RUNTIMES}
    raise AttributeError(name)


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
            payload = jsonbound.loads(raw)
        except (ValueError, RecursionError) as exc:
            # Only the error's name: the payload may carry the user's prompt.
            line["parseError"] = type(exc).__name__
        else:
            if not isinstance(payload, dict):
                line["parseError"] = "NotAnObject"
    if isinstance(payload, dict):
        for theirs, key in journal_keys(runtime).items():
            if theirs in payload:
                kept = _value(payload[theirs])
                if kept is not _DROP:
                    line[key] = kept
    return json.dumps(line, separators=(",", ":")).encode("ascii")


def journal_bounds(place: dotgit.Place) -> dict[str, int]:
    """`journal.*` as every command reads them: from the validated cache without yaml, else from the one
    full reader (which then caches them), whose refusal of a broken configuration is this hook's too."""
    paths = place.state_paths()
    bounds = limits.journal_limits(paths.config_file, paths.config_cache)
    if bounds is not None:
        return bounds
    from majordomus import config  # not as majordomus last read it: rare, and worth a YAML parse

    loaded = config.load(place.config_root, paths.config_cache)
    if state_exists(paths) and statepaths.is_real_dir(paths.cache):
        config.remember(loaded, paths.config_cache)
    return {key: int(loaded.get("journal", key)) for key in limits.DEFAULTS["journal"]}


def record(phase: str, runtime: str, stdin: BinaryIO | None, cwd: str) -> str | None:
    """Journal one compaction event for the task active at `cwd`; None (and nothing written) when none."""
    raw = read_hook_payload(stdin, STDIN_MAX)
    place = dotgit.locate(cwd)
    if place is None:
        return None
    if place.foreign():
        from majordomus.git import run

        refused = run.refusal(place)
        if refused is not None:
            raise refused  # one line on stderr, exit 0, nothing written
    task_id = active.active_id(place.state_root, place.worktree, place.branch)
    if task_id is None:
        return None
    paths = place.state_paths()
    bounds = journal_bounds(place)
    line = build_line(raw, phase, runtime, clock.now_iso())
    if len(line) > bounds["line_max_bytes"]:
        sys.stderr.write(f"majordomus: hook compact: a {len(line)}-byte line is over journal.line_max_bytes; "
                         "not recorded\n")
        return None
    # No state here: nothing to record into. A link where a directory belongs is refused (EnvironmentProblem).
    if not state_exists(paths):
        return None
    statepaths.ensure_dir(paths.contexts)
    statepaths.ensure_dir(paths.context_dir(task_id))
    return appendlog.append_line(paths.journal(task_id), line, paths.journal_rotated(task_id), bounds["rotate_bytes"])


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
    if runtime not in RUNTIMES:
        return phase, runtime, "--runtime must be claude, codex, gemini or copilot"
    return phase, runtime, None


USAGE = ("usage: majordomus hook compact --phase pre|post --runtime claude|codex|gemini|copilot\n\n"
         "Append one line to the active task's compaction journal. Always exits 0.\n")


def main(argv: list[str]) -> int:
    """`majordomus hook compact --phase pre|post --runtime RUNTIME`: always exits 0 (fail-open)."""
    if "-h" in argv or "--help" in argv:
        sys.stdout.write(USAGE)
        return 0
    try:
        phase, runtime, problem = _parse_argv(argv)
        if problem is not None:
            sys.stderr.write(f"majordomus: hook compact: {escape(problem)}; nothing recorded\n")
            return 0
        stdin = sys.stdin.buffer if sys.stdin is not None and not sys.stdin.isatty() else None
        record(phase, runtime, stdin, dotgit.current_directory())
    except BaseException as exc:
        if os.environ.get("MAJORDOMUS_DEBUG") == "1":
            import traceback

            traceback.print_exception(type(exc), exc, exc.__traceback__)
        if isinstance(exc, OSError) and exc.errno in (errno.EROFS, errno.EACCES, errno.ENOSPC, errno.ELOOP):
            sys.stderr.write(f"majordomus: hook compact: not recorded: {exc.strerror}\n")
        else:
            sys.stderr.write(f"majordomus: hook compact: not recorded: {escape(str(getattr(exc, 'message', type(exc).__name__)))}\n")
    return 0
