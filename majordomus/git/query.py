"""Questions to git's object database through pygit2, off the hot paths: what git holds under the
state directory (doctor), and the repository handle sync builds on. The only modules importing pygit2
are this one and `odb`."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import pygit2

from majordomus.errors import EnvironmentProblem, MajordomusError
from majordomus.git import run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from majordomus.lite.dotgit import Place


@dataclass
class Repo:
    """An opened repository: the worktree we stand in and the main worktree that holds the state."""

    handle: Any  # pygit2.Repository
    worktree: str
    common_dir: str
    main_worktree: str | None  # None when the main worktree is bare
    git_env: dict[str, str] = field(default_factory=dict)  # what a git subprocess needs to find it (git.run)

    @property
    def branch(self) -> str | None:
        """Short branch name; None when HEAD is detached. Works on an unborn branch."""
        if self.handle.head_is_detached:
            return None
        target = self.handle.references["HEAD"].target
        if isinstance(target, str) and target.startswith("refs/heads/"):
            return target[len("refs/heads/"):]
        return None


def open_repo(place: Place) -> Repo:
    """The repository `lite.dotgit` located, opened through pygit2."""
    try:
        handle = pygit2.Repository(place.gitdir)
    except pygit2.GitError as exc:
        raise EnvironmentProblem(f"cannot open the git repository at {place.gitdir}: {exc}",
                                 run.hint(("status",), place.worktree)) from exc
    if handle.workdir is None or os.path.normpath(handle.workdir) != place.worktree:
        try:
            handle.workdir = place.worktree
        except (AttributeError, pygit2.GitError):
            pass
    return Repo(handle=handle, worktree=place.worktree, common_dir=place.common_dir,
                main_worktree=place.main_worktree, git_env=place.git_env)


def config_value(repo: Repo, key: str) -> str | None:
    try:
        return str(repo.handle.config[key])
    except (KeyError, pygit2.GitError):
        return None


def _main_handles(repo: Repo) -> list[Any]:
    """This worktree's repository, and the main worktree's when it is another one (it holds the state)."""
    handles = [repo.handle]
    if repo.main_worktree is not None and repo.main_worktree != repo.worktree:
        try:
            handles.append(pygit2.Repository(repo.main_worktree))
        except pygit2.GitError:
            pass
    return handles


def _index_under(index: Any, prefix: str) -> list[str]:
    # The index is sorted by path: a binary search finds the prefix without walking a large index.
    lo, hi = 0, len(index)
    while lo < hi:
        mid = (lo + hi) // 2
        if index[mid].path < prefix:
            lo = mid + 1
        else:
            hi = mid
    found = []
    while lo < len(index):
        path = index[lo].path
        if not path.startswith(prefix):
            break
        found.append(path)
        lo += 1
    return found


def _tree_under(handle: Any, prefix: str) -> list[str]:
    if handle.head_is_unborn:
        return []
    try:
        entry = handle.head.peel(pygit2.Commit).tree[prefix.rstrip("/")]
    except (KeyError, pygit2.GitError):
        return []
    if entry.type_str != "tree":
        return [prefix.rstrip("/")]
    found = []
    stack = [(prefix, handle[entry.id])]
    while stack:
        base, tree = stack.pop()
        for item in tree:
            if item.type_str == "tree":
                stack.append((f"{base}{item.name}/", handle[item.id]))
            else:
                found.append(base + item.name)
    return found


def held_under(repo: Repo, prefix: str) -> dict[str, str]:
    """Paths under `prefix` (worktree-relative, ending in `/`) that git holds, in this worktree and the main one.

    The value says how: `staged` (in the index, not in HEAD), `tracked` (index and HEAD), or `committed`
    (in HEAD while its removal is staged)."""
    held: dict[str, str] = {}
    for handle in _main_handles(repo):
        try:
            indexed = set(_index_under(handle.index, prefix))
        except pygit2.GitError as exc:
            raise MajordomusError(f"cannot read the git index: {exc}", "run `git status` to see what git says") from exc
        committed = set(_tree_under(handle, prefix))
        for path in indexed | committed:
            how = "tracked" if path in indexed and path in committed else ("staged" if path in indexed else "committed")
            held.setdefault(path, how)
    return held


def is_ignored(repo: Repo, path: str) -> bool:
    """Whether git ignores `path` (relative to the main worktree, or this one when the main is bare)."""
    handle = _main_handles(repo)[-1]
    try:
        return bool(handle.path_is_ignored(path))
    except pygit2.GitError:
        return False




def remotes(place: Place) -> list[str]:
    """The names of the repository's remotes, as `git remote` lists them (through the one git runner)."""
    from majordomus.git import status

    return status.git(place, "remote").decode("utf-8", "replace").split()
