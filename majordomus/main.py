"""The console entry point: global options, the command table, and the one error boundary (design §14).

Like git.c: `-C DIR`, `--version` and `--help` are parsed once here; the command is looked up in the one
table (`majordomus.commands`); only that command's module is imported, and its `main(argv) -> int` is called. Every failure
becomes one line and an exit code here, and the agent-runtime hooks (`hook …`) are fail-open: whatever
happens inside them, they exit 0.
"""

from __future__ import annotations

import errno
import os
import sys

from majordomus.commands import COMMANDS, FAIL_OPEN, lookup

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: `hook compact` starts here, and typing is not free
if TYPE_CHECKING:
    from typing import NoReturn, TextIO


HOOK_LOCK_SECONDS = 2.0  # the longest an agent-runtime hook waits for any one lock (a stopped holder's)
HOOK_GIT_SECONDS = 10.0  # the longest an agent-runtime hook waits on git, all its commands together (design §12)
USAGE_LINE = "usage: majordomus [-C DIR] [--version] [--help] COMMAND [ARGS]..."


def usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = [USAGE_LINE, "",
             "Keep the work state of a task in git-native records: checkpoints, handoffs, continuity, briefings.",
             "", "Commands:"]
    lines += [f"  {name:<{width}}  {summary}" for name, (_module, _function, summary) in COMMANDS.items()]
    lines += ["", "`majordomus COMMAND --help` says more; `majordomus help COMMAND` opens its manual page."]
    return "\n".join(lines) + "\n"


def parse_global(args: list[str]) -> tuple[list[str], str | None, list[str]]:
    """(the `-C` directories in order, the command or a global action, its arguments)."""
    dirs: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "-C":
            if i + 1 >= len(args):
                raise _usage("-C needs a directory")
            dirs.append(args[i + 1])
            i += 2
        elif arg.startswith("-C"):
            dirs.append(arg[2:])
            i += 1
        elif arg in ("--version", "-h", "--help"):
            return dirs, arg, []
        elif arg.startswith("-"):
            raise _usage(f"unknown option `{arg}`")
        else:
            return dirs, arg, args[i + 1:]
    return dirs, None, []


def _usage(message: str) -> Exception:
    """A usage error of the global options, in the one format of every parser (design §14)."""
    from majordomus.errors import UsageError

    return UsageError(message, f"{USAGE_LINE}; see `majordomus --help`")


def internal_error(exc: BaseException) -> int:
    if os.environ.get("MAJORDOMUS_DEBUG") == "1":
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__)
    from majordomus.lite.textrules import escape

    sys.stderr.write(
        f"majordomus: internal error: {escape(f'{type(exc).__name__}: {exc}')}\n"
        "hint: rerun with MAJORDOMUS_DEBUG=1 for the traceback, and report it\n"
    )
    return 70


def _fail_open(name: str, args: list[str], exc: BaseException) -> int:
    """A hook's failure: one note on stderr, exit 0, the session goes on."""
    if os.environ.get("MAJORDOMUS_DEBUG") == "1":
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__)
    what = " ".join([name] + args[:1])
    message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
    hint = getattr(exc, "hint", "")
    try:
        from majordomus.lite.textrules import escape

        sys.stderr.write(f"majordomus: {escape(what)}: {escape(str(message))} (the session goes on)\n"
                         + (f"hint: {escape(str(hint))}\n" if hint else ""))
    except OSError:  # a hook's stderr on a full disk: the session still goes on
        _discard(sys.stderr)
    if isinstance(exc, OSError) and _writing_output(exc):
        _discard(sys.stdout)  # what the failed write left buffered must not fail the exit's flush (exit 12)
    return 0


def run(argv: list[str] | None = None) -> int:
    _buffer_unbuffered_stdout()
    _encodable_stdout()
    from majordomus.lite import stopsignals

    stopsignals.install()  # here, in the main thread: a stop signal waits for a write under way in any thread
    try:
        code = _run(_arguments() if argv is None else list(argv))
        sys.stdout.flush()
        return code
    except OSError as exc:  # writing usage, --version or an error's own message to a failing stream
        if isinstance(exc, BrokenPipeError) or _writing_output(exc):  # the last flush's, as the command's
            return _exit_code(exc)
        raise


