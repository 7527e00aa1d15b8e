"""`majordomus search WORD… [-E] [--task T] [--kind checkpoint|handoff|run|pin] [--json]` (design §22)."""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from typing import Any

import click

from majordomus.cli.common import CONTEXT, json_option, run, workspace
from majordomus.cli.log import colour_wanted, paged
from majordomus.output import BlockWriter, dumps, escape, note

_MARK, _RESET = "\x1b[1;31m", "\x1b[0m"


@click.command("search", context_settings=CONTEXT)
@click.argument("words", nargs=-1, required=True, metavar="WORD...")
@click.option("-E", "--regexp", "regex", is_flag=True, help="WORD is one regular expression (case-insensitive).")
@click.option("--task", "task_id", metavar="T", help="Only the records and pins of task T.")
@click.option("--kind", type=click.Choice(["checkpoint", "handoff", "run", "pin"]), help="Only records of this kind.")
@json_option
@click.pass_context
def search_cmd(ctx: click.Context, words: tuple[str, ...], regex: bool, task_id: str | None, kind: str | None,
               as_json: bool) -> None:
    """Find the records and pins that hold every WORD, newest first.

    Case-insensitive. Each line: time, task, kind, path and the matching line. Exit 0 with matches,
    1 with none.
    """
    from majordomus import regexbound, search

    query = search.Query(words, regex)
    ws = workspace()
    task = search.check_task(ws, task_id) if task_id is not None else None
    skipped: list[str] = []
    with regexbound.watching() if regex else contextlib.nullcontext():  # -E: each record's match bounded
        shown = _show(ws, query, task, kind, skipped, as_json)
    for text in skipped[:10]:
        note(f"majordomus: skipped {text}")
    if len(skipped) > 10:
        note(f"majordomus: skipped {len(skipped) - 10} more (run `majordomus doctor`)")
    if not shown:
        ctx.exit(1)


def _show(ws: Any, query: Any, task: str | None, kind: str | None, skipped: list[str], as_json: bool) -> int:
    """Print the hits as they come; how many there were."""
    from majordomus import regexbound, search

    shown = 0
    if as_json:
        hits = search.search(ws, query, task, kind, skipped)
        out = BlockWriter(sys.stdout)
        out.write("[")
        for hit in hits:
            out.write(("," if shown else "") + "\n " + dumps(hit.to_dict()))
            shown += 1
        out.write("\n]\n" if shown else "]\n")
        out.flush()
    else:
        colour = colour_wanted()
        mark = _marker(query) if colour else None
        with paged() as stream:
            if mark is None:
                shown = _plain(stream, search.text_lines(ws, query, task, kind, skipped))
            else:
                out = BlockWriter(stream)
                for hit in search.search(ws, query, task, kind, skipped):
                    shown_line = escape(hit.line.strip())
                    # the marking runs the expression again, under the same deadline; past it, unmarked
                    marked = regexbound.sub(mark, lambda m: _MARK + m.group() + _RESET, shown_line)
                    line = shown_line if marked is None else marked
                    out.write(escape(f"{hit.at}  {hit.task}  {hit.kind:<10}  {hit.path}") + f"  {line}\n")
                    shown += 1
                out.flush()
    return shown


def _plain(stream: Any, lines: Iterator[str]) -> int:
    """The lines without colour, in blocks; one escape check per block instead of per line (a search can
    print 100,000): a block whose lines need no escaping is written as it is, any other line by line."""
    from itertools import islice

    shown = 0
    while True:
        block = list(islice(lines, _BLOCK))
        if not block:
            break
        shown += _write_block(stream, block)
        stream.flush()  # a block is on its way before the next one is searched for (design §22: streamed)
    return shown


_BLOCK = 512


def _write_block(stream: Any, block: list[str]) -> int:
    if block:
        probe = " ".join(block)  # the lines as one line: escaped as it is exactly when none of them is
        # (printable ASCII is never escaped: the cheap answer for the common case, else the one rule's)
        if (probe.isascii() and probe.isprintable()) or escape(probe) is probe:
            stream.write("\n".join(block) + "\n")
        else:
            stream.write("".join(escape(line) + "\n" for line in block))
    return len(block)


def _marker(query: object) -> re.Pattern[str] | None:
    pattern = getattr(query, "pattern", None)
    if pattern is not None:
        return re.compile(pattern.pattern, re.IGNORECASE)
    words = getattr(query, "words", [])
    return re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE) if words else None


def main(argv: list[str]) -> int:
    return run(search_cmd, argv, "majordomus search")
