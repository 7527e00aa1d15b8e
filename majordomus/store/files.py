"""Writing as git writes: immutable records linked in exclusively, mutable files replaced atomically."""

from __future__ import annotations

import errno
import os
import stat

from majordomus.errors import EnvironmentProblem
from majordomus.lite import lockwait, safeio, stopsignals, textrules
from majordomus.store import fault
from majordomus.store.paths import FILE_MODE

TYPE_CHECKING = False  # on the checkpoint's path: typing is not imported at run time
if TYPE_CHECKING:
    from collections.abc import Callable

TMP_PREFIX = ".tmp-"


def _environment(path: str, exc: OSError) -> EnvironmentProblem:
    if exc.errno == errno.EIO:
        return EnvironmentProblem(f"cannot write {path}: {exc.strerror}",
                                  "the disk reported an I/O error: check it (`dmesg`), then run the same command again")
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return EnvironmentProblem(f"cannot write {path}: {exc.strerror}",
                                  "the file system is full: free some space, then run the same command again")
    return EnvironmentProblem(
        f"cannot write {path}: {exc.strerror}",
        f"check that {os.path.dirname(path)} is writable and not on a read-only or full file system",
    )


def unlink_durably(path: str) -> bool:
    """Remove a record nothing names yet, and make the removal durable; best effort: a name that stays is
    completed by the same command run again. Whether the name is gone."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        fsync_dir(os.path.dirname(path))
    except EnvironmentProblem:
        pass  # gone here; a power loss could bring the name back, and then it is completed as any other
    return True


def fsync_dir(path: str) -> None:
    """Make a directory's new entries durable; an error (EIO) is the environment's, exit 12 (design §2b)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise _environment(path, exc) from exc


def write_temp(directory: str, data: bytes, mode: int = FILE_MODE, target: str | None = None,
               problem: Callable[[str, OSError], Exception] | None = None) -> str:
    """An exclusively created temp file in `directory` with `mode`, written and fsynced; a failure names
    `target`, the file it is for (the temporary name means nothing to a reader), in the words of
    `problem` when the caller has its own (a git hook: "the hooks are as they were before")."""
    problem = problem or _environment
    for attempt in range(100):
        tmp = os.path.join(directory, f"{TMP_PREFIX}{os.getpid()}-{attempt}")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
        except FileExistsError:
            continue
        except OSError as exc:
            raise problem(target or tmp, exc) from exc
        try:
            os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                if written <= 0:  # no progress: the disk is full
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                view = view[written:]
            fault.point("after-temp-write")
            os.fsync(fd)
        except OSError as exc:
            os.close(fd)
            unlink_quietly(tmp)
            raise problem(target or tmp, exc) from exc
        os.close(fd)
        fault.point("after-fsync")
        return tmp
    raise EnvironmentProblem(f"cannot create a temporary file in {directory}", "remove stale .tmp-* files there")


def remove(path: str) -> None:
    """Remove a file majordomus wrote (already gone: fine); exit 12 naming it, with the next step for the
    errno, when that fails."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        from majordomus.lite.statepaths import unwritable_hint

        raise EnvironmentProblem(f"cannot remove {path}: {exc.strerror}",
                                 unwritable_hint(os.path.dirname(path), exc.errno)) from exc


def unlink_quietly(path: str) -> bool:
    """Remove `path` if it can be; whether it is gone."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _drop_temp(tmp: str) -> None:
    """Remove a temporary name once the record is linked in: a failure is tried again once (an I/O error can
    be passing); a name still left is a second name of the stored record, which the next write of that
    record's kind removes (`drop_second_names`). The write landed either way: never an error."""
    for _attempt in range(2):
        try:
            os.unlink(tmp)
            return
        except FileNotFoundError:
            return
        except OSError:
            continue


def landed(st: os.stat_result) -> bool:
    """The one rule for a leftover temporary (`.tmp-*`): one whose file has a second link was linked in
    under its final name, so its write landed and removing it loses nothing, whoever wrote it; one with a
    single link holds bytes that never landed (an interrupted write), which are reported, never removed."""
    return stat.S_ISREG(st.st_mode) and st.st_nlink > 1


def drop_second_names(record: str) -> None:
    """Remove the temporary names of `record` (the record a task points at) left when removing them failed
    after it landed. One lstat on the clean path: only a record with a second link has its directory
    listed. Best effort: whatever stays, `doctor` names."""
    try:
        st = os.lstat(record)
    except OSError:
        return
    if not landed(st):
        return
    try:
        with os.scandir(os.path.dirname(record)) as entries:
            found = [e.path for e in entries if e.name.startswith(TMP_PREFIX) and e.inode() == st.st_ino]
    except OSError:
        return
    for path in found:
        unlink_quietly(path)


