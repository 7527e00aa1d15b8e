"""The "Since the last record" section of the briefing (design §9, §21): how the work tree here differs from
what the latest record says — worktree, branch, HEAD (followed through amends and rebases, commits counted
only along one line of history) and the dirty files."""

from __future__ import annotations

from majordomus.git import status
from majordomus.lite import textrules
from majordomus.workspace import Workspace

TYPE_CHECKING = False  # on the session-start path: typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any

    from majordomus.rewrites import Relation

_LIST_FILES = 10  # dirty paths named before "and N more"
_LIST_COMMITS = 5


def esc(value: Any) -> str:
    """A stored field on one line of the briefing: escaped, so that it can never start a line of its own."""
    return textrules.escape(str(value))


def _names(paths: list[str]) -> str:
    shown = ", ".join(esc(p) for p in paths[:_LIST_FILES])
    return shown + (f" and {len(paths) - _LIST_FILES} more" if len(paths) > _LIST_FILES else "")


def drift(ws: Workspace, meta: dict[str, Any], here: status.Status | None = None) -> list[str]:
    """How the work tree here differs from what the record says: worktree, branch, HEAD, dirty files
    (`here`: the work tree's `git status`, run here when not given)."""
    out: list[str] = []
    here_worktree = textrules.c_quote(ws.worktree)  # as a record stores it
    if meta.get("worktree") and meta["worktree"] != here_worktree:
        out.append(f"- worktree: this is {esc(ws.worktree)}; the record was written in {esc(meta['worktree'])}")
    if meta.get("branch") != (textrules.c_quote(ws.branch) if ws.branch else None):
        out.append(f"- branch: now {esc(ws.branch or '(detached)')}; the record was on "
                   f"{esc(meta.get('branch') or '(detached)')}")
    if here is None:
        here = status.status(ws.place)
    then, now = meta.get("head"), here.head
    if then != now:
        out.extend(_head_drift(ws, then, now))
    changed = here.changed
    recorded = set(meta.get("changed_files") or [])
    new = [p for p in changed if p not in recorded]
    if new:
        out.append(f"- dirty now, not in the record: {_names(new)}")
    gone = sorted(recorded - set(changed))
    if gone and meta.get("worktree") not in (None, here_worktree):
        # Uncommitted work the record saw lives in the other worktree: the taker must know it is not here.
        out.append(f"- changed in the record (in {esc(meta['worktree'])}), not changed here: {_names(gone)}")
    elif gone:
        out.append(f"- changed in the record, unchanged now: {_names(gone)}")
    return out


def _head_drift(ws: Workspace, then: str | None, now: str | None) -> list[str]:
    """What became of the recorded head (design §21): followed through amends and rebases, and a count of
    commits only along one line of history, never across a rewrite or unrelated history."""
    from majordomus import rewrites

    rel = rewrites.relate(ws, then, now, count=False)
    was = rewrites.short(then) if then else "(unborn branch)"
    if rel.kind == "no-head" or now is None:
        return [f"- HEAD: no commit here now; the record was at {then[:7] if then else '(none)'}"]
    became = ""
    if rel.mapped is not None:
        became = f"{rewrites.short(rel.mapped)} (the recorded {was}, rewritten {rewrites.by(rel.hows)})"
    if rel.kind == "foreign":
        if rel.mapped is not None:
            return [f"- HEAD: now {now[:7]}; {became} is not in this repository"]
        return [f"- HEAD: now {now[:7]}; the recorded head {was} is not in this repository"]
    if rel.kind == "same":
        line = f"- HEAD: now {now[:7]}, rewritten from the recorded {was} {rewrites.by(rel.hows)}"
        return [line + _tree_note(rel)]
    if rel.kind == "unreachable":
        line = f"- HEAD: now {now[:7]}; the record was written at {was}"
        if rel.mapped is not None:
            line += f" (rewritten as {rewrites.short(rel.mapped)} {rewrites.by(rel.hows)})"
        return [line + ", no longer in this branch's history"]
    if rel.kind == "behind":
        what = became if rel.mapped is not None else f"the recorded {was}"
        return [f"- HEAD: now {now[:7]}, moved back: {rel.behind} commit{'s' if rel.behind != 1 else ''} up to "
                f"{what} {'are' if rel.behind != 1 else 'is'} not in HEAD"]
    base = rel.base
    shown, total = status.commits_since(ws.place, base, now, _LIST_COMMITS)
    since = became if rel.mapped is not None else f"the recorded {was}"
    lines = [f"- HEAD: now {now[:7]}, {total} commit{'s' if total != 1 else ''} since {since}"]
    lines.extend(f"  - {esc(short)} {esc(summary)}" for short, summary in shown)
    if total > len(shown):
        lines.append(f"  - … and {total - len(shown)} more")
    return lines


def _tree_note(rel: Relation) -> str:
    if rel.same_tree is True:
        return " (the same files: only the commit changed)"
    if rel.same_tree is False:
        return " (the rewrite changed files)"
    return ""
