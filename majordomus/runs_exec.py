"""Running CMD for `majordomus run` (design §17): its output passed through and kept in brief.

How the output is passed through. CMD's stdin is majordomus's own (inherited, untouched: prompts and
pagers read the terminal as usual). Its stdout and stderr are two pipes that majordomus copies, as it
reads them, to its own stdout and stderr, hashing the combined stream in the order it arrives. A pty
would let CMD believe it writes to a terminal, but would change the terminal itself (raw mode, window
size, job control); pipes leave it alone. So CMD sees pipes: tools that colour only on a terminal print
plain text unless told otherwise (`pytest --color=yes`); their escape codes reach the terminal as they
are and are escaped in the record.

Signals. CMD runs in majordomus's process group, so Ctrl-C from the terminal reaches CMD directly;
majordomus does not forward it again (CMD would see two), it waits for CMD and writes the record.
SIGTERM and SIGHUP sent to majordomus alone are passed on to CMD. A CMD killed by signal N exits 128+N.
"""

from __future__ import annotations

import os
import sys
import time

from majordomus import secretscan
from majordomus.errors import EnvironmentProblem
from majordomus.output import escape

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TAIL_LINES = 20  # design §17: the body holds at most the last 20 lines of output
LINE_CHARS = 400  # one body line at most; a longer line keeps its start and says it was cut
PREFIX = "| "  # output lines are quoted: no line of CMD's can read as front matter or an identity field
NOT_FOUND, NOT_EXECUTABLE = 127, 126  # what a shell exits with


class Tail:
    """The combined output as it streams by: its sha256 and size, and its last lines (bounded)."""

    def __init__(self) -> None:
        import hashlib
        from collections import deque

        self.digest = hashlib.sha256()
        self.size = 0
        self.lines = 0
        self.last: deque[bytes] = deque(maxlen=TAIL_LINES)
        self.partial: dict[int, bytes] = {}  # per stream: stdout and stderr lines are not spliced
        self.key_open = False  # a private-key block open before the first kept line (redacted whole)

    def feed(self, stream: int, data: bytes) -> None:
        self.digest.update(data)
        self.size += len(data)
        newlines = data.count(b"\n")
        if newlines > TAIL_LINES:
            # Only the last lines of a chunk can be kept: count the others, split only the tail (a command
            # that prints a million lines costs a count, not a million list items).
            pos = len(data)
            for _ in range(TAIL_LINES + 1):
                pos = data.rfind(b"\n", 0, pos)
            self.lines += newlines - TAIL_LINES
            for old in self.last:  # every kept line goes; the block state follows what is dropped, in order
                self.key_open = secretscan.key_open_after(old, self.key_open)
            self.last.clear()
            dropped = self.partial.pop(stream, b"") + data[: pos + 1]
            self.key_open = secretscan.key_open_after(dropped, self.key_open)
            pieces = data[pos + 1:].split(b"\n")
        else:
            pieces = (self.partial.pop(stream, b"") + data).split(b"\n")
        for line in pieces[:-1]:
            self._line(line)
        if pieces[-1]:
            self.partial[stream] = pieces[-1][: LINE_CHARS * 4]  # bounded: a line without end stays small

    def _line(self, line: bytes) -> None:
        self.lines += 1
        if len(self.last) == TAIL_LINES:
            self.key_open = secretscan.key_open_after(self.last[0], self.key_open)
        self.last.append(line[: LINE_CHARS * 4])

    def close(self) -> None:
        for stream in sorted(self.partial):
            self._line(self.partial.pop(stream))

    def body(self) -> str:
        texts = [line.decode("utf-8", errors="replace") for line in self.last]
        kept = secretscan.redact_key_blocks(texts, self.key_open)
        return "\n".join(PREFIX + (line if line == secretscan.REDACTED else body_line(raw))
                          for line, raw in zip(kept, self.last))


def body_line(raw: bytes) -> str:
    """One output line as the record keeps it: what a terminal would show of it (after the last carriage
    return), a secret-looking line replaced whole, control characters escaped, cut at LINE_CHARS."""
    text = raw.decode("utf-8", errors="replace").rstrip("\r")
    text = text.rsplit("\r", 1)[-1]
    if secretscan.looks_secret(text):
        return "[redacted]"
    text = escape(text, body=True)
    return text if len(text) <= LINE_CHARS else text[:LINE_CHARS] + "…"


class Outcome:
    __slots__ = ("duration_ms", "output_error", "signal", "status", "stopped_by", "tail")

    def __init__(self, status: int, signum: int | None, duration_ms: int, tail: Tail,
                 output_error: OSError | None = None, stopped_by: int | None = None) -> None:
        self.status = status  # what majordomus exits with: CMD's status, 128+N for signal N
        self.signal = signum
        self.duration_ms = duration_ms
        self.tail = tail
        # Why the output could not all be passed on (a full disk, a terminal gone), when it was not that its
        # reader went away (`| head`), which is no failure
        self.output_error = output_error
        # The stop signal that ended the wait for the output of what CMD left in the background, after CMD's end
        self.stopped_by = stopped_by