def link_in(directory: str, name: str, data: bytes, *, sync_dir: bool = True, mode: int = FILE_MODE) -> tuple[str, bool]:
    """Store an immutable record under `name`, never replacing anything. Returns (path, created).

    `sync_dir=False` leaves the directory fsync to the caller, who links many records and syncs it once."""
    with stopsignals.held():  # a stop signal waits: no temporary file is left behind, no half-made link
        return _link_in(directory, name, data, sync_dir, mode)


def _link_in(directory: str, name: str, data: bytes, sync_dir: bool, mode: int) -> tuple[str, bool]:
    final = os.path.join(directory, name)
    tmp = write_temp(directory, data, mode, final)
    try:
        os.link(tmp, final, follow_symlinks=False)
        created = True
    except FileExistsError:
        created = False
    except OSError as exc:
        unlink_quietly(tmp)
        raise _environment(final, exc) from exc
    fault.point("after-link")
    _drop_temp(tmp)
    if created and sync_dir:
        try:
            fsync_dir(directory)
        except EnvironmentProblem as exc:
            if unlink_quietly(final):  # not known to be durable: nothing names it yet, so it goes
                exc.message += "; nothing was written"
            else:
                exc.message += f"; {final} stays (removing it failed too), and nothing names it yet"
            raise
    return final, created


class NotReplaced(EnvironmentProblem):
    """`replace` failed before its rename: the old file is in place, and the file `undo` named is gone."""


def holds(path: str, data: bytes) -> None:
    """A record `link_in` found already under its name holds these very bytes (the name carries their
    digest): else exit 12, nothing written — "already stored" is said of nothing else (a file changed by
    hand, a directory, a link)."""
    try:
        there = safeio.read(path, len(data) + 1)
    except (OSError, EnvironmentProblem) as exc:
        why = f" and is no record majordomus reads ({getattr(exc, 'message', None) or exc})"
    else:
        if there == data:
            return
        why = " with other bytes than the record its name stands for (changed by hand, or damaged)"
    raise NotReplaced(f"{path} is already there{why}; nothing was written", safeio.move_away_hint(path))


def replace(path: str, data: bytes, *, mode: int | None = FILE_MODE, undo: str | None = None,
            problem: Callable[[str, OSError], Exception] | None = None) -> None:
    """Replace a file atomically: temp + fsync + rename; the old file survives any failure.

    The one temp-then-rename writer. `mode=None` gives a new file the user's default (0666 & ~umask),
    for files that are not state (an agent runtime's settings). `undo` is a file only the new version
    names (a record linked now, which the task record is about to point at): when the replace fails
    before its rename, nothing names it, so it is removed (durably, best effort) and `NotReplaced` says
    nothing was written; a failure after the rename (the directory fsync) leaves the new file in place,
    and raises as any other. `problem`: a failure in the caller's words (see `write_temp`)."""
    with stopsignals.held():  # a stop signal waits: the old file or the new one, and no temporary left
        _replace(path, data, mode, undo, problem or _environment)


def _replace(path: str, data: bytes, mode: int | None, undo: str | None,
             problem: Callable[[str, OSError], Exception]) -> None:
    if mode is None:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    directory = os.path.dirname(path)
    try:
        tmp = write_temp(directory, data, mode, path, problem=problem)
        try:
            os.replace(tmp, path)
        except OSError as exc:
            unlink_quietly(tmp)
            raise problem(path, exc) from exc
    except EnvironmentProblem as exc:
        if undo is None:
            raise
        if not unlink_durably(undo):  # the record stays, named by nothing yet: the caller says it is stored
            raise
        raise NotReplaced(f"{exc.message}; nothing was written", exc.hint) from exc
    fsync_dir(directory)


def write_derived(path: str, data: bytes) -> None:
    """Best effort for a cache (derivable data): temp + rename, no fsync; a failure only costs a recompute."""
    with stopsignals.held():
        _write_derived(path, data)


def _write_derived(path: str, data: bytes) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    unlink_quietly(tmp)  # a name left by a killed process of the same pid (or planted): never written through
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        unlink_quietly(tmp)


