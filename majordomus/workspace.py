"""The place a command runs in: repository, state paths and configuration, opened once (the one assembly)."""

from __future__ import annotations

import os

from majordomus import config as config_mod
from majordomus.errors import EnvironmentProblem, MajordomusError, where_words
from majordomus.lite import dotgit
from majordomus.store import paths

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from majordomus.git.query import Repo


def _refuse_bytes(worktree: str, branch: str | None) -> None:
    """A worktree path or branch name that is not UTF-8 (a byte Python keeps as a lone surrogate) is exit 12
    before anything is read or written: every record, the ledger and the index keep them as UTF-8 text."""
    for what, value, hint in (("the worktree path", worktree, "rename the directory to a UTF-8 name (`mv`)"),
                              ("the branch name", branch, "rename the branch to a UTF-8 name (`git branch -m NEW`)")):
        try:
            (value or "").encode("utf-8")
        except UnicodeEncodeError:
            from majordomus.lite.textrules import escape

            raise EnvironmentProblem(f"{what} {escape(value or '')} is not valid UTF-8, and majordomus keeps it "
                                     "as UTF-8 text in every record; nothing was written",
                                     f"{hint}, then run the command again") from None


class Workspace:
    """Where a command runs. Built by `Workspace.open` only; pygit2 is opened lazily (`repo`), never on a
    hot path."""

    def __init__(self, place: dotgit.Place, config: config_mod.Config, cwd: str,
                 config_problem: MajordomusError | None = None) -> None:
        self.place = place
        self.paths = paths.of(place)
        self.config = config
        self.cwd = cwd
        self.config_problem = config_problem  # set only with lenient_config: the defaults apply meanwhile
        self._repo: Repo | None = None
        self._owner: str | None = None  # the default owner, once asked: one git config read per command

    @classmethod
    def open(cls, cwd: str | None = None, *, lenient_config: bool = False) -> Workspace:
        """The workspace around `cwd`. A broken configuration is exit 12, or with `lenient_config` (doctor,
        the hooks) kept in `config_problem` while the defaults apply."""
        cwd = os.path.realpath(cwd) if cwd else dotgit.current_directory()
        place = dotgit.locate(cwd)
        if place is None:
            from majordomus.lite.textrules import escape

            raise EnvironmentProblem(
                f"not inside a git work tree: {escape(cwd)}",  # one line: the path may hold a line break
                "run majordomus inside a git repository (or pass -C DIR); `git init` makes one",
            )
        if place.foreign():
            from majordomus.git import run

            refused = run.refusal(place)
            if refused is not None:
                raise refused
        _refuse_bytes(place.worktree, place.branch)
        cache = paths.of(place).config_cache
        try:
            cfg = config_mod.load(place.config_root, cache)
        except config_mod.ConfigError as exc:
            if not lenient_config:
                raise
            return cls(place, config_mod.load(None), cwd, exc)
        return cls(place, cfg, cwd)

    @property
    def worktree(self) -> str:
        return self.place.worktree

    @property
    def branch(self) -> str | None:
        return self.place.branch

    @property
    def repo(self) -> Repo:
        """The repository through pygit2, opened on first use (queries and sync, off the hot paths)."""
        if self._repo is None:
            from majordomus.git import query

            self._repo = query.open_repo(self.place)
        return self._repo

    def where(self) -> str:
        return where_words(self.worktree, self.branch)

    def ensure_state(self, *subdirs: str) -> None:
        """Create the state as needed before a write (and cache the configuration there)."""
        paths.ensure(self.paths, "cache", *subdirs)
        if self.config.signature is not None:
            config_mod.remember(self.config, self.paths.config_cache)

    def display(self, path: str) -> str:
        """A path as git prints one: relative to the current directory when it lies inside this worktree,
        else absolute (so `cat "$(… | majordomus checkpoint)"` works from any subdirectory)."""
        return paths.display(path, self.worktree, self.cwd)

    def owner(self, explicit: str | None = None) -> str:
        """`--owner`, else MAJORDOMUS_OWNER, else git's user.email, else the login name."""
        from majordomus import secretscan  # an owner is one line and no secret: it is in every record

        if explicit:
            return secretscan.checked("owner", explicit, hint="an owner is one line: an e-mail address or a name")
        if self._owner is None:
            self._owner = self._default_owner()
        return self._owner

    def _default_owner(self) -> str:
        from majordomus import secretscan

        env = os.environ.get("MAJORDOMUS_OWNER")
        if env:
            return secretscan.checked("owner", env, source="MAJORDOMUS_OWNER",
                                     hint="set MAJORDOMUS_OWNER to one line, or pass --owner")
        from majordomus.git import status

        email = status.config_get(self.place, "user.email")
        if email:
            return secretscan.checked("owner", email, source="git config user.email",
                                     hint="pass --owner NAME (or set MAJORDOMUS_OWNER), or fix `git config user.email`")
        try:
            import pwd

            return pwd.getpwuid(os.getuid()).pw_name
        except (ImportError, KeyError):
            return os.environ.get("USER", "unknown")

    def event(self, name: str, task: str | None, at: str, **extra: Any) -> dict[str, Any]:
        """Append one event of this worktree and branch to the ledger."""
        from majordomus.store import ledger

        fields = {"task": task, "worktree": self.worktree, "branch": self.branch}
        fields.update(extra)
        return ledger.append(self.paths.ledger, name, fields, at)
