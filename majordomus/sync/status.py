"""`majordomus sync status`: what a push would send and a pull would import, computed without writing."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Optional

from majordomus.git import odb as git
from majordomus.store import paths
from majordomus.sync import tree as statetree
from majordomus.sync.transport import STATE_REF, tracking_ref
from majordomus.sync.tree import FORMAT_PATH, Conflict, Refusal, Side
from majordomus.sync.push_pull import check_format, fetch_state, resolve_remote
from majordomus.workspace import Workspace


@dataclass
class Status:
    remote: str
    remote_commit: Optional[str]
    fetched: bool
    ahead: dict[str, list[str]] = field(default_factory=dict)  # what `sync push` sends, by directory
    behind: dict[str, list[str]] = field(default_factory=dict)  # what `sync pull` imports, by directory
    conflicts: list[Conflict] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "remote": self.remote,
            "ref": STATE_REF,
            "remote_commit": self.remote_commit,
            "fetched": self.fetched,
            "ahead": self.ahead,
            "behind": self.behind,
            "conflicts": [vars(c) for c in self.conflicts],
            "refused": [vars(r) for r in self.refused],
        }


def _present(ws: Workspace, directory: str) -> set[str]:
    try:
        return set(os.listdir(os.path.join(ws.paths.root, directory)))
    except FileNotFoundError:
        return set()


def status(ws: Workspace, name: Optional[str], *, fetch: bool = True) -> Status:
    """Compare this machine's state with the remote's (fetched first unless `fetch` is False)."""
    remote = resolve_remote(ws, name)
    paths.check_readable(ws.paths)  # refuses a state directory reached through a symlink
    repo = ws.repo
    theirs = fetch_state(ws, remote) if fetch else git.ref_target(repo, tracking_ref(remote))
    current = git.ref_target(repo, STATE_REF)
    base = git.read_tree(repo, current) if current else {}
    ours, skipped = statetree.snapshot(ws, base, checkpoints=True, write=False)
    other = Side(git.read_tree(repo, theirs) if theirs else {})
    check_format(repo, other.entries, remote)
    common = git.merge_base(repo, current, theirs) if current and theirs else None
    plan = statetree.merge(repo, git.read_tree(repo, common) if common else {}, ours, other)
    result = Status(remote=remote, remote_commit=theirs, fetched=fetch, conflicts=plan.conflicts,
                    refused=skipped + plan.refused)
    result.ahead = {d: [] for d in statetree.DIRS}
    result.behind = {d: [] for d in statetree.DIRS}
    present = {d: _present(ws, d) for d in statetree.RECORD_DIRS}
    for path, entry in sorted(plan.entries.items()):
        directory, _, name_ = path.partition("/")
        if path == FORMAT_PATH or directory not in statetree.DIRS or not name_:
            continue
        mine = ours.entries.get(path)
        if mine == entry and other.entries.get(path) != entry:
            result.ahead[directory].append(path)
        if directory == "tasks":
            if ours.disk.get(path) != entry.oid:
                result.behind[directory].append(path)
        elif name_ not in present[directory]:
            result.behind[directory].append(path)
    return result
