"""The repository handle through pygit2 that sync builds on, off the hot paths (what git holds under the
state directory is asked of git itself: `git.held`). The only modules importing pygit2
are this one and `odb`."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import pygit2

from majordomus.errors import EnvironmentProblem
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
        # git itself may be fine with it: the library majordomus reads objects through knows less than git does
        hint = (f"the libgit2 under pygit2 {getattr(pygit2, '__version__', '')} (what sync and a few readers use) cannot read this "
                "object format, which git can: checkpoints, handoffs and briefings work; sync waits for a pygit2 "
                "built with it" if "object format" in str(exc) else run.hint(("status",), place.worktree))
        raise EnvironmentProblem(f"cannot open the git repository at {place.gitdir}: {exc}", hint) from exc
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
