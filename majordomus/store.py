"""Writing as git writes: immutable records linked in exclusively, mutable files replaced atomically."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from typing import Iterator

from majordomus.errors import EnvironmentProblem
from majordomus.paths import FILE_MODE

TMP_PREFIX = ".tmp-"


def _environment(path: str, exc: OSError) -> EnvironmentProblem:
    return EnvironmentProblem(
        f"cannot write {path}: {exc.strerror}",
        "check that the state directory is writable and not on a read-only or full file system",
    )


def fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_temp(directory: str, data: bytes) -> str:
    """An exclusively created 0600 temp file in `directory`, written and fsynced."""
    for attempt in range(100):
        tmp = os.path.join(directory, f"{TMP_PREFIX}{os.getpid()}-{attempt}")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
        except FileExistsError:
            continue
        except OSError as exc:
            raise _environment(tmp, exc) from exc
        try:
            os.fchmod(fd, FILE_MODE)
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        except OSError as exc:
            os.close(fd)
            _unlink_quietly(tmp)
            raise _environment(tmp, exc) from exc
        os.close(fd)
        return tmp
    raise EnvironmentProblem(f"cannot create a temporary file in {directory}", "remove stale .tmp-* files there")


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def link_in(directory: str, name: str, data: bytes, *, sync_dir: bool = True) -> tuple[str, bool]:
    """Store an immutable record under `name`, never replacing anything. Returns (path, created).

    `sync_dir=False` leaves the directory fsync to the caller, who links many records and syncs it once."""
    final = os.path.join(directory, name)
    tmp = _write_temp(directory, data)
    try:
        os.link(tmp, final, follow_symlinks=False)
        created = True
    except FileExistsError:
        created = False
    except OSError as exc:
        _unlink_quietly(tmp)
        raise _environment(final, exc) from exc
    _unlink_quietly(tmp)
    if created and sync_dir:
        fsync_dir(directory)
    return final, created


def replace(path: str, data: bytes) -> None:
    """Replace a mutable file atomically: temp + fsync + rename; the old file survives any failure."""
    directory = os.path.dirname(path)
    tmp = _write_temp(directory, data)
    try:
        os.replace(tmp, path)
    except OSError as exc:
        _unlink_quietly(tmp)
        raise _environment(path, exc) from exc
    fsync_dir(directory)


def write_derived(path: str, data: bytes) -> None:
    """Best effort for a cache (derivable data): temp + rename, no fsync; a failure only costs a recompute."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        _unlink_quietly(tmp)


def read_nofollow(path: str) -> bytes:
    """A whole file, refusing a symbolic link; plain os calls, since listings do this per record."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


@contextlib.contextmanager
def locked(path: str) -> Iterator[None]:
    """Hold the exclusive lock that serialises changes to mutable state."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise EnvironmentProblem(f"{path} is a symbolic link", "remove the link") from exc
        raise _environment(path, exc) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
