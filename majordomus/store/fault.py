"""Test-only fault injection, as SQLite has: `MAJORDOMUS_FAULT=STEP` kills the process at STEP, and
`Faults` fails one chosen os call of a command run in this process.

The steps are the durable moments of a write: `after-temp-write`, `after-fsync`, `after-link`,
`after-ledger-write`; and `internal-error`, which `majordomus.main` raises as an unexpected exception
before running any command. The crash tests set the variable, run the real console script and show, for each
step, what survives. Unset (always, outside those tests) it costs one dictionary look-up.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_STEP = os.environ.get("MAJORDOMUS_FAULT")


def point(step: str) -> None:
    if _STEP is not None and step == _STEP:
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


OPS = ("write", "fsync", "link", "rename", "mkdir", "chmod", "open")


class Faults:
    """Count (and fail the `nth` of `op`) the os calls that change files under `root`, while `active()`:
    `write`, `fsync`, `link`, `rename` (`os.replace` and `os.rename`), `mkdir`, `chmod` (`os.chmod` and
    `os.fchmod`) and a creating `open`. `how`
    is ENOSPC or EIO (the call raises), or `short` (a write writes half its bytes, as a full disk does).
    Only calls on paths under `root` count: the test process's own files and git's processes are untouched."""

    def __init__(self, root: Any, op: str | None = None, nth: int = 0, how: str = "ENOSPC", only: str = "") -> None:
        self.root = str(root) + os.sep
        self.only = only  # count only the calls on paths that contain this
        self.op, self.nth, self.how = op, nth, how
        self.counts = dict.fromkeys(OPS, 0)
        self.fired = False

    def ours(self, path: Any) -> bool:
        """Whether `path` (or the file a descriptor is open on) lies under the root and holds `only`."""
        if isinstance(path, int):
            try:
                path = os.readlink(f"/proc/self/fd/{path}")
            except OSError:
                return False
        path = os.fsdecode(os.path.abspath(path))
        return path.startswith(self.root) and self.only in path

    def _hit(self, op: str, path: Any) -> bool:
        if not self.ours(path):
            return False
        self.counts[op] += 1
        if op == self.op and self.counts[op] == self.nth:
            self.fired = True
            return True
        return False

    def _fail(self) -> OSError:
        import errno

        code = errno.EIO if self.how == "EIO" else errno.ENOSPC
        return OSError(code, os.strerror(code))

    def active(self) -> _Active:
        return _Active(self)

    def patch(self) -> dict[str, Any]:
        """Put the failing wrappers in place; returns the real functions to put back."""
        real = {name: getattr(os, name)
                for name in ("write", "fsync", "link", "replace", "rename", "mkdir", "chmod", "fchmod", "open")}

        def write(fd: int, data: Any) -> int:
            if self._hit("write", fd):
                if self.how == "short" and len(data) > 1:
                    return int(real["write"](fd, bytes(data[: len(data) // 2])))
                raise self._fail()
            return int(real["write"](fd, data))

        def fsync(fd: int) -> None:
            if self._hit("fsync", fd):
                raise self._fail()
            real["fsync"](fd)

        def link(src: Any, dst: Any, **kw: Any) -> None:
            if self._hit("link", dst):
                raise self._fail()
            real["link"](src, dst, **kw)

        def renamer(name: str) -> Callable[..., None]:
            def rename(src: Any, dst: Any, **kw: Any) -> None:
                if self._hit("rename", dst):
                    raise self._fail()
                real[name](src, dst, **kw)
            return rename

        def mkdir(path: Any, *args: Any, **kw: Any) -> None:
            if self._hit("mkdir", path):
                raise self._fail()
            real["mkdir"](path, *args, **kw)

        def chmoder(name: str) -> Callable[..., None]:
            def chmod(target: Any, mode: int, **kw: Any) -> None:
                if self._hit("chmod", target):
                    raise self._fail()
                real[name](target, mode, **kw)
            return chmod

        def open_(path: Any, flags: int, *args: Any, **kw: Any) -> int:
            if flags & os.O_CREAT and kw.get("dir_fd") is None and self._hit("open", path):
                raise self._fail()
            return int(real["open"](path, flags, *args, **kw))

        patched = {"write": write, "fsync": fsync, "link": link, "replace": renamer("replace"),
                   "rename": renamer("rename"), "mkdir": mkdir, "chmod": chmoder("chmod"),
                   "fchmod": chmoder("fchmod"), "open": open_}
        for name, function in patched.items():
            setattr(os, name, function)
        return real


class _Active:
    def __init__(self, faults: Faults) -> None:
        self.faults = faults
        self.real: dict[str, Any] = {}

    def __enter__(self) -> Faults:
        self.real = self.faults.patch()
        return self.faults

    def __exit__(self, *exc: object) -> None:
        for name, function in self.real.items():
            setattr(os, name, function)
