"""The append-only, hash-chained event log (design §10): one whole line per write, under `flock`."""

from __future__ import annotations

import errno
import json
import os
import stat

from majordomus.errors import EnvironmentProblem
from majordomus.lite import jsonbound, lockwait, safeio
from majordomus.lite.sha import hexdigest
from majordomus.store import fault
from majordomus.store.lookback import ends_search, search_cutoff
from majordomus.store.paths import FILE_MODE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Generator, Iterator
    from typing import Any

_TAIL_CHUNK = 65536
# How long an append waits for the ledger's lock: an append holds it for milliseconds; a holder that keeps it
# longer is stopped (a hook, a sync, which append outside the state lock): exit 75, as for the state lock.
LOCK_WAIT = 10.0
MAX_BYTES = 1 << 40  # the ledger only grows and its reads stream: no bound but a sane one
# No event of ours comes near this (its fields are ids, paths and digests); a longer line is a torn tail or
# not ours, and it is one dropped line, never read into memory (design §2a: memory is bounded).
LINE_MAX = 1 << 20  # bytes of a line, its newline not counted
# What a reader sees in place of a line over LINE_MAX: not UTF-8, so no parse makes an event of it.
OVERLONG = b"\xff(a ledger line over the length any event has, skipped unread)\n"


class Replay:
    __slots__ = ("dropped_lines", "events")

    def __init__(self, events: list[dict[str, Any]], dropped_lines: int = 0) -> None:
        self.events = events
        self.dropped_lines = dropped_lines


class Verification:
    __slots__ = ("breaks", "dropped_lines", "events")

    def __init__(self, events: int, dropped_lines: int, breaks: list[str]) -> None:
        self.events = events
        self.dropped_lines = dropped_lines
        self.breaks = breaks

    @property
    def ok(self) -> bool:
        return not self.breaks


