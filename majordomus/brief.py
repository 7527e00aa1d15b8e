"""`majordomus brief` (design §9): what a worker resumes from — records first, recollection never.

The briefing is the continuity render, the latest handoff's body, the checkpoints since that handoff
(newest first), the last recorded facts, and — when the work tree moved since the latest record — a
"Since the last record" section, so that nobody trusts a stale note. Over budget it drops the oldest
checkpoints first, then continuity in the order of design §8, then the handoff, and says so in its last line.
Pins are working memory: with `context/ID/` gone the briefing still stands on records and the ledger.
"""

from __future__ import annotations

from majordomus import budget, claims, continuity, runs, tasks
from majordomus.git import status
from majordomus.store import ledger, reading
from majordomus.workspace import Workspace

TYPE_CHECKING = False  # on the session-start path: typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any


_LIST_FILES = 10  # dirty paths named in the drift section before "and N more"
_LIST_COMMITS = 5


class Briefing:
    __slots__ = ("drift", "dropped", "task", "text")

    def __init__(self, task: str, text: str, dropped: list[str], drift: list[str]) -> None:
        self.task, self.text, self.dropped, self.drift = task, text, dropped, drift


def build(ws: Workspace, task_id: str | None = None, budget_bytes: int | None = None) -> str:
    """The briefing text within `budget_bytes` (default `continuity.render_max_bytes`)."""
    return compose(ws, task_id, budget_bytes).text


def _where(meta: dict[str, Any]) -> str:
    branch = meta.get("branch") or "(detached)"
    head = (meta.get("head") or "0000000")[:7]
    return f"{branch}@{head}"


def _state(meta: dict[str, Any]) -> str:
    changed = len(meta.get("changed_files") or []) + int(meta.get("changed_files_omitted") or 0)
    if meta.get("worktree_state") == "dirty":
        return f"dirty ({changed} changed file{'s' if changed != 1 else ''})"
    return str(meta.get("worktree_state") or "unknown")


def _names(paths: list[str]) -> str:
    shown = ", ".join(paths[:_LIST_FILES])
    return shown + (f" and {len(paths) - _LIST_FILES} more" if len(paths) > _LIST_FILES else "")


def drift(ws: Workspace, meta: dict[str, Any]) -> list[str]:
    """How the work tree here differs from what the record says: worktree, branch, HEAD, dirty files."""
    out: list[str] = []
    if meta.get("worktree") and meta["worktree"] != ws.worktree:
        out.append(f"- worktree: this is {ws.worktree}; the record was written in {meta['worktree']}")
    if meta.get("branch") != ws.branch:
        out.append(f"- branch: now {ws.branch or '(detached)'}; the record was on {meta.get('branch') or '(detached)'}")
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
    if gone and meta.get("worktree") not in (None, ws.worktree):
        # Uncommitted work the record saw lives in the other worktree: the taker must know it is not here.
        out.append(f"- changed in the record (in {meta['worktree']}), not changed here: {_names(gone)}")
    elif gone:
        out.append(f"- changed in the record, unchanged now: {_names(gone)}")
    return out


def _head_drift(ws: Workspace, then: str | None, now: str | None) -> list[str]:
    if now is None:
        return [f"- HEAD: no commit here now; the record was at {then[:7] if then else '(none)'}"]
    if then is not None and not status.is_commit(ws.place, then):
        return [f"- HEAD: now {now[:7]}; the recorded head {then[:7]} is not in this repository"]
    shown, total = status.commits_since(ws.place, then, now, _LIST_COMMITS)
    lines = [f"- HEAD: now {now[:7]}, {total} commit{'s' if total != 1 else ''} since the recorded "
             f"{then[:7] if then else '(unborn branch)'}"]
    if then is not None:
        apart = status.divergence(ws.place, then, now)
        if apart and apart[1]:
            lines[0] += (f"; {apart[1]} recorded commit{'s are' if apart[1] != 1 else ' is'} not in HEAD "
                         "(history rewritten, or another line of work)")
    lines.extend(f"  - {short} {summary}" for short, summary in shown)
    if total > len(shown):
        lines.append(f"  - … and {total - len(shown)} more")
    return lines


def _facts(ws: Workspace, task: tasks.Task, last: reading.Record | None) -> list[str]:
    out = []
    if last is not None:
        m = last.meta
        out.append(f"- last record: {m.get('kind')} at {m.get('timestamp')} in {m.get('worktree')} on "
                   f"{_where(m)}, {_state(m)}; {last.rel}")
    else:
        out.append("- last record: none yet (no checkpoint or handoff)")
    event = ledger.last_event(ws.paths.ledger, task.id, exclude=("session.start", "session.stop"))
    if event is not None:
        by = f" by {event['by']}" if event.get("by") else ""
        where = f" in {event.get('worktree')} on {event.get('branch') or '(detached)'}"
        out.append(f"- last event: {event['event']} at {event.get('at')}{by}{where}")
    return out