def _write_all(fd: int, data: bytes) -> OSError | None:
    """Pass output on; the error that ended it (its reader went away, a full disk, a terminal gone), or None.
    A descriptor left non-blocking by the parent (node and ssh leave one so) is waited on, as a blocking
    write waits for a slow reader."""
    import select

    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            poller = select.poll()
            poller.register(fd, select.POLLOUT)
            poller.poll()
        except InterruptedError:
            continue
        except OSError as exc:
            return exc
    return None


def execute(argv: list[str]) -> Outcome:
    """Run CMD with stdin inherited and stdout/stderr teed through majordomus; the terminal untouched."""
    import selectors
    import signal
    import subprocess

    sys.stdout.flush()
    sys.stderr.flush()
    child: subprocess.Popen[bytes] | None = None
    interrupted: list[int] = []
    late: list[int] = []
    ended: float | None = None

    def on_signal(signum: int, _frame: Any) -> None:
        if child is not None and signum not in (signal.SIGINT, signal.SIGQUIT):
            child.send_signal(signum)
        interrupted.append(signum)
        if ended is not None:
            late.append(signum)  # after CMD's end: only what it left in the background is waited for

    # Python handlers, not SIG_IGN: a handled signal goes back to its default in CMD when it execs.
    handled = (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, on_signal) for s in handled}
    started = time.monotonic()
    try:
        try:
            child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except FileNotFoundError as exc:
            raise CannotRun(argv[0], exc.strerror or "not found", NOT_FOUND) from exc
        except PermissionError as exc:
            raise CannotRun(argv[0], exc.strerror or "permission denied", NOT_EXECUTABLE) from exc
        except OSError as exc:
            raise CannotRun(argv[0], exc.strerror or str(exc), NOT_EXECUTABLE) from exc
        tail = Tail()
        sel = selectors.DefaultSelector()
        targets = {child.stdout.fileno(): 1, child.stderr.fileno(): 2}  # type: ignore[union-attr]
        alive = {1: True, 2: True}
        for fd in targets:
            sel.register(fd, selectors.EVENT_READ)
        # The output passes through until its pipes close — CMD's end, or that of what it left running in
        # the background (`server &`), as with `| tee` — but the run lasted until CMD's own end: its pidfd
        # says when (Linux); elsewhere, when it is reaped.
        stopped_by: int | None = None
        output_error: OSError | None = None
        pipes = {child.stdout.fileno(): child.stdout, child.stderr.fileno(): child.stderr}  # type: ignore[union-attr]
        exit_fd = _pidfd(child.pid)
        if exit_fd is not None:
            sel.register(exit_fd, selectors.EVENT_READ)
        while targets:
            if late:
                # CMD has ended and a stop signal came since: what it left in the background may hold its
                # pipes for ever (a daemon), so the wait for them ends here, as `| tee` would end, with what
                # is in the pipes now
                stopped_by = late[0]
                for fd, which in targets.items():
                    _drain(fd, which, tail, alive)
                break
            for key, _ in sel.select(None if ended is None else 0.25):  # a signal does not end a select
                fd = int(key.fd)
                if fd == exit_fd:
                    ended = time.monotonic()
                    sel.unregister(fd)
                    continue
                try:
                    data = os.read(fd, 65536)
                except InterruptedError:
                    continue
                if not data:
                    sel.unregister(fd)
                    del targets[fd]
                    continue
                tail.feed(targets[fd], data)
                if alive[targets[fd]]:
                    failed = _write_all(targets[fd], data)
                    if failed is not None:
                        # What reads CMD's output here is gone, or takes no more: CMD's pipe closes, as a
                        # pipeline's does, so that CMD ends at its next write (SIGPIPE), never writing on
                        # without end into majordomus (`run -- yes | head -1`); what it wrote until then is
                        # in the record.
                        alive[targets[fd]] = False
                        if not isinstance(failed, BrokenPipeError) and output_error is None:
                            output_error = failed
                        sel.unregister(fd)
                        del targets[fd]
                        pipes[fd].close()  # type: ignore[union-attr]
        sel.close()
        if exit_fd is not None:
            os.close(exit_fd)
        while True:
            try:
                code = child.wait()
                break
            except InterruptedError:
                continue
        tail.close()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if child is not None:
            for pipe in (child.stdout, child.stderr):
                if pipe is not None:
                    pipe.close()
    duration = int(((ended if ended is not None else time.monotonic()) - started) * 1000)
    if code < 0:
        return Outcome(128 - code, -code, duration, tail, output_error, stopped_by)
    return Outcome(code, None, duration, tail, output_error, stopped_by)


def _drain(fd: int, which: int, tail: Tail, alive: dict[int, bool], most: int = 1 << 20) -> None:
    """What pipe `fd` holds now (at most `most` bytes), captured and passed on, without waiting for more."""
    os.set_blocking(fd, False)
    while most > 0:
        try:
            data = os.read(fd, min(65536, most))
        except (BlockingIOError, InterruptedError):
            return
        if not data:
            return
        most -= len(data)
        tail.feed(which, data)
        if alive[which]:
            alive[which] = _write_all(which, data) is None


def _pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when process `pid` ends, or None (not Linux 5.3+, or refused)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


class CannotRun(EnvironmentProblem):
    def __init__(self, command: str, why: str, code: int) -> None:
        super().__init__(f"cannot run `{escape(command)}`: {why}; nothing was recorded",
                         "check the command's name and PATH (run it without `majordomus run` to see)", code)
