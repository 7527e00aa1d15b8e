"""The place a command runs in: repository, state paths and configuration, opened once."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

from majordomus import config as config_mod
from majordomus import git, paths


@dataclass
class Workspace:
    repo: git.Repo
    paths: paths.StatePaths
    config: config_mod.Config
    cwd: str

    @classmethod
    def open(cls, cwd: Optional[str] = None) -> "Workspace":
        cwd = os.path.abspath(cwd or os.getcwd())
        repo = git.open_repo(cwd)
        state = paths.for_worktrees(repo.main_worktree, repo.common_dir, repo.worktree)
        return cls(repo=repo, paths=state, config=config_mod.load(state.config_root, state.config_cache), cwd=cwd)

    @property
    def worktree(self) -> str:
        return self.repo.worktree

    @property
    def branch(self) -> Optional[str]:
        return self.repo.branch

    def where(self) -> str:
        branch = self.branch
        return f"worktree {self.worktree} on " + (f"branch {branch}" if branch else "a detached HEAD")

    def ensure_state(self, *subdirs: str) -> None:
        """Create the state as needed before a write (and cache the configuration there)."""
        paths.ensure(self.paths, *subdirs)
        if self.config.signature is not None:
            config_mod.remember(self.config, self.paths.config_cache)

    def display(self, path: str) -> str:
        """A state path as the user sees it: relative to this worktree when inside it, else absolute."""
        root = self.worktree
        if os.path.commonpath([root, path]) == root:
            return os.path.relpath(path, root)
        return path

    def owner(self, explicit: Optional[str] = None) -> str:
        if explicit:
            return explicit
        env = os.environ.get("MAJORDOMUS_OWNER")
        if env:
            return env
        email = git.config_value(self.repo, "user.email")
        if email:
            return email
        try:
            import pwd

            return pwd.getpwuid(os.getuid()).pw_name
        except (ImportError, KeyError):
            return os.environ.get("USER", "unknown")
