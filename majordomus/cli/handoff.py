"""`majordomus handoff`: write, show and list handoff records (design §7)."""

from __future__ import annotations

import sys

from majordomus.cli import params
from majordomus.cli.params import run, workspace
from majordomus.output import escape, print_records


@params.command("handoff")
@params.argument("task_id", metavar="[TASK]", required=False)
@params.option("--show", is_flag=True, help="Print the newest handoff of the active task, or of TASK.")
@params.option("--list", "list_", is_flag=True, help="List every handoff record, newest first.")
@params.option("--json", "as_json", is_flag=True,
              help="Print JSON for machines: {path, sha256, created} when writing; the records with --show/--list.")
def handoff(task_id: str | None, show: bool, list_: bool, as_json: bool) -> None:
    """Hand the active task over: a Markdown body with the required sections from stdin.

    \b
      majordomus handoff < NOTE.md        write one for the task active here
      majordomus handoff --show [TASK]    the newest, of TASK or the active task
      majordomus handoff --list [--json]  every handoff record, newest first
      majordomus handoff --json < NOTE.md write one; print {path, sha256, created}

    TASK goes with --show only: a handoff is always written for the task active here. The body needs
    each of handoff.required_sections (State, Decisions, Open items, Next actions by default) as a
    level-two heading (`## State`) with content under it. The task becomes handed-off; another worker
    continues it with `majordomus task resume TASK`.
    """
    from majordomus import handoff as core
    from majordomus.errors import UsageError
    from majordomus.output import emit, emit_json, note
    from majordomus.store import listing, paths, reading

    if show and list_:
        raise UsageError("--show and --list do not go together", "pick one")
    if task_id is not None and not show:
        raise UsageError("TASK goes with --show only", "a handoff is written for the active task here")
    ws = workspace()
    if show:
        path = core.latest(ws, task_id)
        if path is None:
            if as_json:
                emit_json(None)
            return
        if as_json:
            emit_json(reading.describe(ws, path))
        else:
            sys.stdout.write(escape(reading.shown(ws, path).decode("utf-8", "replace"), body=True))
        return
    if list_:
        found = listing.summaries(ws, ws.paths.handoffs) if paths.check_readable(ws.paths) else iter(())
        print_records(found, as_json)
        return
    left_out: list[reading.Gone] = []
    written = core.write(ws, sys.stdin.buffer, left_out)
    left = core.left_out_note(ws, left_out)
    if left is not None and (written.created or written.completed):
        note(escape(left))
    if written.completed:
        note("the identical handoff was stored by an earlier write that did not fully land; it is complete now")
        note(f"task `{written.task}` is handed off; continue it anywhere with `majordomus task resume {written.task}`")
    elif not written.created:
        note("the identical handoff is already stored; nothing new was written")
    else:
        note(f"task `{written.task}` is handed off; continue it anywhere with `majordomus task resume {written.task}`")
    if as_json:
        emit_json({"path": ws.display(written.path), "sha256": written.sha256, "created": written.created})
    else:
        emit(ws.display(written.path))


def main(argv: list[str]) -> int:
    return run(handoff, argv, "majordomus handoff")