def _encodable_stdout() -> None:
    """An output whose encoding cannot say every character (`PYTHONIOENCODING=ascii`, a C locale under
    `PYTHONUTF8=0`) shows what it cannot as `\\xNN`, as stderr does, never an error (exit 70): what
    majordomus prints is escaped already (design §2a); what is left is ordinary text, `é`, `·`, `↳`."""
    stream = sys.stdout
    if not hasattr(stream, "reconfigure") or getattr(stream, "errors", None) == "backslashreplace":
        return
    utf8 = str(getattr(stream, "encoding", "")).lower().replace("-", "") == "utf8"
    if stream.errors == "strict" or not utf8:  # a C locale's surrogateescape cannot say `é` in ASCII either
        stream.reconfigure(errors="backslashreplace")


def _arguments() -> list[str]:
    """The command line as UTF-8, whatever the locale: under a C locale without Python's UTF-8 mode, `é`
    arrives as two escaped bytes, which no record (always UTF-8) would match."""
    import os

    args = sys.argv[1:]
    if sys.getfilesystemencoding().lower().replace("-", "") == "utf8":
        return args
    return [os.fsencode(arg).decode("utf-8", "surrogateescape") for arg in args]


def _buffer_unbuffered_stdout() -> None:
    """Under PYTHONUNBUFFERED (or `python -u`) stdout writes straight to the file, and a write the kernel
    refuses with EAGAIN (an output someone set non-blocking, full for now) loses its bytes without a word:
    the file returns None and the text layer ignores it. Through a buffer the same refusal is
    BlockingIOError, which the boundary below turns into exit 12. Flushed at each line, as unbuffered
    output is read (a `watch` through a pipe)."""
    import io

    stream = sys.stdout
    if type(stream) is io.TextIOWrapper and type(stream.buffer) is io.FileIO:
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(stream.buffer), encoding=stream.encoding,
                                      errors=stream.errors, line_buffering=True)


def _run(args: list[str]) -> int:
    try:
        dirs, name, rest = parse_global(args)
    except Exception as exc:
        _closed_streams(False)
        return _exit_code(exc)
    closed = _closed_streams(name in FAIL_OPEN)
    if closed == "standard output":
        from majordomus.errors import EnvironmentProblem

        return _exit_code(EnvironmentProblem(
            "standard output is closed (`>&-`): nothing was done, for what the command would print has nowhere to "
            "go", "give it a standard output (`> /dev/null` to discard what it prints) and run it again"))
    if name is None:
        return _exit_code(_usage("a command is needed"))
    if name in ("-h", "--help"):
        sys.stdout.write(usage())
        return 0
    if name == "--version":
        from majordomus import __version__

        sys.stdout.write(f"majordomus, version {__version__}\n")
        return 0
    if name not in COMMANDS:
        import difflib

        close = difflib.get_close_matches(name, COMMANDS, 1, 0.75)  # as `help` suggests: alike, not merely near
        hint = f"did you mean `majordomus {close[0]}`?" if close else "see `majordomus --help`"
        from majordomus.lite.textrules import escape

        sys.stderr.write(f"majordomus: `{escape(name)}` is not a majordomus command\nhint: {escape(hint)}\n")
        return 2
    try:
        for directory in dirs:
            try:
                os.chdir(directory)
            except OSError as exc:
                from majordomus.errors import UsageError
                from majordomus.lite.textrules import escape

                raise UsageError(f"cannot change to {escape(directory)}: {exc.strerror}",
                                 "pass an existing directory to -C") from exc
        from majordomus.git import run as git_run
        from majordomus.lite import lockwait

        git_run.limit(HOOK_GIT_SECONDS if name in FAIL_OPEN else None)  # a hook never waits on git for long
        lockwait.limit(HOOK_LOCK_SECONDS if name in FAIL_OPEN else None)  # nor on a lock
        if os.environ.get("MAJORDOMUS_FAULT") == "internal-error":  # test-only, see store/fault.py
            raise RuntimeError("injected by MAJORDOMUS_FAULT=internal-error")
        code = lookup(name)(rest)
        sys.stdout.flush()  # here, not at exit: a full disk under the output is an exit code, not a warning
        return code
    except BaseException as exc:
        if name in FAIL_OPEN:
            return _fail_open(name, rest, exc)
        return _exit_code(exc)
    finally:
        if name in FAIL_OPEN:  # what runs in this process next (the Python API, a test) has no deadline
            from majordomus.git import run as git_run
            from majordomus.lite import lockwait

            git_run.limit(None)
            lockwait.limit(None)


