"""The hot commands, runnable without click: `checkpoint`, `checkpoint --show`, `check [--checkpoint]`.

A checkpoint runs in commit hooks and agent loops, so its cost should be the interpreter, pygit2 and one
status of the work tree, little more. `main` sends exactly these argument shapes here before importing
click; anything else (help, --json, a typo) goes to the click CLI, which calls the same functions below.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Optional

from majordomus.errors import MajordomusError

if TYPE_CHECKING:
    from majordomus.workspace import Workspace

# argv shapes handled here -> (command, flag)
_SHAPES = {
    ("checkpoint",): "write",
    ("checkpoint", "--show"): "show",
    ("check",): "check",
    ("check", "--checkpoint"): "touch",
}


def try_run(args: list[str]) -> Optional[int]:
    """Run a hot command and return its exit code, or None when click should handle `args`."""
    directory = None
    if len(args) >= 2 and args[0] == "-C":
        directory, args = args[1], args[2:]
    action = _SHAPES.get(tuple(args))
    if action is None:
        return None
    try:
        if directory is not None:
            import os

            try:
                os.chdir(directory)
            except OSError:
                return None  # let click report it the usual way
        from majordomus.workspace import Workspace

        ws = Workspace.open()
        if action == "write":
            return write(ws)
        if action == "show":
            return show(ws)
        return check(ws, touch=action == "touch")
    except MajordomusError as exc:
        sys.stderr.write(exc.render() + "\n")
        return exc.code


def write(ws: Workspace) -> int:
    from majordomus import checkpoint, tasks

    if sys.stdin.isatty() and tasks.active_id(ws) is not None:
        sys.stderr.write("majordomus: reading the checkpoint from the terminal; end it with Ctrl-D\n")
    written = checkpoint.write(ws, sys.stdin.buffer)
    if written.path is None:
        sys.stderr.write("empty body: no record written; the task's checkpoint time moved\n")
        return 0
    if not written.created:
        sys.stderr.write("the identical record is already stored; nothing new was written\n")
    sys.stdout.write(ws.display(written.path) + "\n")
    return 0


def show(ws: Workspace) -> int:
    from majordomus import checkpoint, store

    path = checkpoint.latest(ws)
    if path is not None:
        sys.stdout.flush()
        sys.stdout.buffer.write(store.read_nofollow(path))
    return 0


def check(ws: Workspace, touch: bool) -> int:
    from majordomus import checkpoint, clock, tasks

    task = tasks.active(ws)
    if touch:
        checkpoint.touch(ws, task.id, clock.iso(clock.now()))
        return 0
    problem = checkpoint.staleness(ws, task)
    if problem:
        sys.stderr.write(f"majordomus: {problem}\nhint: pipe a few lines into `majordomus checkpoint`\n")
        return 1
    sys.stdout.write(f"fresh: {task.id} checkpointed at {task.checkpoint_at}\n")
    return 0
