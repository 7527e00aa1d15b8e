"""The files of git's hooks that majordomus writes (design §12, §21): which hooks, and the one careful way to
read, write and move a hook file. `githook` (a plain hooks directory) and `husky` (Husky v9) build on it.
A write that fails is exit 12 naming the file, and leaves the hooks as they were."""

from __future__ import annotations

import os
import stat

from majordomus.errors import EnvironmentProblem, Refused
from majordomus.lite import safeio
from majordomus.lite.statepaths import unwritable_hint
from majordomus.store import files
from majordomus.store.files import remove as remove
from majordomus.store.files import unlink_quietly as unlink_quietly


class Hook:
    """One git hook of ours: its name, the majordomus command it runs, and whether git gives it stdin."""

    __slots__ = ("command", "name", "purpose", "stdin")

    def __init__(self, name: str, command: str, purpose: str, stdin: bool) -> None:
        self.name, self.command, self.purpose, self.stdin = name, command, purpose, stdin

    @property
    def chained(self) -> str:
        return f"{self.name}.majordomus-chained"

    @property
    def marker(self) -> str:
        return f"# majordomus {self.name} hook"

    @property
    def husky_begin(self) -> str:
        return f"# >>> majordomus {self.name} hook: installed by `majordomus hooks install --runtime git`"

    @property
    def husky_end(self) -> str:
        return f"# <<< majordomus {self.name} hook (removed by `majordomus hooks uninstall --runtime git`)"


POST_COMMIT = Hook("post-commit", "majordomus check --checkpoint",
                   "moves the active task's checkpoint time after each commit", stdin=False)
# git gives post-rewrite `amend` or `rebase` as $1 and `<old> <new>` lines on stdin (githooks(5)).
POST_REWRITE = Hook("post-rewrite", 'majordomus hook rewrite "$1"',
                    "records each amend or rebase's old -> new commit ids (a `git.rewrite` event)", stdin=True)
HOOKS = (POST_COMMIT, POST_REWRITE)  # installed in this order, removed in the reverse one

# The post-commit names as they were before post-rewrite joined it (callers and tests use them).
HOOK, CHAINED, MARKER = POST_COMMIT.name, POST_COMMIT.chained, POST_COMMIT.marker



def lread(path: str) -> tuple[str, bytes | None]:
    """('absent'|'file'|'link'|'other', content of a regular file)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "absent", None
    if stat.S_ISLNK(st.st_mode):
        return "link", None
    if not stat.S_ISREG(st.st_mode):
        return "other", None
    return "file", safeio.read(path, 1 << 20)



def edited(path: str) -> Refused:
    return Refused(
        f"{path} is a majordomus hook edited since it was installed; nothing was written",
        "edit it by hand, or delete it and run `majordomus hooks install --runtime git` again",
    )



class NotWritten(EnvironmentProblem):
    """A hook file that could not be written or moved: exit 12 naming it, with the next step for that errno.
    Its message says what it left: the hooks as they were before, or (`after`) those installed already."""

    def __init__(self, path: str, exc: OSError) -> None:
        self.path, self.reason = path, exc.strerror
        super().__init__(self._left("the hooks are as they were before"),
                         unwritable_hint(os.path.dirname(path), exc.errno))

    def _left(self, state: str) -> str:
        return f"cannot write {self.path}: {self.reason}; {state}"

    def after(self, installed: list[str]) -> None:
        """Others were installed before this one failed: say so, and that the same command installs the rest."""
        self.message = self._left(f"that hook is as it was, and {', '.join(installed)} is installed")



def write_temp(directory: str, target: str, data: bytes, mode: int) -> str:
    """`data` in a new file beside `target` (exclusive, never through a link, fsynced), with `mode`; its
    path. The store's one temp writer, failing in the hooks' words."""
    return files.write_temp(directory, data, mode, target, problem=NotWritten)


def replace(directory: str, target: str, data: bytes, mode: int) -> None:
    """Write `data` to `target` by a temporary file renamed over it (a reader sees one or the other): the
    store's one temp-then-rename writer, failing in the hooks' words."""
    files.replace(os.path.join(directory, os.path.basename(target)), data, mode=mode, problem=NotWritten)


class Plan:
    """What install or uninstall will do to one hook, decided (and refused) before anything is written."""

    __slots__ = ("chained", "data", "hook", "kind", "target")

    def __init__(self, hook: Hook, target: str, chained: str, kind: str, data: bytes | None) -> None:
        self.hook, self.target, self.chained, self.kind, self.data = hook, target, chained, kind, data
