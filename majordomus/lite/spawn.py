"""Running a program and capturing what it prints, without the `subprocess` module where it can.

`import subprocess` costs a hook more than anything majordomus itself does before its one `git status`:
signal's enums, threading, selectors, contextlib and locale come with it (some 5 ms of a 30 ms floor).
`os.posix_spawnp` starts a program with none of them. It cannot change the child's directory, so it
serves when the program runs in the current one — a hook, a checkpoint and most commands run at the root
of the work tree — and `subprocess` serves otherwise. Either way the child gets what `subprocess.run(…,
stdin=DEVNULL, capture_output=True)` gives it: stdin from /dev/null, stdout and stderr captured (both
drained as they come, so neither pipe can fill and stall it), no inherited descriptor but those three,
SIGPIPE and SIGXFSZ at their defaults (Python ignores them, and an ignored signal stays ignored across
exec), and the exit code as `subprocess` reports it (-N for a signal).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # on every hook's path: typing is not imported at run time
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


MAX_OUTPUT = 256 << 20  # bytes a program may print (stdout and stderr together) before it is stopped


class TooMuch(OSError):
    """The program printed more than MAX_OUTPUT bytes: it was stopped, and what it printed let go."""


def run(argv: list[str], cwd: str, env: Mapping[str, str] | None = None,
        timeout: float | None = None) -> tuple[int, bytes, bytes]:
    """(exit code, stdout, stderr) of `argv` run in `cwd` with `env` (ours when None). Raises OSError when
    the program cannot be started (FileNotFoundError when it is not on PATH), and TimeoutError when it has
    not ended within `timeout` seconds (it is stopped: SIGTERM, then SIGKILL)."""
    if hasattr(os, "posix_spawnp") and _is_current(cwd):
        spawned = _spawned(argv, os.environ if env is None else env, timeout)
        if spawned is not None:
            return spawned
    import subprocess

    # Another directory than ours (posix_spawn takes none): subprocess starts it there, and what it prints
    # is read as above, bounded; with a deadline it leads a group of its own there too.
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=timeout is not None)
    assert proc.stdout is not None and proc.stderr is not None
    out_r, err_r = os.dup(proc.stdout.fileno()), os.dup(proc.stderr.fileno())
    proc.stdout.close()
    proc.stderr.close()
    code, out, err = _collect(argv, proc.pid, out_r, err_r, timeout)
    proc.returncode = code  # reaped by `_collect`: subprocess need not wait for it
    return code, out, err


def _is_current(path: str) -> bool:
    try:
        here, there = os.stat("."), os.stat(path)
    except OSError:
        return False  # a vanished directory: subprocess says so, as it always did
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _signals() -> Any:
    """The C module `signal` wraps: its numbers, without building signal's enums."""
    return __import__("_signal")


def _inherited() -> list[int]:
    """Descriptors above stderr that a child would inherit: ours never are (PEP 446), but our parent's
    may be, and `subprocess` closes them all."""
    for listing in ("/proc/self/fd", "/dev/fd"):
        try:
            names = os.listdir(listing)
        except OSError:
            continue
        found = []
        for name in names:
            fd = int(name) if name.isdigit() else -1
            if fd > 2:
                try:
                    if os.get_inheritable(fd):
                        found.append(fd)
                except OSError:
                    pass  # the listing's own descriptor, closed by now
        return found
    return []


def _spawned(argv: list[str], env: Mapping[str, str], timeout: float | None) -> tuple[int, bytes, bytes] | None:
    """None when a pipe took the number of a closed standard stream: subprocess sorts that out."""

    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    if min(out_r, out_w, err_r, err_w) <= 2:
        for fd in (out_r, out_w, err_r, err_w):
            os.close(fd)
        return None
    actions: list[Any] = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                                      (os.POSIX_SPAWN_DUP2, out_w, 1), (os.POSIX_SPAWN_DUP2, err_w, 2)]
    actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inherited()]
    try:
        signals = _signals()
        defaults = [n for n in (signals.SIGPIPE, getattr(signals, "SIGXFSZ", None)) if n is not None]
        # With a deadline (a hook), the program leads a process group of its own, so that stopping it stops
        # what it started too (git's fsmonitor hook, say) instead of leaving it behind.
        if timeout is None:
            pid = os.posix_spawnp(argv[0], argv, env, file_actions=actions, setsigdef=defaults)
        else:
            pid = os.posix_spawnp(argv[0], argv, env, file_actions=actions, setsigdef=defaults, setpgroup=0)
    except BaseException:
        for fd in (out_r, out_w, err_r, err_w):
            os.close(fd)
        raise
    os.close(out_w)
    os.close(err_w)
    return _collect(argv, pid, out_r, err_r, timeout)