def _title(ws: Workspace, task: tasks.Task) -> str:
    title = f" ({task.title})" if task.title and task.title != task.id else ""
    line = f"Briefing for task `{task.id}`{title}: {task.status}, profile {task.profile}, owner {task.owner}.\n"
    held = tasks.where_active(ws, task)
    if held == "orphaned":
        line += (f"It was active in {task.worktree}, which no longer exists (the worktree is gone): continue it "
                 f"here with `majordomus task resume {task.id}`.\n")
    elif held == "remote":
        line += f"It is active on another machine, in {task.worktree} on {task.branch or '(detached)'}.\n"
    elif held == "elsewhere":
        line += f"It is active in {task.worktree} on {task.branch or '(detached)'}.\n"
    elif task.status in ("paused", "handed-off"):
        line += f"Continue it here with `majordomus task resume {task.id}`.\n"
    return line


def _continuity(ws: Workspace, task: tasks.Task) -> tuple[dict[str, Any], str | None]:
    doc, found = continuity.examine(ws, task.id)
    if doc is not None:
        return doc, None
    rebuilt = continuity.new_doc(ws, task, task.started_at)
    if found:
        return rebuilt, (f"Continuity not shown: {found[0]}. Run `majordomus context validate {task.id}`; "
                         "the objective below comes from the task record.")
    return rebuilt, "No continuity file (no pins): the objective below comes from the task record."


def compose(ws: Workspace, task_id: str | None = None, budget_bytes: int | None = None) -> Briefing:
    task = tasks.load(ws, tasks.validate_id(task_id)) if task_id else tasks.active(ws)
    limit = ws.config.get("continuity", "render_max_bytes") if budget_bytes is None else budget_bytes
    doc, note = _continuity(ws, task)
    latest_handoff = reading.previous_handoff(ws, task)
    since, unread = reading.recent_checkpoints(ws, task, latest_handoff, limit)  # oldest first
    last = since[-1] if since else latest_handoff

    parts: list[budget.Part] = [_title(ws, task)]
    double = claims.brief_section(task.id, task.claims)  # a double claim comes first
    if double:
        parts.append(double)
    if note:
        parts.append(f"\n{note}\n")
    blocks, cont_order = continuity.blocks(doc, 1)
    first = len(parts)
    parts.extend(blocks)
    order = [(first + i, j) for i, j in cont_order]

    if latest_handoff is not None:
        m = latest_handoff.meta
        text = (f"\n# Latest handoff: {m.get('timestamp')} · {_where(m)} · {m.get('owner')}\n"
                f"{latest_handoff.body}\n")
        parts.append(budget.Block("", [budget.Entry(text, "the latest handoff", whole=True)]))
        handoff_unit = [(len(parts) - 1, 0)]
    else:
        if task.handoff:
            parts.append(f"\nThe latest handoff record ({task.handoff}) is missing; run `majordomus doctor`.\n")
        handoff_unit = []

    checkpoint_label = ("oldest checkpoint", "oldest checkpoints")
    if since:
        heading = "Checkpoints since the latest handoff" if latest_handoff else "Checkpoints"
        entries = [budget.Entry(f"\n## {r.meta.get('timestamp')} · {_where(r.meta)} · {_state(r.meta)}\n{r.body}\n",
                                *checkpoint_label) for r in reversed(since)]
        parts.append(budget.Block(f"\n# {heading}, newest first\n", entries))
        # Entries are shown newest first, dropped oldest first, before anything else goes.
        order = [(len(parts) - 1, j) for j in reversed(range(len(entries)))] + order
    order += handoff_unit

    parts.append("\n# Last recorded facts\n" + "\n".join(_facts(ws, task, last)) + "\n")
    moved = drift(ws, last.meta) if last is not None else []
    if moved:
        parts.append("\n# Since the last record\n" + "\n".join(moved) + "\n")
    elif last is not None:
        parts.append("- work tree here: unchanged since the last record\n")
    ran = runs.brief_lines(ws, task)  # the latest run per label, and what moved since
    if ran:
        parts.append("\n# Latest runs\n" + "\n".join(ran) + "\n")

    def closing(labels: list[str]) -> str:
        if labels:
            return f"\n(dropped to fit {limit} bytes: {', '.join(labels)})\n"
        return f"\n(complete: nothing was dropped to fit {limit} bytes)\n"

    # Checkpoints too old to matter were only counted (see reading.recent_checkpoints): dropped first.
    fitted = budget.fit(parts, order, limit, closing, already=(budget.Entry("", *checkpoint_label), unread))
    return Briefing(task=task.id, text=fitted.text, dropped=fitted.dropped, drift=moved)
