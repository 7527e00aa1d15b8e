"""`majordomus log [TASK] [--all] [-n N] [--since WHEN] [--graph] [--json] [--format text|markdown]` (design §22).

The terminal conventions of git live here too, and `search` shares them: a pager only when stdout is a
terminal, colour only on a terminal and never with NO_COLOR.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import IO, Any

from majordomus.cli import params
from majordomus.cli.params import json_option, run, workspace
from majordomus.output import BlockWriter, dumps, escape, note

DEFAULT_PAGER = "less -FRX"


def colour_wanted() -> bool:
    """Colour only on a terminal, never with NO_COLOR set (https://no-color.org) or a dumb terminal."""
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def pager_command() -> str | None:
    """MAJORDOMUS_PAGER, then PAGER, then `less -FRX`, as git does; empty or `cat` means none."""
    for name in ("MAJORDOMUS_PAGER", "PAGER"):
        value = os.environ.get(name)
        if value is not None:
            return None if value.strip() in ("", "cat") else value
    return DEFAULT_PAGER


@contextlib.contextmanager
def paged() -> Iterator[IO[str]]:
    """Where to write a long listing: a pager when stdout is a terminal, else stdout itself (never in a pipe)."""
    command = pager_command() if sys.stdout.isatty() else None
    if command is None:
        yield sys.stdout
        return
    sys.stdout.flush()
    try:
        proc = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, encoding="utf-8", errors="replace")
    except OSError:
        yield sys.stdout  # no pager after all: the listing still arrives
        return
    assert proc.stdin is not None
    try:
        yield proc.stdin
        proc.stdin.close()
    except BrokenPipeError:  # the reader quit the pager early: that is not an error
        pass
    finally:
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
        proc.wait()


def write_lines(lines: Iterator[str] | list[str]) -> None:
    with paged() as stream:
        out = BlockWriter(stream)
        for line in lines:
            out.write(line + "\n")
        out.flush()


MAX_COUNT = 1_000_000_000  # `-n` past it is a usage error, not a number too large for git or a slice


@params.command("log")
@params.argument("task_id", metavar="[TASK]", required=False)
@params.option("--all", "every", is_flag=True, help="Every task's timeline, interleaved.")
@params.option("-n", "--max-count", "limit", type=params.IntRange(min=1, max=MAX_COUNT), metavar="N",
              help="At most N entries (default 20, or all of them since WHEN with --since).")
@params.option("--since", metavar="WHEN", help="Only what happened since WHEN (as git reads it: `yesterday`, "
              "`2 weeks ago`, 2026-11-30).")
@params.option("--graph", is_flag=True, help="The branch's commit graph, with each record under its commit.")
@json_option
@params.option("--format", "fmt", type=params.Choice(["text", "markdown"]), default="text", show_default=True,
              help="markdown: a table for $GITHUB_STEP_SUMMARY.")
def log_cmd(task_id: str | None, every: bool, limit: int | None, since: str | None, graph: bool, as_json: bool,
            fmt: str) -> None:
    """One timeline of a task, newest first: its events, records and commits.

    TASK defaults to the active task here. Each line: time, kind, short head, summary.
    """
    from majordomus import history, history_text
    from majordomus.errors import UsageError

    if as_json and (graph or fmt != "text"):
        raise UsageError("--json goes alone, not with --graph or --format markdown", "drop one of them")
    if graph and fmt != "text":
        raise UsageError("--graph draws text only, not with --format markdown", "drop one of them")
    ws = workspace()
    selected = history.select(ws, task_id, every)
    after = history.since_iso(ws, since) if since else None
    if limit is None and after is None:
        limit = history.DEFAULT_LIMIT
    if graph:
        lines, loose, shown = history.graph(ws, selected, limit=limit, since=after)
        if not lines:
            lines = ["(no commits of the task's branch to draw: its records follow)"]
        if loose:
            lines.append("records at commits not drawn:" if len(lines) > 1 else "records:")
            lines.extend("  " + history_text.text_line(e) for e in loose)
        write_lines(lines)
        _notes(shown.notes)
        return
    timeline = history.build(ws, selected, limit=limit, since=after, every=every)
    if as_json:
        sys.stdout.write(dumps([e.to_dict() for e in timeline.entries], indent=1) + "\n")
    elif fmt == "markdown":
        sys.stdout.write(history_text.markdown(timeline))
    else:
        colour = colour_wanted()
        write_lines([history_text.text_line(e, colour, with_task=every) for e in timeline.entries])
    if fmt != "markdown":
        _notes(timeline.notes)


def _notes(notes: list[Any]) -> None:
    """The notes on stderr, escaped: one quotes a branch name, which git lets hold U+2028 or NEL."""
    for text in notes:
        note(f"majordomus: {escape(str(text))}")


def main(argv: list[str]) -> int:
    return run(log_cmd, argv, "majordomus log")
