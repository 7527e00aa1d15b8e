"""The read-only Python API (design §20): tasks, records and the ledger of a repository, for scripts and notebooks.

    >>> import majordomus.api
    >>> ws = majordomus.api.open(".")
    >>> for post in ws.checkpoints(task="fix-login"):
    ...     print(post["timestamp"], post.content.splitlines()[0])

Records come back as `frontmatter.Post` objects (python-frontmatter): `post.metadata` is the front matter
majordomus computed from git (design §4), `post.content` the body, `post["head"]` one field. Nothing here
writes: not a record, not a cache, not the ledger. Writing stays with the CLI, where the rules live.

Every file is read as the CLI reads it (`lite.safeio`: no symbolic link followed, no FIFO waited on,
bounded), so a script meets the same trust boundaries (design §2a), and every record is checked against
the digest in its name: one whose content was replaced after it was written is never returned as a
record — the call raises, naming it, as `--show` refuses it. Errors are `MajordomusError`s, whose
`code` is the exit code the CLI would give and whose `hint` says what to do next.
"""

from __future__ import annotations

import os
import stat
from typing import Any

import frontmatter
from frontmatter.default_handlers import YAMLHandler

from majordomus import tasks as task_store
from majordomus.errors import EnvironmentProblem
from majordomus.lite import safeio
from majordomus.store import ledger as ledger_store
from majordomus.store import listing, reading, records
from majordomus.store import paths as state_paths
from majordomus.workspace import Workspace as _Workspace

__all__ = ["Record", "Workspace", "open"]


class Record(frontmatter.Post):
    """One stored record: a `frontmatter.Post` whose metadata is the record's front matter and whose
    content is its body, plus where it is stored (`path`, `name`) and the sha256 of its bytes (what the
    ledger recorded for it)."""

    def __init__(self, content: str, metadata: dict[str, Any], path: str, sha256: str) -> None:
        # metadata goes in after construction: a front-matter key named like a parameter must not collide
        super().__init__(content, handler=YAMLHandler())
        self.metadata.update(metadata)
        self.path = path
        self.name = os.path.basename(path)
        self.sha256 = sha256

    def __repr__(self) -> str:
        return f"<Record {self.metadata.get('kind')} {self.name}>"


class Workspace:
    """The state of one repository, read-only. Made by `majordomus.api.open`."""

    def __init__(self, ws: _Workspace) -> None:
        self._ws = ws

    def __repr__(self) -> str:
        return f"<majordomus.api.Workspace {self.worktree} ({self.branch or 'detached HEAD'})>"

    @property
    def worktree(self) -> str:
        """The work tree this workspace was opened in (its active task is the one active here)."""
        return self._ws.worktree

    @property
    def branch(self) -> str | None:
        """Its branch; None when HEAD is detached."""
        return self._ws.branch

    @property
    def state_dir(self) -> str:
        """`.ai/local/state` of the main worktree, shared by every linked worktree (design §2)."""
        return self._ws.paths.root

    def tasks(self) -> list[dict[str, Any]]:
        """Every task record as a dict of design §5's fields, ordered by id (as `majordomus task list`)."""
        if not self._directory(self._ws.paths.tasks):
            return []
        return [task.to_dict() for task in task_store.all_tasks(self._ws)]

    def active_task(self) -> dict[str, Any] | None:
        """The task active in this worktree and branch, or None."""
        if not self._state():
            return None
        task_id = task_store.active_id(self._ws)
        if task_id is None:
            return None
        task = task_store.load(self._ws, task_id)
        return task.to_dict() if task.status == "active" else None

    def checkpoints(self, task: str | None = None) -> list[Record]:
        """Checkpoint records (of `task`, else of every task), newest first. A record whose bytes no longer
        match the digest in its name (replaced after it was written) raises `UnsafeFile` (code 12) naming
        it, whatever task it claims: what it says is not majordomus's, not even its task."""
        return self._records(self._ws.paths.checkpoints, task)

    def handoffs(self, task: str | None = None) -> list[Record]:
        """Handoff records (of `task`, else of every task), newest first; a replaced one raises, likewise."""
        return self._records(self._ws.paths.handoffs, task)

    def runs(self, task: str | None = None) -> list[Record]:
        """Execution records of `majordomus run` (design §17), newest first; [] when there are none. A
        replaced one raises, likewise: an edited exit status is never read as evidence."""
        return self._records(self._ws.paths.runs, task)

    def ledger(self, task: str | None = None) -> list[dict[str, Any]]:
        """The ledger's events (of `task`, else all) in the order they were appended, oldest first, as
        `majordomus ledger` prints them. A torn or invalid line is skipped, never fatal."""
        if task is not None:
            task_store.validate_id(task)
        if not self._state():
            return []
        return ledger_store.replay(self._ws.paths.ledger, task).events

    def _records(self, directory: str, task: str | None) -> list[Record]:
        if task is not None:
            task_store.validate_id(task)
        if not self._directory(directory):
            return []
        found = []
        for name in listing.list_names(directory):
            record = _read_record(os.path.join(directory, name))
            if record is not None and (task is None or record.metadata.get("task") == task):
                found.append(record)
        return found

    def _state(self) -> bool:
        """True when the state exists; a symbolic link on the way is refused (exit 12), as by the CLI."""
        return state_paths.check_readable(self._ws.paths)

    def _directory(self, path: str) -> bool:
        """True when `path`, a directory of the state, exists; never listed through a symbolic link."""
        if not self._state():
            return False
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return False
        if not stat.S_ISDIR(mode):
            raise safeio.UnsafeFile(path, f"is {safeio.kind_of(mode)} where a directory belongs")
        return True


def _read_record(path: str) -> Record | None:
    """The record at `path`, None when it went away meanwhile; one without front matter, or whose bytes are
    not the ones its name was made from (`reading.intact`, the check of every reader), is an error."""
    try:
        data = safeio.read(path, records.MAX_RECORD_BYTES)
    except FileNotFoundError:
        return None
    if not reading.intact(path, data):
        raise safeio.UnsafeFile(path, "no longer matches the digest in its name (its content was replaced "
                                "after it was written)", "`majordomus doctor` names every such record; the "
                                "ledger still holds the digest of what was written (`majordomus ledger`)")
    try:
        metadata, body = records.split(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise EnvironmentProblem(f"{path} is not a readable record: {exc}",
                                 "run `majordomus doctor` to see what is wrong with the store") from exc
    return Record(body, metadata, path, records.sha256(data))


def open(path: str = ".") -> Workspace:
    """The state of the repository around `path` (as `majordomus -C PATH` would see it), read-only; a path
    that is not text, or holds NUL, is `MajordomusError` (code 2), as an argument majordomus cannot take."""
    where = os.fspath(path)
    if not isinstance(where, str) or "\0" in where:
        from majordomus.errors import UsageError
        from majordomus.lite.textrules import escape

        raise UsageError(f"`{escape(repr(where))}` is no directory path majordomus can open",
                         "give a path as text (a str or an os.PathLike of one), without NUL")
    return Workspace(_Workspace.open(where))