def _not_a_lock(path: str, what: str) -> EnvironmentProblem:
    return EnvironmentProblem(f"the lock file {path} is {what}, not a regular file",
                              f"remove it (`{'rmdir' if what == 'a directory' else 'rm'} "
                              f"{textrules.shell_quoted(path)}`) and run the same "
                              "command again: majordomus creates the lock file")


held_back = stopsignals.from_first_write  # a change of several locked steps: the stop signals wait from its first


class locked:
    """Hold the exclusive lock that serialises changes to mutable state (a plain class: contextlib is
    not free on the hot paths). While it is held, the signals that ask a command to stop wait (`whole`,
    the state lock): the changes made under it all land before the command stops. The sync lock, held
    over network round trips, lets them through."""

    __slots__ = ("fd", "held", "path", "wait")

    # How long a change waits for the state lock another command holds. A healthy writer holds it for
    # milliseconds (twenty at once wait well under a second); one that holds it longer is stopped or stuck,
    # and waiting for ever would hang the agent's command or its MCP server: exit 75, nothing written.
    WAIT = 10.0

    def __init__(self, path: str, *, whole: bool = True, wait: float | None = None) -> None:
        """`whole`: the state lock; else the sync lock, waited for `wait` seconds (the sync's `--timeout`)."""
        self.path = path
        self.fd = -1
        self.held = stopsignals.held() if whole else None
        self.wait = self.WAIT if wait is None else wait

    def __enter__(self) -> locked:
        try:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, FILE_MODE)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise EnvironmentProblem(f"{self.path} is a symbolic link", "remove the link") from exc
            if exc.errno == errno.EISDIR:
                raise _not_a_lock(self.path, "a directory") from exc
            if exc.errno == errno.ENXIO:  # a socket (or a device with nothing behind it): no file to lock
                raise _not_a_lock(self.path, "a socket") from exc
            raise _environment(self.path, exc) from exc
        try:
            st = os.fstat(self.fd)
            if not stat.S_ISREG(st.st_mode):  # a FIFO or a device opens too: never one to lock on
                from majordomus.lite.safeio import kind_of

                raise _not_a_lock(self.path, kind_of(st.st_mode))
            from majordomus.lite.safeio import one_name

            one_name(self.path, st)  # its notes are written in place
            if self.held is None:  # the sync lock: held over a sync's network round trips
                lockwait.take(self.fd, self.path, self.wait, "the sync lock", held_by="another sync", longer="")
            else:
                lockwait.take(self.fd, self.path, self.wait, "the state lock")
                self.held.__enter__()
        except BaseException as exc:
            os.close(self.fd)
            if isinstance(exc, OSError) and exc.errno == errno.ENOLCK:
                raise EnvironmentProblem(f"cannot lock {self.path}: {exc.strerror}",
                                         "the file system refuses locks (a network file system without lock "
                                         "support?): keep the repository on a local disk, then run the same "
                                         "command again") from exc
            if isinstance(exc, OSError):  # a stat the file system refuses (EIO, ESTALE)
                raise _environment(self.path, exc) from exc
            raise
        return self

    # The lock file's bytes name the records whose write is under way (one path a line, relative to the
    # state directory): a command killed where no signal can be held back (SIGKILL) leaves its line, and
    # the next write of the same kind completes that record (`store.commit`). Best effort and not fsynced:
    # what a killed process wrote is in the page cache all the same.
    NOTES_MAX = 1 << 16

    def notes(self) -> list[str]:
        try:
            data = os.pread(self.fd, self.NOTES_MAX, 0)
        except OSError:
            return []
        from majordomus.lite import names

        return [line for line in data.decode("utf-8", "replace").split("\n")  # a record's path, or nothing
                if any(names.is_record_pointer(line, d) for d in ("checkpoints", "handoffs", "runs"))]

    def _set_notes(self, notes: list[str]) -> None:
        data = "".join(f"{note}\n" for note in notes).encode("utf-8")[:self.NOTES_MAX]
        try:
            if data:
                os.pwrite(self.fd, data, 0)
            os.ftruncate(self.fd, len(data))
        except OSError:
            pass  # a note only helps a later write complete this one: its loss costs a doctor warning

    def note(self, rel: str) -> None:
        self._set_notes([n for n in self.notes() if n != rel] + [rel])

    def unnote(self, rel: str) -> None:
        notes = self.notes()
        if rel in notes:
            self._set_notes([n for n in notes if n != rel])

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        os.close(self.fd)
        if self.held is not None:
            self.held.__exit__(kind, exc, tb)