def event_line(record: dict[str, Any]) -> bytes:
    """One event as its ledger line: compact JSON, readable UTF-8; where a field holds a lone surrogate (a
    byte git gave that is not UTF-8: a ref's name from a remote, say), which UTF-8 cannot hold, the whole
    line is ASCII JSON, `\\udcff` and all: the same value, read back as it was, and never a failed write
    after the work it logs was done."""
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(record, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def line_hash(line: bytes) -> str:
    if line.endswith(b"\n"):
        return hexdigest(memoryview(line)[:-1])
    return hexdigest(line)


def lines_backwards(fd: int, size: int) -> Iterator[bytes]:
    """The file's lines from the last to the first (without their newlines), reading backwards.

    Linear in what it reads: newlines are found chunk by chunk and each line is read once, so a long
    torn tail (a writer killed mid-line) costs one pass, never a re-join per chunk; a line over LINE_MAX
    is `OVERLONG`, never read."""
    line_end = pos = size
    while pos > 0:
        start = max(0, pos - _TAIL_CHUNK)
        chunk = os.pread(fd, pos - start, start)
        cut = len(chunk)
        while True:
            nl = chunk.rfind(b"\n", 0, cut)
            if nl < 0:
                break
            line_start = start + nl + 1
            if line_end - line_start > LINE_MAX:
                yield OVERLONG
            elif line_end > line_start:
                yield (chunk[nl + 1:line_end - start] if line_end <= pos
                       else os.pread(fd, line_end - line_start, line_start))
            line_end, cut = start + nl, nl
        pos = start
    if line_end > LINE_MAX:
        yield OVERLONG
    elif line_end > 0:
        yield os.pread(fd, line_end, 0)


# How far back from the ledger's end a retry looks for the event of a record or a pin (`logged`,
# `continuity`): beyond it, it cannot tell, and never logs a second event on a guess.
EVENT_LOOK_BACK = 4 << 20


def pin_events(path: str, since: str) -> tuple[dict[str, list[dict[str, Any]]], bool]:
    """The `context.pin` and `context.unpin` events by pin id, read backwards from the end of the ledger
    down to the events older than `since`; and whether the ledger covers that time (an older event, or
    the chain's first, was reached). A ledger that is absent, unreadable or begins later (rotated or
    truncated by hand) covers nothing: a second event on a guess would be a lie too."""
    found: dict[str, list[dict[str, Any]]] = {}
    try:
        fd = safeio.open_regular(path, MAX_BYTES)
    except (OSError, EnvironmentProblem):  # absent or unreadable: doctor says why
        return found, False
    try:
        read = 0
        for line in lines_backwards(fd, os.fstat(fd).st_size):
            read += len(line) + 1
            if read > EVENT_LOOK_BACK:
                return found, False
            event = parse_line(line) if line.strip() else None
            if event is None:
                continue
            if event["event"] in ("context.pin", "context.unpin") and isinstance(event.get("pin"), str):
                found.setdefault(event["pin"], []).append(event)
            if str(event.get("at", "")) < since or event.get("seq") == 1:
                return found, True
        return found, False  # nothing older than `since`, and no first event: the ledger begins later
    finally:
        os.close(fd)


def tail(path: str, lookback: int, needle: bytes | None = None) -> Iterator[dict[str, Any]]:
    """The events of the last `lookback` lines, newest first (nothing when the ledger cannot be read); with
    `needle`, only the lines that hold it are parsed (the others still count against the bound)."""
    try:
        fd = safeio.open_regular(path, MAX_BYTES)
    except (OSError, safeio.UnsafeFile):
        return
    try:
        try:
            lines = enumerate(lines_backwards(fd, os.fstat(fd).st_size))
            for number, line in lines:
                if number >= lookback:
                    return
                if needle is not None and needle not in line:
                    continue
                obj = parse_line(line) if line.strip() else None
                if obj is not None:
                    yield obj
        except OSError as exc:  # a read that fails part way: never taken for the ledger's beginning
            raise EnvironmentProblem(f"cannot read {path}: {exc.strerror or exc}",
                                     "check the disk or file system it is on, then run the command again") from exc
    finally:
        try:
            os.close(fd)
        except OSError:
            pass  # everything needed was read; a close that fails (EIO on a network file system) loses nothing


def _last_valid(fd: int, size: int) -> tuple[dict[str, Any] | None, bytes | None, bool]:
    """The last valid event and its line, reading backwards; and whether the file ends in a newline."""
    if size == 0:
        return None, None, True
    ends_clean = os.pread(fd, 1, size - 1) == b"\n"
    for line in lines_backwards(fd, size):
        if line.strip():
            obj = parse_line(line)
            if obj is not None:
                return obj, line, ends_clean
    return None, None, ends_clean


def check_writable(path: str) -> None:
    """Before a record is linked in: the ledger its event goes to is a regular file (or not there yet).
    A FIFO, a link or a directory there would fail the append after the record is already stored."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise safeio.UnsafeFile(path, f"is {safeio.kind_of(st.st_mode)} where the ledger belongs")
    safeio.one_name(path, st)


def append(path: str, event: str, fields: dict[str, Any], at: str) -> dict[str, Any]:
    """Append one event; the chain's `prev` is the hash of the last valid line."""
    return append_many(path, [(event, fields)], at)[0]


def append_many(path: str, items: list[tuple[str, dict[str, Any]]], at: str) -> list[dict[str, Any]]:
    """Append chained events in one write and one fsync, under the lock (`sync` imports by the hundred)."""
    if not items:
        return []
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK, FILE_MODE)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise safeio.UnsafeFile(path, "is a symbolic link") from exc
        raise EnvironmentProblem(f"cannot open the ledger {path}: {exc.strerror}", "check the state directory") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise safeio.UnsafeFile(path, f"is {safeio.kind_of(st.st_mode)} where a file belongs")
        safeio.one_name(path, st)
        lockwait.take(fd, path, LOCK_WAIT, "the ledger's lock")
        last, last_line, ends_clean = _last_valid(fd, os.fstat(fd).st_size)
        seq = last["seq"] if last else 0
        written: list[dict[str, Any]] = []
        lines = [] if ends_clean else [b""]  # keep a torn line from a killed writer on its own line
        for event, fields in items:
            seq += 1
            record: dict[str, Any] = {"v": 1, "seq": seq, "at": at, "event": event}
            record.update(fields)
            record["prev"] = line_hash(last_line) if last_line is not None else None
            last_line = event_line(record)
            lines.append(last_line)
            written.append(record)
        size = os.fstat(fd).st_size
        data = b"\n".join(lines) + b"\n"
        try:
            if os.write(fd, data) != len(data):  # a short write (a full disk) is a failed write
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            fault.point("after-ledger-write")
            os.fsync(fd)
        except OSError as exc:
            if not _cut_back(fd, size):
                raise MaybeAppended(
                    f"cannot append to the ledger {path}: {exc.strerror}; the event may be in it all the same "
                    "(taking back what was written failed too)",
                    "check the disk (`dmesg`) and `majordomus doctor`; then run the same command again: it "
                    "completes what is missing, and never writes an event twice") from exc
            raise
        return written
    except OSError as exc:
        raise EnvironmentProblem(f"cannot append to the ledger {path}: {exc.strerror}; the event was not "
                                 "written", "free space on the state directory's file system (or fix the "
                                 "error above), then run the same command again") from exc
    finally:
        os.close(fd)


class MaybeAppended(EnvironmentProblem):
    """An append that failed, and whose taking back failed too: the event may be in the ledger (a retry
    looks for it before it writes one), or a torn tail that readers skip."""


def _cut_back(fd: int, size: int) -> bool:
    """Under the lock: remove what a failed append left after the last complete line (design §10), so that
    no torn line and no event that was reported as failed stays behind. Whether that landed."""
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    except OSError:
        return False  # a torn tail is skipped and counted by every reader; the next append starts a new line
    return True


def iter_lines(path: str, offset: int = 0) -> Generator[bytes, None, None]:
    """Every line from `offset` on, streamed: memory holds one line, at most LINE_MAX bytes; a longer
    line (a torn tail of hundreds of megabytes, say) is skipped unread and seen as `OVERLONG`."""
    try:
        fd = safeio.open_regular(path, MAX_BYTES)
    except FileNotFoundError:
        return
    with os.fdopen(fd, "rb", buffering=_TAIL_CHUNK) as fh:
        if offset:
            fh.seek(offset)
        while True:
            line = fh.readline(LINE_MAX + 1)  # at most LINE_MAX bytes and the newline
            if not line:
                return
            if len(line) > LINE_MAX and not line.endswith(b"\n"):
                while line and not line.endswith(b"\n"):
                    line = fh.readline(_TAIL_CHUNK)
                yield OVERLONG
                continue
            yield line


