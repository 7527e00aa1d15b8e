"""`majordomus checkpoint [--show | --list] [--json]` (design §6). A hot command: no click, no pygit2."""

from __future__ import annotations

import sys

from majordomus.cli import argv as parsing

TYPE_CHECKING = False
if TYPE_CHECKING:
    from majordomus.workspace import Workspace


OPTIONS = parsing.Spec(
    "usage: majordomus checkpoint [--show | --list] [--json]\n\n"
    "Record what holds now: a few lines from stdin, identity computed from git. Over the line cap it is\n"
    "refused, never truncated: write a handoff instead (`majordomus handoff`).\n",
    flags={"--show": "print the newest checkpoint of the active task here",
           "--list": "list every checkpoint record, newest first", "--json": "print JSON for machines"},
    exclusive=("--show", "--list"))


def main(argv: list[str]) -> int:
    args = parsing.parse(OPTIONS, argv)
    if args is None:
        return 0
    from majordomus.workspace import Workspace

    ws = Workspace.open()
    if args["show"]:
        return show(ws, bool(args["json"]))
    if args["list"]:
        from majordomus import output
        from majordomus.store import listing, paths

        found = listing.summaries(ws, ws.paths.checkpoints) if paths.check_readable(ws.paths) else iter(())
        output.print_records(found, bool(args["json"]))
        return 0
    return write(ws, bool(args["json"]))


def write(ws: Workspace, as_json: bool) -> int:
    from majordomus import checkpoint

    written = checkpoint.write(ws, sys.stdin.buffer, _notice)
    if written is None:
        sys.stderr.write("empty body: no record written; the task's checkpoint time moved\n")
        if as_json:
            print('{"path": null, "sha256": null, "created": false}')
        return 0
    if written.completed:
        sys.stderr.write("the identical record was stored by an earlier write that did not fully land; "
                         "its task pointer and ledger event are complete now\n")
    elif not written.created:
        sys.stderr.write("the identical record is already stored; nothing new was written\n")
    if as_json:
        from majordomus import output

        print(output.dumps({"path": written.shown, "sha256": written.sha256, "created": written.created}))
    else:
        print(written.shown)
    return 0


def _notice() -> None:
    """Once the active task is known, before stdin is read: say so when stdin is a terminal."""
    if sys.stdin.isatty():
        sys.stderr.write("majordomus: reading the checkpoint from the terminal; end it with Ctrl-D\n")


def show(ws: Workspace, as_json: bool) -> int:
    from majordomus import checkpoint, output
    from majordomus.store import reading

    path = checkpoint.latest(ws)
    if as_json:
        output.emit_json(reading.describe(ws, path) if path else None)
    elif path is not None:
        text = reading.shown(ws, path).decode("utf-8", "replace")
        sys.stdout.write(output.escape(text, body=True))
    return 0