def _collect(argv: list[str], pid: int, out_r: int, err_r: int,
             timeout: float | None) -> tuple[int, bytes, bytes]:
    """What child `pid` prints on `out_r` and `err_r` (both closed here), bounded by MAX_OUTPUT, until it
    ended — within `timeout`, when given: then the child leads a group of its own, stopped with it."""
    import select
    import time

    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    if timeout is not None:  # its own group: a stop signal to ours would not reach it, so it is passed on
        from majordomus.lite import stopsignals

        stopsignals.groups.add(pid)
    try:
        poller = select.poll()
        for fd in chunks:
            poller.register(fd, select.POLLIN)
        left = len(chunks)
        ends = None if timeout is None else time.monotonic() + timeout
        printed = 0
        while left:
            wait = None if ends is None else max(0, int((ends - time.monotonic()) * 1000))
            ready = poller.poll(wait)
            if not ready and ends is not None and time.monotonic() >= ends:
                _stop(pid, group=True)
                raise TimeoutError(f"{argv[0]} did not end within {timeout:g} s")
            for fd, _event in ready:
                data = os.read(fd, 1 << 16)
                if data:
                    chunks[fd].append(data)
                    printed += len(data)
                    if printed > MAX_OUTPUT:
                        _stop(pid, group=timeout is not None)
                        raise TooMuch(f"printed more than {MAX_OUTPUT >> 20} MiB")
                else:
                    poller.unregister(fd)
                    left -= 1
        status = _reaped(pid, ends)  # its output closed is not its end: the deadline holds to the end
        if status is None:
            _stop(pid, group=True)
            raise TimeoutError(f"{argv[0]} did not end within {timeout:g} s")
    except (TimeoutError, TooMuch):
        raise  # stopped and reaped already
    except BaseException:  # interrupted: the child does not outlive us, as with subprocess.run
        _stop(pid, group=timeout is not None)
        raise
    finally:
        os.close(out_r)
        os.close(err_r)
        if timeout is not None:
            stopsignals.groups.discard(pid)
    return os.waitstatus_to_exitcode(status), b"".join(chunks[out_r]), b"".join(chunks[err_r])


def _reaped(pid: int, ends: float | None) -> int | None:
    """The wait status of `pid` once it ended, or None when it has not by `ends` (no bound when None)."""
    import time

    if ends is None:
        return os.waitpid(pid, 0)[1]
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        return status
    try:  # Linux 5.3 and later: its end as a descriptor to poll, woken the moment it exits
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = -1
    if fd >= 0:
        import select

        try:
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            if not poller.poll(max(0, int((ends - time.monotonic()) * 1000) + 1)):
                return None
        finally:
            os.close(fd)
        return os.waitpid(pid, 0)[1]
    pause = 0.001
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() >= ends:
            return None
        time.sleep(min(pause, max(0.0, ends - time.monotonic())))
        pause = min(pause * 2, 0.05)


def _stop(pid: int, *, group: bool = False) -> None:
    """End a child we no longer wait for, and reap it: SIGTERM first, so that git removes the lock files it
    holds (a ref's, the index's), then SIGKILL when it has not ended within half a second. `group`: the
    child leads its own process group, and all of it is stopped."""
    import time

    signals = _signals()
    kill = os.killpg if group else os.kill
    try:
        kill(pid, signals.SIGTERM)
    except ProcessLookupError:
        pass
    reaped = False
    ends = time.monotonic() + 0.5
    while not reaped and time.monotonic() < ends:
        reaped = os.waitpid(pid, os.WNOHANG)[0] != 0
        if not reaped:
            time.sleep(0.01)
    if group or not reaped:  # the group: what the child started and left behind goes too
        try:
            kill(pid, signals.SIGKILL)
        except ProcessLookupError:
            pass
    if not reaped:
        os.waitpid(pid, 0)
