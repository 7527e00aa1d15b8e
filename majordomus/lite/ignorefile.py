"""The state's ignore file (`.ai/local/.gitignore`, `*`): what keeps the local state out of `git add`
(design §2a). Standard library only: the hot paths make the state directory too."""

from __future__ import annotations

import errno
import os
import stat

from majordomus.errors import EnvironmentProblem
from majordomus.lite import textrules
from majordomus.lite.safeio import kind_of
from majordomus.lite.statepaths import FILE_MODE, unwritable_hint


def ignore_missing(path: str) -> bool:
    """Whether the state's ignore file must be written: not there, or an empty file (a command killed
    between creating it and writing it, a power loss before its bytes reached the disk) that keeps nothing
    out of `git add`. One lstat on the hot path, as before."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return True
    return stat.S_ISREG(st.st_mode) and st.st_size == 0


def special(path: str) -> str | None:
    """What is wrong with the state's ignore file when it is there but not a regular file, else None. git
    reads it as the ignore rules of the state directory and would wait forever on a FIFO (design §2a:
    nothing waits on a FIFO); it does not follow a link there, nor read a directory, so the state would be
    stageable. Asked before git looks at the work tree (`git status`, `check-ignore`) and before the state
    is written: one lstat."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None  # absent (the next writer writes it), or unreadable: git says so itself
    if stat.S_ISREG(mode):
        return None
    return (f"{path} is {kind_of(mode)}, not the file that keeps the state out of git (git would wait on a "
            "FIFO there, and ignores anything else)")


def removal_hint(path: str) -> str:
    return f"remove it (`rm -r -- {textrules.shell_quoted(path)}`): the next majordomus command writes it again"


def refuse_special(path: str) -> None:
    """Exit 12, naming it, when the ignore file is not a regular file (`special`)."""
    problem = special(path)
    if problem is not None:
        raise EnvironmentProblem(f"{problem}; nothing was written", removal_hint(path))


def write_ignore(path: str) -> None:
    """The state's ignore file (`*`), created exclusively (or an empty one filled), and made durable: it
    keeps the state out of `git add`."""
    fd = -1
    created = False
    try:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
            created = True
        except FileExistsError:
            if not ignore_missing(path):
                return  # another command wrote it meanwhile
            fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        if os.write(fd, b"*\n") != 2:  # one write of two bytes: a failure leaves no empty ignore file behind
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        os.fsync(fd)
    except OSError as exc:
        if fd >= 0:
            os.close(fd)
            if created:
                try:
                    os.unlink(path)
                except OSError:
                    pass  # an empty file stays: the next command fills it (`ignore_missing`)
        raise EnvironmentProblem(f"cannot write {path}: {exc.strerror}",
                                 unwritable_hint(os.path.dirname(path), exc.errno)) from exc
    os.close(fd)
