"""The record directories as `search` reads them (design §22): each opened once without following a link,
its names listed and never stat'ed, newest first, and a record read through the one safe open, bounded, in
one `read` when it can. What the search's own loop inlines (the open flags, the first read's size) is here
too, so that the rule is written once."""

from __future__ import annotations

import errno
import itertools
import os

from majordomus.errors import EnvironmentProblem
from majordomus.lite import safeio, statepaths

TYPE_CHECKING = False  # typing is not loaded at run time: a small search is mostly the interpreter starting
if TYPE_CHECKING:
    from collections.abc import Iterable

FIRST_READ = 8192  # most records are smaller: one read(2) and a short count means the end of the file
OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)  # safeio's


def open_dir(path: str) -> int | None:
    """The record directory, opened without following a link; None when there is none."""
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            statepaths.is_real_dir(path)  # the one rule's refusal, naming what is there instead
            raise safeio.UnsafeFile(path, "is not a real directory") from None
        raise EnvironmentProblem(f"cannot open {path}: {exc.strerror}", "check the state directory") from exc


def names(dir_fd: int) -> list[str]:
    """Every name in a directory, newest first. Whether a name is a record's is asked only of a file that
    is reported, as a match or as skipped: the rest are read once, bounded, and never named."""
    listed = os.listdir(dir_fd)
    listed.sort(reverse=True)  # strings sort faster than tuples: pair them up only as they are merged
    return listed


def merged(listings: list[list[str]]) -> Iterable[tuple[str, int]]:
    """(name, index of its directory) of every listing, newest first (the same name in two directories:
    the later directory first). One sort in C: each listing is a sorted run, which the sort merges."""
    if len(listings) == 1:
        return zip(listings[0], itertools.repeat(0))
    pairs = [pair for index, found in enumerate(listings) for pair in zip(found, itertools.repeat(index))]
    pairs.sort(reverse=True)
    return pairs


def read_record(name: str, dir_fd: int) -> bytes:
    """The record's bytes through the one safe open (no link, no FIFO, bounded), in one read when it can."""
    from majordomus.store import records

    fd = safeio.open_regular(name, records.MAX_RECORD_BYTES, dir_fd=dir_fd)
    try:
        data = os.read(fd, FIRST_READ)
        if len(data) < FIRST_READ:
            return data  # a short read of a regular file is its end
        chunks = [data]
        size = len(data)
        while True:
            chunk = os.read(fd, min(1 << 20, records.MAX_RECORD_BYTES + 1 - size))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
            if size > records.MAX_RECORD_BYTES:
                raise safeio.UnsafeFile(name, f"is over the {records.MAX_RECORD_BYTES} bytes a record may be")
    finally:
        os.close(fd)