def scan(path: str, dropped: list[int]) -> Iterator[tuple[bytes, dict[str, Any]]]:
    """(line, event) for every valid line, in order; torn or invalid lines only add to `dropped[0]`."""
    for line in iter_lines(path):
        obj = parse_line(line)
        if obj is not None:
            yield line, obj
        elif line.strip():
            dropped[0] += 1


def replay(path: str, task: str | None = None) -> Replay:
    """Every valid event in order; torn or invalid lines are skipped and counted, never fatal."""
    dropped = [0]
    events = [obj for _line, obj in scan(path, dropped) if task is None or obj.get("task") == task]
    return Replay(events=events, dropped_lines=dropped[0])


class Chain:
    """The hash chain and sequence checked one valid line at a time, so one pass can also do other work."""

    def __init__(self) -> None:
        self.expected: str | None = None  # the hash the next line's `prev` must carry
        self.previous_seq = 0
        self.breaks: list[str] = []

    def feed(self, line: bytes, obj: dict[str, Any]) -> None:
        if obj.get("prev") != self.expected:
            self.breaks.append(f"event seq {obj['seq']}: `prev` does not match the line before it")
        if obj["seq"] != self.previous_seq + 1:
            self.breaks.append(f"event seq {obj['seq']}: expected seq {self.previous_seq + 1}")
        self.expected = line_hash(line)
        self.previous_seq = obj["seq"]


def parse_line(line: bytes) -> dict[str, Any] | None:
    """The event on one ledger line, or None when the line is torn, too deep or not an event.

    Hot in every replay: the bytes are decoded first (no encoding detection) and handed to the one
    bounded loader's line path."""
    try:
        obj = jsonbound.loads_object_line(line.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError and JSONDecodeError (too deep included)
        return None
    if not (isinstance(obj, dict) and isinstance(obj.get("seq"), int) and isinstance(obj.get("event"), str)):
        return None
    # The fields every reader keys and orders by hold what the writer writes, or the line is no event: a
    # `task` that is a list would be no key of a set, an `at` that is a number no time to compare.
    task, at = obj.get("task"), obj.get("at")
    if (task is not None and not isinstance(task, str)) or (at is not None and not isinstance(at, str)):
        return None
    return obj


def verify(path: str) -> Verification:
    """Check the hash chain and the sequence over the valid lines."""
    chain = Chain()
    dropped = [0]
    count = 0
    for line, obj in scan(path, dropped):
        count += 1
        chain.feed(line, obj)
    return Verification(events=count, dropped_lines=dropped[0], breaks=chain.breaks)


def last_event(path: str, task: str | None = None, events: tuple[str, ...] = (),
               exclude: tuple[str, ...] = ()) -> dict[str, Any] | None:
    """The newest valid event (of `task`, among `events` when given, not among `exclude`), reading
    backwards from the end: a briefing asks for the latest fact, which should not cost a whole replay."""
    try:
        fd = safeio.open_regular(path, MAX_BYTES)
    except FileNotFoundError:
        return None
    try:
        for line in lines_backwards(fd, os.fstat(fd).st_size):
            obj = parse_line(line) if line.strip() else None
            if obj is None or obj["event"] in exclude:
                continue
            if (task is None or obj.get("task") == task) and (not events or obj["event"] in events):
                return obj
    finally:
        os.close(fd)
    return None


def logged(path: str, rel: str, since: str, key: str = "path") -> bool:
    """Whether the ledger holds an event naming `rel` (its own, or a `sync.import`) — or whose `key` is
    `rel` (a push's `commit`) —, looked for backwards from the end down to the events older than `since`
    (the record's timestamp) by more than `CLOCK_SLACK`, a run's event not counted (it carries its
    command's start). False only when the ledger covers that time (such an event, or the chain's first,
    seq 1, was reached) without one: a ledger that begins later (rotated or truncated by hand) or a search
    past `EVENT_LOOK_BACK` bytes cannot tell, and counts as logged."""
    try:
        fd = safeio.open_regular(path, MAX_BYTES)
    except FileNotFoundError:
        return True
    except (OSError, EnvironmentProblem):
        return True  # unreadable: doctor says so; never log a second event on a guess
    cutoff = search_cutoff(since)
    try:
        size = os.fstat(fd).st_size
        read = 0
        earliest: dict[str, Any] | None = None
        for line in lines_backwards(fd, size):
            read += len(line) + 1
            if read > EVENT_LOOK_BACK:
                return True
            event = parse_line(line) if line.strip() else None
            if event is None:
                continue
            if event.get(key) == rel:
                return True
            if ends_search(event, cutoff):
                return False
            earliest = event
        return earliest is None or earliest.get("seq") != 1
    finally:
        os.close(fd)