class _ClosedStdin:
    """`sys.stdin` when fd 0 was closed (`<&-`): not a terminal, and any read is exit 12 with a message,
    before anything is written (design §14). A command that never reads its stdin runs as usual."""

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str) -> object:
        from majordomus.errors import EnvironmentProblem

        raise EnvironmentProblem("standard input is closed (`<&-`), and this command reads from it; nothing "
                                 "was written", "give it a standard input (a pipe, a file, or `< /dev/null` "
                                 "for an empty one) and run it again")


def _closed_streams(fail_open: bool) -> str | None:
    """Make a closed standard stream harmless; name the first one that makes the command unusable, or None.

    Python leaves `sys.stdin`/`sys.stdout`/`sys.stderr` as None when the descriptor was closed. The
    descriptor is first taken by /dev/null, so that no file majordomus opens (a record, the ledger) nor a
    child's inherited stream can land on fd 0, 1 or 2. A closed stderr loses the messages, not the command.
    A hook (fail-open) reads an empty stdin and prints into /dev/null, and goes on. Any other command with
    a closed stdout is refused (exit 12), and a closed stdin refuses the first read of it."""
    streams = (sys.stdin, sys.stdout, sys.stderr)
    if all(stream is not None for stream in streams):
        return None
    for fd, stream in enumerate(streams):
        if stream is None:
            try:
                os.fstat(fd)
            except OSError:
                taken = os.open(os.devnull, os.O_RDWR)
                if taken != fd:
                    os.dup2(taken, fd)
                    os.close(taken)
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (open for the process's lifetime)
    stdout_closed = sys.stdout is None
    if stdout_closed:
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
    if sys.stdin is None:
        sys.stdin = open(os.devnull, encoding="utf-8") if fail_open else _ClosedStdin()  # noqa: SIM115
    return "standard output" if stdout_closed and not fail_open else None


def _exit_code(exc: BaseException) -> int:
    from majordomus.errors import MajordomusError

    if isinstance(exc, MajordomusError):
        from majordomus.lite.textrules import render_error

        sys.stderr.write(render_error(exc) + "\n")
        return exc.code
    if isinstance(exc, BrokenPipeError):
        # The reader went away (e.g. `| head`): not our failure; keep Python from complaining at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    if isinstance(exc, OSError) and _writing_output(exc):
        return _output_failed(exc)
    if isinstance(exc, OSError) and exc.errno in _ENVIRONMENT_ERRNOS:
        return _environment_failed(exc)
    if isinstance(exc, KeyboardInterrupt):
        # Acted on only where no write is under way (lite.stopsignals): nothing is half-written. When the
        # write it waited for failed, that failure is what the command says (its message, exit 12).
        from majordomus.lite import stopsignals

        failed = stopsignals.failed()
        if failed is not None and not isinstance(failed, KeyboardInterrupt):
            return _exit_code(failed)

        sys.stderr.write("majordomus: interrupted; the write under way when it came landed whole first\n"
                         "hint: `majordomus ledger | tail -3` shows what was stored\n" if stopsignals.waited()
                         else "majordomus: interrupted\n")
        return 130
    if isinstance(exc, SystemExit):
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    if isinstance(exc, Exception):
        return internal_error(exc)
    raise exc


# What a disk or file system says of itself, never of majordomus's logic: a failing or full disk, a stale
# network file system, a lock refused, a file it will not let us touch. Raised by a call no store function
# wraps (a stat, a close, a flock, a read part way), it is exit 12 naming the file, as every wrapped one is.
# So does a path that is not the shape majordomus keeps there (a file where a directory belongs, a link loop).
# Errnos that also come from processes, signals or sockets (EPERM, EBUSY, ENOMEM, ...) stay internal errors.
_ENVIRONMENT_ERRNOS = frozenset(getattr(errno, name) for name in (
    "EIO", "ESTALE", "ENOLCK", "ENOSPC", "EDQUOT", "EROFS", "EACCES", "EFBIG", "EREMOTEIO",
    "ENOTDIR", "EISDIR", "ELOOP", "ENXIO") if hasattr(errno, name))


def _environment_failed(exc: OSError) -> int:
    from majordomus.errors import EnvironmentProblem
    from majordomus.lite.textrules import render_error

    where = f" on {exc.filename}" if exc.filename is not None else ""
    sys.stderr.write(render_error(EnvironmentProblem(
        f"the file system refused a call{where}: {exc.strerror or exc}",
        "check the disk or file system the repository is on (full, read-only, failing, a network mount gone "
        "stale); `majordomus doctor --strict` says what is there, and the same command, run again once the "
        "file system is back, completes a write that stopped")) + "\n")
    return 12


# What a full or failing disk under stdout or stderr raises (`> /dev/full`, a redirect on a full file system).
# Also what an output that does not take the write says (EINVAL), or one set non-blocking by whoever holds
# it (EAGAIN: the bytes are not written, and Python says so only as BlockingIOError).
_OUTPUT_ERRNOS = frozenset((errno.EIO, errno.EFBIG, errno.ENOSPC, errno.EDQUOT, errno.EINVAL, errno.EAGAIN))


def _writing_output(exc: OSError) -> bool:
    """Whether this error came from writing our own output: a write to a standard stream is the only write
    that reaches the boundary unwrapped (every store write raises EnvironmentProblem with its path), and
    the failing line is a write, a flush or a print. Any other OSError stays an internal error."""
    if exc.errno not in _OUTPUT_ERRNOS or exc.filename is not None or type(exc) not in (OSError, BlockingIOError):
        return False
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    import linecache
    import re

    line = linecache.getline(tb.tb_frame.f_code.co_filename, tb.tb_lineno)
    return re.search(r"\.(write|flush|writelines)\(|\b(print|echo)\(", line) is not None


def _output_failed(exc: OSError) -> int:
    """Exit 12 (design §14: the environment), with one line on stderr if stderr still takes it. Then the
    failing streams are pointed at /dev/null: the interpreter's last flush must not fail a second time."""
    failing = [sys.stdout]
    try:
        # A command prints after it stores: what it stored is stored, and running a write again would store
        # it twice (a checkpoint a second later, a second pin). Say so rather than "run it again".
        sys.stderr.write(f"majordomus: cannot write the output: {exc.strerror}; what was printed is incomplete, "
                         "but whatever the command stored before printing is stored\n"
                         "hint: free space where the output goes (or give it an output that takes the writes); "
                         "`majordomus ledger | tail -3` shows what was "
                         "stored (running a write command again would store it a second time)\n")
        sys.stderr.flush()
    except OSError:
        failing.append(sys.stderr)
    for stream in failing:
        _discard(stream)
    return 12


def _discard(stream: TextIO) -> None:
    """Point a failing standard stream at /dev/null: what a failed write left buffered goes there, and the
    interpreter's last flush cannot fail a second time."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError):
        return  # not a file (a test's in-memory stream): nothing is flushed to it at exit
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)
    try:
        stream.flush()
    except OSError:
        pass


def main(argv: list[str] | None = None) -> NoReturn:
    sys.exit(run(argv))
