"""The identity every record carries (design §4), computed from the user's own git: the one place it is made.

Prose never supplies any of it: `store.records` refuses a body that tries to.
"""

from __future__ import annotations

import os

from majordomus.git import status
from majordomus.git.oid import Oid
from majordomus.lite import safeio, statepaths, textrules
from majordomus.store import files
from majordomus.store.records import SCHEMA_VERSION

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from majordomus.tasks import Task
    from majordomus.workspace import Workspace


def cached_root(data: bytes | None, head: str) -> Oid | None:
    """The root commit a `cache/root-commit` holds for `head`, or None when it holds anything else.

    The cache is untrusted (design §2a): only the exact line this module writes — `HEAD ROOT` and a
    newline, both full ids of one length, HEAD the current one — is used; a truncated, edited or foreign
    file is ignored and rebuilt, never copied into a record. ROOT was confirmed by git when it was written.
    """
    if data is None or not data.endswith(b"\n") or data.count(b"\n") != 1:
        return None
    parts = data[:-1].decode("ascii", "replace").split(" ")
    if len(parts) != 2 or parts[0] != head:
        return None
    root = Oid.parse(parts[1])
    return root if root is not None and len(root) == len(head) else None


def repo_id(ws: Workspace, head: str | None) -> str | None:
    """The root commit reached by first parents from `head`, cached by head (a miss walks once)."""
    root, cache = _repo_id(ws, head)
    if cache is not None:
        files.write_derived(*cache)  # a cache: losing it costs one walk
    return root


def _repo_id(ws: Workspace, head: str | None) -> tuple[str | None, tuple[str, bytes] | None]:
    """The root commit, and the cache line to write when it was not cached (None when it was)."""
    if head is None:
        return None, None
    cache = ws.paths.root_commit_cache
    try:
        # a link where `cache/` belongs is never read through: the cache is only derived
        root = cached_root(safeio.read_optional(cache, 512) if statepaths.is_real_dir(ws.paths.cache) else None, head)
    except (OSError, safeio.EnvironmentProblem):
        root = None
    if root is not None:
        return str(root), None
    root = status.root_commit(ws.place, head)
    if not os.path.isdir(os.path.dirname(cache)):
        return str(root), None
    return str(root), (cache, f"{head} {root}\n".encode("ascii"))


def fields(ws: Workspace, kind: str, task: Task, at: str) -> list[tuple[str, Any]]:
    """The front matter of a record written now, in design §4's order (the root-commit cache written at once)."""
    out, cache = taken(ws, kind, task, at)
    if cache is not None:
        files.write_derived(*cache)
    return out


def taken(ws: Workspace, kind: str, task: Task, at: str) -> tuple[list[tuple[str, Any]], tuple[str, bytes] | None]:
    """The front matter of a record written now, in design §4's order, and the root-commit cache line to
    write (path, bytes) once the write is past its refusals, or None: a refused write writes nothing."""
    now = status.status(ws.place)
    limit = ws.config.get("checkpoint", "max_changed_files")
    kept = now.changed[:limit]
    root, cache = _repo_id(ws, now.head)
    out: list[tuple[str, Any]] = [
        ("schema_version", SCHEMA_VERSION),
        ("kind", kind),
        ("timestamp", at),
        ("task", task.id),
        ("profile", task.profile),
        ("owner", task.owner),
        ("repo_id", root),
        ("worktree", textrules.c_quote(ws.worktree)),  # never raw: a path may hold a line break
        # mid-rebase HEAD is detached: the branch being rebased, as git's rebase state names it
        ("branch", now.branch if now.branch is not None else (None if ws.branch is None else textrules.c_quote(ws.branch))),
        ("head", None if now.head is None else str(now.head)),
        ("worktree_state", "dirty" if now.changed else "clean"),
        ("changed_files", kept),
    ]
    if len(now.changed) > len(kept):
        out.append(("changed_files_omitted", len(now.changed) - len(kept)))
    return out, cache
