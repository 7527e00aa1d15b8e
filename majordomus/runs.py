"""Execution records (design §17): `majordomus run -- CMD` runs CMD and keeps evidence of what it did.

"The tests pass" in a note is a claim; a run record is evidence: the identity of the work tree taken
*before* CMD starts (what was tested), CMD's exit status, the sha256 and size of everything it printed,
and its last lines — escaped, secrets redacted, never the environment.

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

from majordomus import clock, identity, secretscan, tasks
from majordomus.errors import EnvironmentProblem, MajordomusError, NoActiveTask, UsageError
from majordomus.lite import names
from majordomus.output import escape
from majordomus.store import commit, listing, reading, records
from majordomus.workspace import Workspace

TYPE_CHECKING = False  # on the session-start path: typing is not imported at run time
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from majordomus.git.status import Status


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
    __slots__ = ("duration_ms", "signal", "status", "tail")

    def __init__(self, status: int, signum: int | None, duration_ms: int, tail: Tail) -> None:
        self.status = status  # what majordomus exits with: CMD's status, 128+N for signal N
        self.signal = signum
        self.duration_ms = duration_ms
        self.tail = tail


def _write_all(fd: int, data: bytes) -> bool:
    """Pass output on; False once the reader went away (the output is still captured)."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except BrokenPipeError:
            return False
        except InterruptedError:
            continue
    return True


def execute(argv: list[str]) -> Outcome:
    """Run CMD with stdin inherited and stdout/stderr teed through majordomus; the terminal untouched."""
    import selectors
    import signal
    import subprocess

    sys.stdout.flush()
    sys.stderr.flush()
    child: subprocess.Popen[bytes] | None = None
    interrupted: list[int] = []

    def on_signal(signum: int, _frame: Any) -> None:
        if child is not None and signum not in (signal.SIGINT, signal.SIGQUIT):
            child.send_signal(signum)
        interrupted.append(signum)

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
        while targets:
            for key, _ in sel.select():
                fd = int(key.fd)
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
                    alive[targets[fd]] = _write_all(targets[fd], data)
        sel.close()
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
    duration = int((time.monotonic() - started) * 1000)
    if code < 0:
        return Outcome(128 - code, -code, duration, tail)
    return Outcome(code, None, duration, tail)


class CannotRun(EnvironmentProblem):
    def __init__(self, command: str, why: str, code: int) -> None:
        super().__init__(f"cannot run `{escape(command)}`: {why}; nothing was recorded",
                         "check the command's name and PATH (run it without `majordomus run` to see)", code)


def default_label(argv: list[str]) -> str:
    return names.branch_slug(os.path.basename(argv[0]) or "run")[:64].lstrip(".-_") or "run"


def check_label(label: str) -> str:
    if not names.is_profile_name(label):
        raise UsageError(f"`{escape(label)}` is not a valid label",
                         "use 1–64 characters of A-Z, a-z, 0-9, `.`, `_`, `-`, starting with a letter or digit")
    return label


def _argv_text(arg: str) -> str:
    return "[redacted]" if secretscan.looks_secret(arg) else escape(arg)


def run(ws: Workspace, argv: list[str], label: str | None) -> tuple[Outcome, str | None]:
    """Run CMD for the active task and record it; (what happened, the record's path)."""
    if not argv:
        raise UsageError("no command to run", "majordomus run [--label L] -- CMD [ARGS...]")
    label = check_label(label) if label is not None else default_label(argv)
    task = tasks.active(ws)  # exit 11 before anything runs
    import shutil

    if shutil.which(argv[0]) is None:  # as a shell would say, before anything is written
        found = os.path.exists(argv[0]) if os.sep in argv[0] else False
        raise CannotRun(argv[0], "not executable" if found else "command not found",
                        NOT_EXECUTABLE if found else NOT_FOUND)
    ws.ensure_state("tasks", "runs", "cache")
    at = clock.now_iso()
    fields = identity.fields(ws, "run", task, at)  # before CMD starts: what was tested
    outcome = execute(argv)
    fields += [("argv", [_argv_text(a) for a in argv]), ("label", label), ("exit_status", outcome.status)]
    if outcome.signal is not None:
        fields.append(("signal", outcome.signal))
    fields += [("started_at", at), ("duration_ms", outcome.duration_ms),
               ("output_sha256", outcome.tail.digest.hexdigest()), ("output_bytes", outcome.tail.size),
               ("output_lines", outcome.tail.lines)]
    try:
        path = commit.commit(_record(ws, task, at, outcome.tail.body(), fields, label)).path
    except NoActiveTask as exc:
        # `task` was active when CMD started (else CMD never ran): it changed while CMD ran, and there is no
        # body to blame, as a checkpoint's refusal would.
        exc.message = f"task `{task.id}` is no longer the active task in {ws.where()}: it changed while the command ran"
        exc.hint = "check `majordomus task show`; run the command again for the task that is active now"
        raise RecordFailed(outcome.status, exc) from exc
    except MajordomusError as exc:
        raise RecordFailed(outcome.status, exc) from exc
    return outcome, path


