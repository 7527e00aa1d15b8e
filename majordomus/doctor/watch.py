"""`majordomus watch` (design §11): new ledger events, and conditions reported once when they begin and once when they clear."""

from __future__ import annotations

import os
import signal
import stat
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from majordomus import clock, tasks
from majordomus import config as config_mod
from majordomus.doctor import checks as doctor
from majordomus.doctor.findings import FAIL, OK, Finding
from majordomus.doctor.scan import RECORD_DIRS
from majordomus.lite import safeio
from majordomus.lite.statepaths import CONFIG_RELPATH
from majordomus.store import ledger, paths, records
from majordomus.workspace import Workspace

_CHUNK = 1 << 20
_ROUND_MAX = 16 << 20  # bytes read in one round: a burst larger than this is reported over the next rounds
_MARK = 64  # bytes before the offset remembered, to notice a ledger rewritten under the same name
_RACY_NS = 2_000_000_000  # a directory changed this recently may change again within its mtime's granule


@dataclass
class Report:
    kind: str  # event | begins | clears | dropped | tick
    at: str
    code: str = ""
    message: str = ""
    level: str | None = None
    path: str | None = None
    hint: str | None = None
    event: dict[str, Any] | None = None
    tick: int | None = None


class Tail:
    """The ledger read from an offset, like `tail -F`: only what is new; rotation and truncation survived.

    Memory and work stay bounded whatever the ledger holds: a line is read only once it is complete and
    at most `ledger.LINE_MAX` long (a longer one is `ledger.OVERLONG`, never read), and a torn tail is
    scanned once — the next round looks for its end from where the last one stopped, not from its start."""

    def __init__(self, path: str, from_end: bool = True) -> None:
        self.path = path
        self.fd: int | None = None
        self.offset = 0  # where the first line not yet reported starts
        self.scanned = 0  # how far the search for that line's end has gone (>= offset)
        self.mark = b""
        if self._open() and from_end:
            self.offset = self.scanned = os.fstat(self.fd).st_size  # type: ignore[arg-type]
            self._remember()

    def _open(self) -> bool:
        """Open the ledger; False when there is none yet. A link, a FIFO or a directory there is refused
        (`UnsafeFile`, exit 12): watching it would watch nothing, or wait."""
        try:
            self.fd = safeio.open_regular(self.path, ledger.MAX_BYTES)
        except FileNotFoundError:
            self.fd = None
            return False
        self.offset = self.scanned = 0
        self.mark = b""
        return True

    def _close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def _remember(self) -> None:
        start = max(0, self.offset - _MARK)
        self.mark = os.pread(self.fd, self.offset - start, start)  # type: ignore[arg-type]

    def _rotated(self) -> bool:
        try:
            now = os.lstat(self.path)
        except FileNotFoundError:
            return False  # moved away and not yet recreated: keep draining the old file
        assert self.fd is not None
        mine = os.fstat(self.fd)
        return (now.st_dev, now.st_ino) != (mine.st_dev, mine.st_ino)

    def _drain(self) -> list[bytes]:
        """Complete lines from the offset to the end; a line still being written waits for the next round."""
        assert self.fd is not None
        size = os.fstat(self.fd).st_size
        if size < self.scanned or (self.mark and os.pread(self.fd, len(self.mark), self.offset - len(self.mark))
                                   != self.mark):
            self.offset = self.scanned = 0  # truncated or rewritten: everything in it is new to us
            self.mark = b""
        lines: list[bytes] = []
        began = self.offset
        pos = max(self.offset, self.scanned)
        stop = pos + _ROUND_MAX
        while pos < stop:
            chunk = os.pread(self.fd, _CHUNK, pos)
            if not chunk:
                break
            cut = 0
            while (nl := chunk.find(b"\n", cut)) >= 0:
                end = pos + nl
                if end - self.offset > ledger.LINE_MAX:
                    lines.append(ledger.OVERLONG)
                elif self.offset >= pos:
                    lines.append(chunk[self.offset - pos:nl])
                else:  # the line began in an earlier chunk (or round)
                    lines.append(os.pread(self.fd, end - self.offset, self.offset))
                self.offset = end + 1
                cut = nl + 1
            pos += len(chunk)
        self.scanned = pos
        if self.offset != began:
            self._remember()
        return lines

    def read_new(self) -> list[bytes]:
        if self.fd is None and not self._open():
            return []
        lines = self._drain()
        if self._rotated():
            while more := self._drain():  # whatever reached the old file before it was moved away
                lines += more
            self._close()
            if self._open():
                lines += self._drain()
        return lines

    def close(self) -> None:
        self._close()


