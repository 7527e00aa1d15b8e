"""`majordomus check [--checkpoint] [--json]` (design §6): run by the post-commit hook, so it stays light."""

from __future__ import annotations

import sys

from majordomus.cli import argv as parsing

OPTIONS = parsing.Spec(
    "usage: majordomus check [--checkpoint] [--json]\n\n"
    "Is the active task's checkpoint fresh? Exit 0 fresh, 1 stale, none, or a record the task or the\n"
    "ledger names is missing, unreadable or replaced.\n",
    flags={"--checkpoint": "record an empty checkpoint: move the task's checkpoint time to now",
           "--json": "print JSON for machines"})


def main(argv: list[str]) -> int:
    args = parsing.parse(OPTIONS, argv)
    if args is None:
        return 0
    from majordomus import clock, tasks
    from majordomus.output import escape
    from majordomus.store import commit
    from majordomus.workspace import Workspace

    ws = Workspace.open()
    task = tasks.active(ws)
    if args["checkpoint"]:
        at = clock.now_iso()
        commit.touch(ws, task, at)
        if args["json"]:
            _json({"task": task.id, "fresh": True, "checkpoint_at": at, "problem": None})
        return 0
    limit = ws.config.get("checkpoint", "stale_after_minutes")
    # design §6: "1 stale or none": a task never checkpointed has nothing fresh to show yet.
    why = "has no checkpoint yet" if task.checkpoint_at is None else tasks.staleness(task, limit, clock.now_iso())
    problem = None if why is None else f"task `{task.id}` {why} (the limit is {limit} minutes)"
    hint = "pipe a few lines into `majordomus checkpoint`"
    if problem is None:
        from majordomus import brief

        # design §9: without the records it names, a task cannot be called safely resumable.
        missing = brief.missing_records(ws, task)
        if missing:
            named = ", ".join(f"{gone.rel} ({gone.why})" for gone in missing)
            problem = f"task `{task.id}` names records that are missing, unreadable or replaced: {named}"
            hint = ("run `majordomus doctor`, then record what holds now with `majordomus checkpoint` "
                    "(the missing records cannot be recovered from here)")
            if any(gone.rel.startswith("runs/") for gone in missing):  # new evidence takes a run's place
                hint += "; for a run record, run the command again with its label (`majordomus run --label L -- CMD`)"
    if args["json"]:
        _json({"task": task.id, "fresh": problem is None, "checkpoint_at": task.checkpoint_at, "problem": problem})
    elif problem is None:
        sys.stdout.write(f"fresh: {task.id} checkpointed at {task.checkpoint_at}\n")
    if problem is not None:
        if not args["json"]:
            sys.stderr.write(f"majordomus: {escape(problem)}\nhint: {hint}\n")
        return 1
    return 0


def _json(data: dict[str, object]) -> None:
    from majordomus.output import dumps

    sys.stdout.write(dumps(data) + "\n")