class RecordFailed(Exception):
    """CMD ran, its record did not fully land: the caller exits with CMD's status if it failed (what a
    script asks first), else with the error's code, so that a pass is never read without its record."""

    def __init__(self, status: int, error: MajordomusError) -> None:
        super().__init__(error.message)
        self.status = status
        ran = f"the command ran (exit status {status})"
        if error.message.startswith("the run record ") and " is stored" in error.message:  # linked, not complete
            error.message = f"{ran}; {error.message}"
        else:
            error.message = f"{ran}, but its run record was not written: {error.message}"
        if status == 0:  # say why the exit status is not CMD's
            error.hint = (f"{error.hint}; " if error.hint else "") + (
                f"majordomus exits {error.code}, not CMD's 0: a pass whose record did not fully land must not read "
                "as a recorded pass")
        self.error = error


def _record(ws: Workspace, task: tasks.Task, at: str, body: str, fields: list[tuple[str, Any]],
            label: str) -> commit.Write:
    """A run record: for the task CMD started under, which must still be active here when CMD ends (the
    lock, then check again, as for every record); the task points at the latest run of each label. A new
    run of a label also takes the place of that label's record gone or replaced (its label then as the
    ledger logged it): new evidence of the same thing, the one way to stop naming the lost one."""
    same_label = tuple(p for p in task.runs if _label_of(ws, task, p) == label)
    return commit.Write(ws, task, at, body, fields, kind="run", what="run record", subdir="runs", event="task.run",
                        pointer="runs", replaces=same_label, lines=False, event_keys=("exit_status", "head", "label"),
                        any_pending=True)  # the task record moves when CMD ended, the record is stamped at its start


def _label_of(ws: Workspace, task: tasks.Task, rel: str) -> object:
    """The label of the run record at `rel`: its front matter when it is intact, else its ledger event's."""
    found = reading.examine(ws, rel)
    if isinstance(found, reading.Record):
        return found.meta.get("label") if found.meta.get("kind") == "run" else None
    for event in reading.task_events(ws, task.id):
        if event.get("path") == rel and event["event"] in ("task.run", "sync.import"):
            return event.get("label")
    return None


def examined(ws: Workspace, task: tasks.Task) -> tuple[list[dict[str, Any]], list[reading.Gone]]:
    """The latest run of each label of `task`, oldest first (the task record points at them: no scan),
    each checked against the digest in its name; and those the task names that a briefing cannot stand
    on (design §9): deleted, unreadable, replaced — or, from another machine, never shared here."""
    found, gone = [], []
    for rel in task.runs:
        record = reading.examine(ws, rel)
        if isinstance(record, reading.Gone):
            gone.append(_why(ws, task, record))
        elif record.meta.get("kind") == "run" and record.meta.get("task") == task.id:
            found.append(dict(record.meta, path=rel))
    found.sort(key=lambda m: str(m.get("timestamp")))
    return found, gone


def _why(ws: Workspace, task: tasks.Task, gone: reading.Gone) -> reading.Gone:
    """A run record not here was deleted here when the ledger's tail says it was written or brought here;
    else, for a task that came from another machine, it was never shared (a push without `--checkpoints`)."""
    if gone.why != "deleted":
        return gone
    pulled = False
    for event in reading.task_events(ws, task.id):
        if event.get("path") == gone.rel and event["event"] in ("task.run", "sync.import"):
            return gone
        pulled = pulled or (event["event"] == "sync.import" and event.get("kind") == "task")
    return reading.Gone(gone.rel, reading.NOT_SHARED) if pulled else gone


SUMMARY_KEYS = ("timestamp", "task", "label", "exit_status", "signal", "argv", "branch", "head", "worktree",
                "worktree_state", "duration_ms", "output_sha256", "output_bytes")


