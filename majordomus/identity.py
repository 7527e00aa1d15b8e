"""The identity every record carries (design §4), computed from the user's own git: the one place it is made.

Prose never supplies any of it: `store.records` refuses a body that tries to.
"""

from __future__ import annotations

import os

from majordomus.git import status
from majordomus.lite import safeio
from majordomus.lite import text as text_rule
from majordomus.store import files
from majordomus.store.records import SCHEMA_VERSION

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from majordomus.tasks import Task
    from majordomus.workspace import Workspace


def repo_id(ws: Workspace, head: str | None) -> str | None:
    """The root commit reached by first parents from `head`, cached by head (a miss walks once)."""
    if head is None:
        return None
    cache = ws.paths.root_commit_cache
    try:
        cached = (safeio.read_optional(cache, 512) or b"").decode("ascii").split()
    except (OSError, UnicodeDecodeError, safeio.EnvironmentProblem):
        cached = []
    if len(cached) == 2 and cached[0] == head:
        return cached[1]
    root = status.root_commit(ws.place, head)
    if os.path.isdir(os.path.dirname(cache)):
        files.write_derived(cache, f"{head} {root}\n".encode("ascii"))  # a cache: losing it costs one walk
    return root


def fields(ws: Workspace, kind: str, task: Task, at: str) -> list[tuple[str, Any]]:
    """The front matter of a record written now, in design §4's order."""
    now = status.status(ws.place)
    limit = ws.config.get("checkpoint", "max_changed_files")
    kept = now.changed[:limit]
    out: list[tuple[str, Any]] = [
        ("schema_version", SCHEMA_VERSION),
        ("kind", kind),
        ("timestamp", at),
        ("task", task.id),
        ("profile", task.profile),
        ("owner", task.owner),
        ("repo_id", repo_id(ws, now.head)),
        ("worktree", text_rule.c_quote(ws.worktree)),  # never raw: a path may hold a line break
        ("branch", now.branch),
        ("head", now.head),
        ("worktree_state", "dirty" if now.changed else "clean"),
        ("changed_files", kept),
    ]
    if len(now.changed) > len(kept):
        out.append(("changed_files_omitted", len(now.changed) - len(kept)))
    return out
