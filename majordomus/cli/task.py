"""`majordomus task start|show|list|resume|release|done` (design §5, §18)."""

from __future__ import annotations

from typing import Any

from majordomus.cli import params
from majordomus.cli.params import json_option, run, workspace
from majordomus.output import emit, emit_json, escape, table


@params.group("task")
def task_group() -> None:
    """Start, show, list, resume, release and finish tasks."""


def main(argv: list[str]) -> int:
    return run(task_group, argv, "majordomus task")


def _task_lines(task: Any) -> str:
    from majordomus import claims

    lines = []
    for key, value in task.to_dict().items():
        if key == "claims":
            lines.append("claims:" + "".join(f"\n  - {escape(claims.describe(c))}" + (
                f" (ended {escape(c['ended_at'])}: {escape(c.get('ended_by') or '')})" if c.get("ended_at") else "")
                for c in value))
        elif key == "runs":
            lines.append("runs:" + "".join(f"\n  - {escape(p)}" for p in value))
        else:
            lines.append(f"{key}: {'' if value is None else escape(str(value))}")
    return "\n".join(lines)


@task_group.command("start")
@params.argument("task_id", metavar="ID")
@params.option("--title", help="A short title (default: the id).")
@params.option("--objective", help="What the task must achieve; seeds its continuity.")
@params.option("--profile", help="The worker profile (default: config `profile`).")
@params.option("--owner", help="Who owns it (default: MAJORDOMUS_OWNER, git user.email, login).")
@params.option("--from", "from_task", metavar="TASK", help="Seed continuity with the pins of TASK.")
def task_start(task_id: str, title: str | None, objective: str | None, profile: str | None,
               owner: str | None, from_task: str | None) -> None:
    """Start task ID in this worktree and branch.

    The task active here, if any, is paused; at most one task is active in a worktree and branch.
    """
    from majordomus import lifecycle

    ws = workspace()
    task = lifecycle.start(ws, task_id, title=title, objective=objective, profile=profile, owner=owner,
                           from_task=from_task)
    emit(f"started {task.id} in {escape(ws.where())}")


@task_group.command("show")
@params.argument("task_id", metavar="[ID]", required=False)
@json_option
def task_show(task_id: str | None, as_json: bool) -> None:
    """Show a task (default: the active task here)."""
    from majordomus import tasks

    ws = workspace()
    task = tasks.named_or_active(ws, task_id)
    if as_json:
        emit_json(task.to_dict())
    else:
        emit(_task_lines(task))


@task_group.command("list")
@json_option
def task_list(as_json: bool) -> None:
    """List every task, and where each active one is active."""
    from majordomus import tasks

    ws = workspace()
    skipped: list[str] = []
    items = tasks.all_tasks(ws, skipped)
    for name in skipped:
        params.echo(f"note: {escape(name)} is left out: its name is no task id (`majordomus doctor` says more)", err=True)
    if as_json:
        emit_json([t.to_dict() for t in items])
        return
    rows = [[t.id, t.status, _where(ws, t), t.checkpoint_at or "-", escape(t.title)] for t in items]
    if rows:
        emit(table([["ID", "STATUS", "WHERE", "CHECKPOINT", "TITLE"]] + rows))


def _where(ws: Any, task: Any) -> str:
    """Where an active task is active: this worktree's branch, another worktree here, a worktree of this
    machine that is gone, or another machine."""
    from majordomus import tasks

    branch = task.branch or "detached HEAD"  # in parentheses below: never `((detached))`
    if task.status != "active":
        return "-"
    held = tasks.where_active(ws, task)
    if held == "here":
        return escape(branch)
    if held == "elsewhere":
        return escape(f"{task.worktree or '?'} ({branch})")
    if held == "orphaned":  # this machine's, in a worktree that is gone (`git worktree remove`)
        return escape(f"gone worktree: {task.worktree or '?'} ({branch})")
    from majordomus import claims

    if claims.held_here_unindexed(task, claims.mine(ws)):  # a start or resume here that failed part way
        return escape(f"not finished: {task.worktree or '?'} ({branch}): run its `task start` or `resume` again")
    return escape(f"another machine: {task.worktree or '?'} ({branch})")


@task_group.command("resume")
@params.argument("task_id", metavar="ID")
@params.option("--force", is_flag=True, help="Take over a task active in another worktree or branch.")
@params.option("--reopen", is_flag=True, help="Make a done task active again (recorded as task.reopen).")
def task_resume(task_id: str, force: bool, reopen: bool) -> None:
    """Make a task active here: paused, handed-off, or (--reopen) done.

    A task active in another worktree or branch needs --force; the takeover is recorded in the ledger.
    """
    from majordomus import lifecycle

    ws = workspace()
    task = lifecycle.resume(ws, task_id, force=force, reopen=reopen)
    emit(f"resumed {task.id} in {escape(ws.where())}")


@task_group.command("release")
@params.argument("task_id", metavar="[ID]", required=False)
def task_release(task_id: str | None) -> None:
    """Give up this machine's claim on a task.

    Default: the active task here, which becomes paused. A task held elsewhere (a double claim) only
    loses this machine's claim."""
    from majordomus import taskend

    task, paused = taskend.release_claim(workspace(), task_id)
    emit(f"released {task.id}" + ("; it is paused" if paused else f"; it stays {task.status} where it is held"))


@task_group.command("done")
@params.argument("task_id", metavar="[ID]", required=False)
@params.option("--force", is_flag=True, help="Finish a task that is active in another worktree or branch.")
def task_done(task_id: str | None, force: bool) -> None:
    """Mark a task done (default: the active task here)."""
    from majordomus import taskend

    task = taskend.done(workspace(), task_id, force=force)
    emit(f"done {task.id}")