REPLACED = ("replaced: its content no longer matches the digest in its name, so it is not shown "
            "(run `majordomus doctor`)")


def summaries(ws: Workspace, task: str | None = None) -> Iterator[dict[str, Any]]:
    """Every run record, newest first (of `task` when given), one read each. A record whose bytes no
    longer match the digest in its name is listed as replaced, never with what it now says (with `task`:
    when its front matter, untrusted, claims the task)."""
    for path in listing.list_paths(ws.paths.runs):
        shown = ws.display(path)
        try:
            data = reading.whole(ws, path, oversized=ValueError)
            intact = reading.intact(path, data)
            meta, body = records.split(data)
        except FileNotFoundError:
            continue
        except (ValueError, UnicodeDecodeError):
            if task is None:
                yield {"path": shown, "name": os.path.basename(path), "error": "no readable front matter "
                       "(run `majordomus doctor`)"}
            continue
        if task is not None and meta.get("task") != task:
            continue
        if not intact:
            yield {"path": shown, "name": os.path.basename(path), "error": REPLACED}
            continue
        out: dict[str, Any] = {"path": shown, "name": os.path.basename(path)}
        out.update({key: meta.get(key) for key in SUMMARY_KEYS})
        out["lines"] = len(body.split("\n")) if body else 0
        out["sha256"] = records.sha256(data)
        yield out


def verdict(meta: dict[str, Any]) -> str:
    """`passed`, `failed (exit 3)` or `was interrupted (signal 2)`."""
    status = meta.get("exit_status")
    if status == 0:
        return "passed"
    if isinstance(meta.get("signal"), int):
        return f"was interrupted (signal {meta['signal']})"
    return f"failed (exit {status})"


def latest(ws: Workspace, task: tasks.Task) -> list[dict[str, Any]]:
    """The latest run of each label of `task`, oldest first: the intact ones of `examined`."""
    return examined(ws, task)[0]


def brief_lines(ws: Workspace, task: tasks.Task, here: Status | None = None,
                found: list[dict[str, Any]] | None = None) -> list[str]:
    """For `brief`: the latest run of each label with its verdict, and whether head or the work tree moved
    since it ran (`- `tests` passed at 3f2a9c1; 1 commit since`). A run whose head was amended or rebased
    is shown at the new id (design §21): `passed at 8b1c0de, rewritten from 3f2a9c1`. `here`: the work
    tree's `git status` when the briefing already ran it; `found`: `latest`, when already read (a record
    gone or replaced is not among them: the briefing names it at its top instead)."""
    if found is None:
        found = latest(ws, task)
    if not found:
        return []
    from majordomus import rewrites
    from majordomus.git import status

    if here is None:
        here = status.status(ws.place)
    since: dict[str | None, tuple[str, str]] = {}
    lines = []
    for meta in found:
        head = meta.get("head") if isinstance(meta.get("head"), str) else None
        if head not in since:
            since[head] = _head_moved(ws, rewrites.relate(ws, head, here.head))  # one ledger read in all
        at, moved = since[head]
        if not moved.endswith("not in this repository") and sorted(here.changed) != sorted(meta.get("changed_files") or []):
            moved += ("; " if moved else "") + "the work tree changed since"
        label = escape(str(meta.get("label")))
        lines.append(f"- `{label}` {verdict(meta)} at {at}"
                     f" ({escape(str(meta.get('timestamp')))}); {moved or 'nothing moved since'}")
    return lines


def _head_moved(ws: Workspace, rel: Any) -> tuple[str, str]:
    """(where the run stands: `3f2a9c1` or `8b1c0de, rewritten from 3f2a9c1`, what moved since)."""
    from majordomus import rewrites

    at = rewrites.short(rel.then) if rel.then else "0000000"
    if rel.mapped is not None:
        at = f"{rewrites.short(rel.mapped)}, rewritten from {at}"
        if rel.same_tree is False:
            at += " (the rewrite changed files)"
    if rel.kind == "same":
        return at, ""
    if rel.kind == "no-head":
        return at, "no commit here now"
    if rel.kind == "foreign":
        return at, "its head is not in this repository"
    if rel.kind == "unreachable":
        return at, "its head is no longer in this branch's history"
    if rel.kind == "behind":
        return at, f"HEAD moved back: {rel.behind} commit{'s' if rel.behind != 1 else ''} of it not in HEAD"
    return at, f"{rel.ahead} commit{'s' if rel.ahead != 1 else ''} since"