@dataclass
class Watcher:
    """One `tick()` per round: the new events, then the conditions that began or cleared since the last round."""

    ws: Workspace
    tail: Tail
    conditions: dict[str, Finding] = field(default_factory=dict)
    counted: dict[str, tuple[tuple[int, int], int]] = field(default_factory=dict)
    config_stamp: tuple[int, int, int] | None = None
    config_problem: Finding | None = None
    ticks: int = 0

    @classmethod
    def open(cls, cwd: str | None = None, from_end: bool = True) -> Watcher:
        ws, findings = doctor.open_workspace(cwd)
        paths.check_readable(ws.paths)  # never read through a link where the state should be
        watcher = cls(ws=ws, tail=Tail(ws.paths.ledger, from_end=from_end))
        watcher.config_stamp = watcher._config_stamp()
        watcher.config_problem = next((f for f in findings if f.code == "config.invalid"), None)
        return watcher

    def _config_stamp(self) -> tuple[int, int, int] | None:
        root = self.ws.paths.config_root
        try:
            st = os.stat(os.path.join(root, CONFIG_RELPATH)) if root else None
        except OSError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size) if st else None

    def _reload_config(self) -> None:
        """Limits may change while watching; an edit that breaks the file is a condition, the old limits stay."""
        stamp = self._config_stamp()
        if stamp == self.config_stamp:
            return
        self.config_stamp = stamp
        try:
            self.ws.config = config_mod.load(self.ws.paths.config_root)
            self.config_problem = None
        except config_mod.ConfigError as exc:
            self.config_problem = Finding(FAIL, "config.invalid", exc.message, None, exc.hint)

    def _count(self, directory: str) -> int:
        """Records in a directory, recounted only when the directory changed (its mtime moves on link)."""
        try:
            st = os.lstat(directory)
        except OSError:
            return 0
        if not stat.S_ISDIR(st.st_mode):
            return 0
        key = (st.st_ino, st.st_mtime_ns)
        cached = self.counted.get(directory)
        if cached and cached[0] == key and time.time_ns() - st.st_mtime_ns > _RACY_NS:
            return cached[1]
        try:
            with os.scandir(directory) as entries:
                count = sum(1 for e in entries if records.name_digest(e.name) is not None)
        except OSError:
            return 0
        self.counted[directory] = (key, count)
        return count

    def observe(self) -> dict[str, Finding]:
        """Every condition holding now, by a key that stays the same while it holds."""
        self._reload_config()
        now: dict[str, Finding] = {}
        if self.config_problem is not None:
            now["config.invalid"] = self.config_problem
        for directory in RECORD_DIRS:
            finding = doctor.retention(self.ws, directory, self._count(self.ws.paths.directory(directory)))
            if finding.level != OK:
                now[finding.code] = finding
        for task_id in sorted(set(tasks.read_index(self.ws).values())):
            try:
                task = tasks.load(self.ws, task_id)
            except Exception:
                continue
            stale = doctor.stale(self.ws, task) if task.status == "active" else None
            if stale is not None:
                now[f"task.stale:{task_id}"] = stale
        return now

    def tick(self) -> list[Report]:
        self.ticks += 1
        at = clock.now_iso()
        reports = []
        for line in self.tail.read_new():
            if not line.strip():
                continue
            event = ledger.parse_line(line)
            if event is None:
                reports.append(Report("dropped", at, "ledger.dropped", "a torn or invalid ledger line was skipped",
                                      level="warn", path=self.ws.display(self.ws.paths.ledger)))
            else:
                reports.append(Report("event", str(event.get("at", at)), event["event"], _describe(event),
                                      event=event))
        current = self.observe()
        for key, finding in current.items():
            if key not in self.conditions:
                reports.append(Report("begins", at, finding.code, finding.message, finding.level, finding.path,
                                      finding.hint))
        for key, finding in self.conditions.items():
            if key not in current:
                reports.append(Report("clears", at, finding.code, self._cleared(key, finding), OK, finding.path))
        self.conditions = current
        return reports

    def _cleared(self, key: str, finding: Finding) -> str:
        if key.startswith("retention."):
            directory = key.split(".", 1)[1]
            return doctor.retention(self.ws, directory, self._count(self.ws.paths.directory(directory))).message
        if key.startswith("task.stale:"):
            return f"task `{key.split(':', 1)[1]}` is no longer stale (checkpointed, or no longer active here)"
        return f"{finding.code} no longer holds"


def _describe(event: dict[str, Any]) -> str:
    extra = {k: v for k, v in event.items() if k not in ("v", "seq", "at", "event", "task", "worktree", "branch", "prev")}
    detail = " ".join(f"{k}={v}" for k, v in extra.items())
    if event.get("event") == "git.rewrite":  # not its mapping: up to 3,000 pairs
        from majordomus import rewrites

        detail = rewrites.summary(event)
    return f"{event.get('task') or '-'} {detail}".rstrip()


class Stop(Exception):
    """Ctrl-C or SIGTERM: leave the loop cleanly."""


def _stop(signum: int, frame: Any) -> None:
    raise Stop()


def run(watcher: Watcher, interval: float, once: bool, emit: Callable[[Report], None], heartbeat: bool = False) -> int:
    """Round after round until interrupted; 0 on Ctrl-C, which is how a watch normally ends."""
    # Set explicitly: a shell that starts us in the background may have left SIGINT ignored.
    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[sig] = signal.signal(sig, _stop)
        except ValueError:  # not the main thread (an embedding program): it handles its own signals
            pass
    try:
        while True:
            for report in watcher.tick():
                emit(report)
            if heartbeat:
                emit(Report("tick", clock.now_iso(), tick=watcher.ticks))
            if once:
                return 0
            time.sleep(interval)
    except (Stop, KeyboardInterrupt):
        return 0
    finally:
        watcher.tail.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
