"""Bounded reads of standard input: never more than a limit plus one byte in memory."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
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
