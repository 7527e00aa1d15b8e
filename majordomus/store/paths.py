"""Creating the state (design §2): its directories 0700 and never through a symlink, with the ignore file.

Where each file lives is `lite.statepaths` (standard library only, so the hot paths share it); this module
creates what a write needs.
"""

from __future__ import annotations

import os
import stat

from majordomus.errors import EnvironmentProblem
from majordomus.lite.ignorefile import ignore_missing, refuse_special, write_ignore
from majordomus.lite.statepaths import (
    DIR_MODE,
    FILE_MODE,
    PARENT_MODE,
    StatePaths,
    ensure_dir,
    is_real_dir,
    make_parent,
    state_exists,
    unwritable_hint,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol

    from majordomus.lite.dotgit import Place

    class Site(Protocol):
        """What the store takes from the place a command runs in (a `Workspace`), by its type alone: the
        store imports nothing above it."""

        paths: StatePaths
        cwd: str
        config: Any  # `.get(section, key)`: the caps a reader holds a record to

        @property
        def worktree(self) -> str: ...

        @property
        def branch(self) -> str | None: ...

        def where(self) -> str: ...

        def display(self, path: str) -> str: ...

__all__ = ["DIR_MODE", "FILE_MODE", "PARENT_MODE", "StatePaths", "check_readable", "display", "ensure", "make_parent",
           "of"]


def of(place: Place) -> StatePaths:
    """The state paths of a located repository (`lite.dotgit` decides where the state lives)."""
    return place.state_paths()


def display(path: str, worktree: str, cwd: str) -> str:
    """A path as git prints one: relative to the current directory when it lies inside the worktree, else
    absolute (so `cat "$(… | majordomus checkpoint)"` works from any subdirectory)."""
    if os.path.commonpath([worktree, path]) == worktree and os.path.commonpath([worktree, cwd]) == worktree:
        return os.path.relpath(path, cwd)
    return path


def check_readable(paths: StatePaths, *subdirs: str) -> bool:
    """For readers: True when the state exists (and each of `subdirs` of it, `tasks` say, is a real
    directory or absent); a link on the way, or a linked subdirectory, is refused (exit 12, naming it)."""
    if not state_exists(paths):
        return False
    for sub in subdirs:
        is_real_dir(paths.directory(sub))
    return True


def ensure(paths: StatePaths, *subdirs: str) -> None:
    """Create the state directory (and `subdirs`) as needed, with the ignore file that keeps it unstaged."""
    parent = os.path.dirname(paths.local)
    if not is_real_dir(parent):
        make_parent(parent)
        is_real_dir(parent)
    created = not os.path.lexists(paths.local)
    ensure_dir(paths.local)
    refuse_special(paths.ignore_file)
    if ignore_missing(paths.ignore_file):
        try:
            write_ignore(paths.ignore_file)
        except EnvironmentProblem:
            if created:  # never leave a state directory behind that nothing keeps out of `git add`
                try:
                    os.rmdir(paths.local)
                except OSError:
                    pass
            raise
    ensure_dir(paths.root)
    for sub in subdirs:
        ensure_dir(os.path.join(paths.root, sub))
    if not os.access(paths.root, os.W_OK | os.X_OK):
        raise EnvironmentProblem(f"the state directory {paths.root} is not writable", unwritable_hint(paths.root))


def refuse_shared(paths: StatePaths) -> None:
    """For what an agent is given (the session hooks, the MCP tools): the state directory must be one
    majordomus made for this user, mode 0700 and theirs. A state committed to git and checked out (its
    directory made by git, 0755), or another user's, holds text no one here wrote: nothing of it is given
    to an agent (design §2a), exit 12 naming it. Absent, or a link (which every reader refuses in its own
    words): nothing to say here."""
    try:
        st = os.lstat(paths.root)
    except OSError:
        return
    if stat.S_ISLNK(st.st_mode):
        return
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077 or st.st_uid != os.getuid():
        raise EnvironmentProblem(
            f"the state directory {paths.root} is not private (mode {mode:04o}, owner {st.st_uid}; majordomus makes "
            "it 0700 and yours): it was not made here (committed to git and checked out?), so nothing from it is "
            "given to the agent",
            f"run `majordomus doctor`; if the records are yours, `chmod 700 {paths.root}`")
