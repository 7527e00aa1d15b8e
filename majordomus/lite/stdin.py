"""Bounded reads of standard input: never more than a limit plus one byte in memory."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import BinaryIO

_DRAIN_MAX = 64 << 20  # read (and drop) at most this much past a bound, so the writer is not cut off


def read_bounded(stream: BinaryIO | None, limit: int) -> bytes:
    """At most `limit` + 1 bytes: one more than allowed is enough to refuse. No stream reads as empty."""
    if stream is None:
        return b""
    chunks = []
    remaining = limit + 1
    while remaining > 0:
        chunk = stream.read(remaining)
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_capped(stream: BinaryIO | None, limit: int) -> bytes | None:
    """At most `limit` bytes; None when there was more (the rest is read and dropped, bounded)."""
    data = read_bounded(stream, limit)
    if len(data) <= limit:
        return data
    drained = 0
    while stream is not None and drained < _DRAIN_MAX and stream.read(65536):
        drained += 65536
    return None


QUIET_S = 1.0  # design §2a: a hook stops reading once stdin has been quiet this long…
TOTAL_S = 1.5  # …and 1.5 s after its process started, at the latest: the work after the read fits in the 2 s
MIN_READ_S = 0.2  # what a hook whose start alone took longer still gives a payload already in the pipe
_AGE_TRUSTED_S = 30.0  # a process older than this reading fd 0 is no hook just started: timed from the read


def _process_age() -> float | None:
    """Seconds since this process started (Linux: /proc/self/stat against the boot clock); None elsewhere
    or when it cannot be told."""
    import os
    import time

    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read(4096)
        ticks = int(stat[stat.rindex(b")") + 2:].split()[19])  # field 22, starttime; the name may hold spaces
        return time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def _read_window(fd: int, total: float) -> tuple[float, float]:
    """(when the read begins, how long it may last): on the process's own stdin (fd 0) `total` counts from
    the process's start, so that it bounds the whole hook, with at least MIN_READ_S left for the read."""
    import time

    began = time.monotonic()
    if fd == 0:
        age = _process_age()
        if age is not None and 0 <= age < _AGE_TRUSTED_S:
            total = max(total - age, MIN_READ_S)
    return began, total


def _arriving(fd: int, quiet: float, total: float) -> Iterator[bytes]:
    """What arrives on `fd`, chunk by chunk, until its end, `quiet` seconds without a byte, or `total` in all
    (the window `_read_window` gives), whichever comes first; an error reading it ends it too."""
    import os
    import select
    import time

    began, total = _read_window(fd, total)
    while True:
        left = total - (time.monotonic() - began)
        if left <= 0:
            return
        try:
            ready, _, _ = select.select([fd], [], [], min(quiet, left))
        except (OSError, ValueError):
            return
        if not ready:
            return  # quiet for `quiet` seconds, or the total is spent
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            continue
        except OSError:
            return
        if not chunk:
            return
        yield chunk


def _complete_json(data: bytes) -> bool:
    """Whether `data` already holds one whole JSON value (the runtimes send one object, then may keep stdin
    open). Parsed only when it ends like a value can, so a large payload is not re-parsed at every chunk."""
    from majordomus.lite import jsonbound

    tail = data.rstrip()
    if tail[-1:] not in (b"}", b"]"):
        return False
    try:
        jsonbound.loads(tail)
    except ValueError:
        return False
    return True


def read_hook_payload(stream: BinaryIO | None, limit: int, quiet: float = QUIET_S,
                      total: float = TOTAL_S) -> bytes | None:
    """A hook's stdin with a deadline (design §2a): at most `limit` bytes, None when there was more. Stops
    at the end of the stream, once one complete JSON value has arrived, after `quiet` seconds without a
    byte, or after `total` seconds in all — whichever comes first; a writer that never closes its end
    (`sleep 20 | majordomus hook session-start`) costs at most `total`. On the process's own stdin (fd 0)
    the `total` is counted from the process's start, so that it bounds the whole hook, not only its read
    (at least MIN_READ_S is left for the read). A stream without a file descriptor (a test's in-memory
    stream) is read as `read_capped` reads it."""
    if stream is None:
        return b""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return read_capped(stream, limit)
    chunks: list[bytes] = []
    size = 0
    for chunk in _arriving(fd, quiet, total):
        size += len(chunk)
        if size > limit:
            chunks = []  # over the bound: keep nothing, go on draining until the end or the deadline
            continue
        chunks.append(chunk)
        if _complete_json(b"".join(chunks)):
            break
    if size > limit:
        return None
    return b"".join(chunks)


def read_head(stream: BinaryIO | None, limit: int, quiet: float = QUIET_S,
              total: float = TOTAL_S) -> tuple[bytes, int]:
    """The first `limit` + 1 bytes of a hook's stdin under the deadline of `read_hook_payload` (end of the
    stream, `quiet` seconds without a byte, `total` in all), and how many line ends came past them (read
    and dropped, so the writer is not cut off). For git's post-rewrite mapping, which is lines, not JSON:
    an endless stream or a writer that never closes costs the deadline, never git's command."""
    if stream is None:
        return b"", 0
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        data, past, drained = read_bounded(stream, limit), 0, 0
        while len(data) > limit and drained < _DRAIN_MAX:  # a stream without a descriptor: a test's bytes
            chunk = stream.read(65536)
            if not chunk:
                break
            past, drained = past + chunk.count(b"\n"), drained + len(chunk)
        return data, past
    kept: list[bytes] = []
    size = past = 0
    for chunk in _arriving(fd, quiet, total):
        room = limit + 1 - size
        if room > 0:
            kept.append(chunk[:room])
        past += chunk.count(b"\n", max(room, 0))
        size += len(chunk)
    return b"".join(kept), past
