"""The one way a state file or a committed `.ai/` file is opened (design §2a).

Anything in the state directory or the committed `.ai/` may have been replaced by a symlink, a FIFO, a
device, a directory or a huge file. Every read here opens with O_NOFOLLOW | O_NONBLOCK (nothing waits
on a FIFO, nothing follows a link), checks with fstat that it is a regular file, and reads at most a
bound. A file that breaks a rule raises `UnsafeFile` (exit 12, naming the file and what it is).
"""

from __future__ import annotations

import errno
import os
import stat

from majordomus.errors import EnvironmentProblem as EnvironmentProblem  # re-exported: callers catch it here
from majordomus.lite import textrules

TYPE_CHECKING = False
if TYPE_CHECKING:
    pass

DEFAULT_MAX = 16 << 20  # a state file with no limit of its own
_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def move_away_hint(path: str) -> str:
    """What to do with a file majordomus will not read or write over: move it aside, and run again."""
    return (f"move it away (`mv {textrules.shell_quoted(path)} {textrules.shell_quoted(path + '.bad')}`), then run "
            "the same command again; `majordomus doctor` lists what else is wrong")


class UnsafeFile(EnvironmentProblem):
    """A file where majordomus reads is not what its only writer leaves there."""

    def __init__(self, path: str, what: str, hint: str = "") -> None:
        super().__init__(f"{path} {what}; majordomus does not read it", hint or move_away_hint(path))
        self.path = path
        self.what = what


def linked_elsewhere(st: os.stat_result) -> bool:
    """The one rule for a file majordomus writes in place (the lock, the ledger, a journal, an index): it
    must have no other name, for through a hard link the write would change another file too."""
    return st.st_nlink > 1


def one_name(path: str, st: os.stat_result) -> None:
    """`linked_elsewhere` refused: exit 12 naming the file (a lock's note would truncate the other file)."""
    if linked_elsewhere(st):
        raise EnvironmentProblem(f"{path} has {st.st_nlink} names (a hard link to another file): majordomus "
                                 "writes it in place, and would change that file too; nothing was written",
                                 f"remove this name (`rm {textrules.shell_quoted(path)}`): the next command makes "
                                 "a file of its own")


def kind_of(mode: int) -> str:
    """A file type in words, for messages and doctor findings."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_regular(path: str, limit: int = DEFAULT_MAX, dir_fd: int | None = None) -> int:
    """A read-only descriptor of the regular file at `path` (relative to `dir_fd` when given: a scan of
    100,000 records resolves its directory once), no larger than `limit`.

    FileNotFoundError passes through (callers decide what absence means); anything else that is not a
    plain, bounded, regular file raises `UnsafeFile`."""
    try:
        fd = os.open(path, _FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeFile(path, "is a symbolic link") from exc
        if exc.errno in (errno.ENXIO, errno.EOPNOTSUPP):
            raise UnsafeFile(path, "is a socket or a device") from exc
        raise EnvironmentProblem(f"cannot read {path}: {exc.strerror}",
                                 "check its permissions and the state directory's") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFile(path, f"is {kind_of(st.st_mode)} where a file belongs")
        if st.st_size > limit:
            raise UnsafeFile(path, f"is {st.st_size} bytes, over the {limit} majordomus ever writes or reads there")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read(path: str, limit: int = DEFAULT_MAX) -> bytes:
    """The whole regular file at `path` (at most `limit` bytes), through `open_regular`."""
    fd = open_regular(path, limit)
    try:
        chunks = []
        size = 0
        while True:
            try:
                chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            except OSError as exc:
                raise EnvironmentProblem(f"cannot read {path}: {exc.strerror}", "check the file system") from exc
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:  # it grew after fstat
                raise UnsafeFile(path, f"is over the {limit} bytes majordomus ever writes or reads there")
        return b"".join(chunks)
    finally:
        os.close(fd)


def stamp(path: str) -> tuple[int, int, int] | None:
    """What tells one version of a file from the next without reading it (inode, size, modification time;
    `store.files.replace` gives every version a new inode): None when it cannot be told."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def read_optional(path: str, limit: int = DEFAULT_MAX) -> bytes | None:
    """`read`, or None when nothing is there."""
    try:
        return read(path, limit)
    except FileNotFoundError:
        return None
