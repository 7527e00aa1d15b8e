"""The one flock appender of a line log (the compaction journal): one whole line per `write`, under `flock`.

Standard library only (`hook compact` runs at every compaction). The file is opened without following a
link and without blocking on a FIFO, confirmed a regular file, locked, and checked again after the lock:
another writer may have rotated it meanwhile. A writer killed mid-line leaves a torn tail, which the next
line does not join. A short write is a failed write (design §2b).
"""

from __future__ import annotations

import errno
import os
import stat

from majordomus.lite import lockwait, safeio
from majordomus.lite.statepaths import FILE_MODE

# A hook appends here: it waits for another hook's line a short while, and never holds the session.
LOCK_WAIT = 1.0


def append_line(path: str, line: bytes, rotated: str | None = None, rotate_bytes: int = 0) -> str:
    """Append `line` and a newline to `path`; with `rotated`, a file that would outgrow `rotate_bytes`
    is moved there first. Returns the path written."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, FILE_MODE)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(errno.EINVAL, "not a regular file", path)
            if safeio.linked_elsewhere(st):  # appended to in place: another file would change too
                raise OSError(errno.EMLINK, "a hard link to another file (it has more than one name)", path)
            lockwait.take(fd, path, LOCK_WAIT, "the compaction journal's lock")
            st = os.fstat(fd)
            try:
                current = os.lstat(path)
            except FileNotFoundError:
                current = None
            if current is None or (current.st_ino, current.st_dev) != (st.st_ino, st.st_dev):
                continue  # another writer rotated it while we waited for the lock: open the new one
            if rotated is not None and st.st_size and st.st_size + len(line) + 1 > rotate_bytes:
                os.replace(path, rotated)
                continue
            if stat.S_IMODE(st.st_mode) != FILE_MODE:
                os.fchmod(fd, FILE_MODE)  # the umask may have taken bits away at creation
            data = line + b"\n"
            if st.st_size and os.pread(fd, 1, st.st_size - 1) != b"\n":
                data = b"\n" + data  # a writer killed mid-line: keep its torn tail on a line of its own
            if os.write(fd, data) != len(data):
                raise OSError(errno.ENOSPC, "short write", path)
            return path
        finally:
            os.close(fd)
