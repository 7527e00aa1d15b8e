"""`majordomus search WORD… [-E] [--task T] [--kind checkpoint|handoff|run|pin] [--json]` (design §22).

A search of 100,000 records is held to about what `grep -rli` costs over the same files, and loading
click costs more than reading 10,000 of them: the forms a search is run with are parsed here, and click
is loaded only for what it says best — `--help`, completion and every usage error, in its own words.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing is not free either: a search of a small store is mostly start-up
if TYPE_CHECKING:
    import re
    from collections.abc import Iterator
    from typing import Any

    import click

KINDS = ("checkpoint", "handoff", "run", "pin")  # search.KINDS: click's choices, without importing search
_MARK, _RESET = "\x1b[1;31m", "\x1b[0m"
_LONG = ("--task", "--kind")  # the two options that take a value


def main(argv: list[str]) -> int:
    parsed = parse(argv)
    if parsed is None:  # --help, a usage error, anything this parser does not take: click decides
        from majordomus.cli.common import run

        return run(click_command(), argv, "majordomus search")
    return search_words(*parsed)


def parse(argv: list[str]) -> tuple[list[str], bool, str | None, str | None, bool] | None:
    """(words, -E, --task, --kind, --json) as click would parse them, or None for anything else: no word,
    an unknown option, a missing or odd value, `-h`. A value that starts with `-` is left to click too."""
    words: list[str] = []
    regex = as_json = False
    task: str | None = None
    kind: str | None = None
    i, n, options = 0, len(argv), True
    while i < n:
        arg = argv[i]
        i += 1
        if not options or arg[:1] != "-" or arg == "-":
            words.append(arg)
        elif arg == "--":
            options = False
        elif arg in ("-E", "--regexp"):
            regex = True
        elif arg == "--json":
            as_json = True
        else:
            name, eq, value = arg.partition("=")
            if name not in _LONG:
                return None
            if not eq:
                if i >= n or argv[i][:1] == "-":
                    return None
                value = argv[i]
                i += 1
            if name == "--task":
                task = value
            elif value in KINDS:
                kind = value
            else:
                return None
    return (words, regex, task, kind, as_json) if words else None


def search_words(words: list[str] | tuple[str, ...], regex: bool, task_id: str | None, kind: str | None,
                 as_json: bool) -> int:
    """The search itself, however its arguments were parsed: exit 0 with matches, 1 with none."""
    from majordomus import search
    from majordomus.workspace import Workspace

    query = search.Query(words, regex)
    ws = Workspace.open()
    task = search.check_task(ws, task_id) if task_id is not None else None
    skipped: list[str] = []
    if regex:
        from majordomus import regexbound

        with regexbound.watching():  # -E: each record's match bounded, one timer for the whole search
            shown = _show(ws, query, task, kind, skipped, as_json)
    else:
        shown = _show(ws, query, task, kind, skipped, as_json)
    notes = [f"majordomus: skipped {text}\n" for text in skipped[:10]]
    if len(skipped) > 10:
        notes.append(f"majordomus: skipped {len(skipped) - 10} more (run `majordomus doctor`)\n")
    if notes:
        sys.stderr.write("".join(notes))
    return 0 if shown else 1


_COMMAND: click.Command | None = None


def click_command() -> click.Command:
    """The command as click declares it: its --help, its usage errors and what completion offers."""
    global _COMMAND
    if _COMMAND is not None:
        return _COMMAND
    import click

    from majordomus.cli.common import CONTEXT, json_option

    @click.command("search", context_settings=CONTEXT)
    @click.argument("words", nargs=-1, required=True, metavar="WORD...")
    @click.option("-E", "--regexp", "regex", is_flag=True, help="WORD is one regular expression (case-insensitive).")
    @click.option("--task", "task_id", metavar="T", help="Only the records and pins of task T.")
    @click.option("--kind", type=click.Choice(list(KINDS)), help="Only records of this kind.")
    @json_option
    def search_cmd(words: tuple[str, ...], regex: bool, task_id: str | None, kind: str | None,
                   as_json: bool) -> int:
        """Find the records and pins that hold every WORD, newest first.

        Case-insensitive. Each line: time, task, kind, path and the matching line. Exit 0 with matches,
        1 with none.
        """
        return search_words(words, regex, task_id, kind, as_json)

    _COMMAND = search_cmd
    return search_cmd


def _show(ws: Any, query: Any, task: str | None, kind: str | None, skipped: list[str], as_json: bool) -> int:
    """Print the hits as they come; how many there were (the text listing: how many chunks of them)."""
    from majordomus import search

    if as_json:
        from majordomus.output import BlockWriter, dumps

        shown = 0
        out = BlockWriter(sys.stdout)
        out.write("[")
        for hit in search.search(ws, query, task, kind, skipped):
            out.write(("," if shown else "") + "\n " + dumps(hit.to_dict()))
            shown += 1
        out.write("\n]\n" if shown else "]\n")
        out.flush()
        return shown
    if not sys.stdout.isatty():  # a pipe or a file: no pager and no colour, so nothing of them is loaded
        return _plain(sys.stdout, search.text_chunks(ws, query, task, kind, skipped))
    from majordomus.cli.log import colour_wanted, paged

    mark = _marker(query) if colour_wanted() else None
    with paged() as stream:
        if mark is None:
            return _plain(stream, search.text_chunks(ws, query, task, kind, skipped))
        return _coloured(stream, mark, search.search(ws, query, task, kind, skipped))


def _coloured(stream: Any, mark: re.Pattern[str], hits: Iterator[Any]) -> int:
    from majordomus import regexbound
    from majordomus.output import BlockWriter, escape

    shown = 0
    out = BlockWriter(stream)
    for hit in hits:
        shown_line = escape(hit.line.strip())
        # the marking runs the expression again, under the same deadline; past it, unmarked
        marked = regexbound.sub(mark, lambda m: _MARK + m.group() + _RESET, shown_line)
        line = shown_line if marked is None else marked
        out.write(escape(f"{hit.at}  {hit.task}  {hit.kind:<10}  {hit.path}") + f"  {line}\n")
        shown += 1
    out.flush()
    return shown


def _plain(stream: Any, chunks: Iterator[str]) -> int:
    """The listing without colour, escaped already, a chunk of lines at a time (a search can print 100,000):
    each chunk is on its way before the next one is searched for (design §22: streamed)."""
    shown = 0
    for chunk in chunks:
        stream.write(chunk)
        stream.flush()
        shown += 1
    return shown


def _marker(query: object) -> re.Pattern[str] | None:
    import re

    pattern = getattr(query, "pattern", None)
    if pattern is not None:
        return re.compile(pattern.pattern, re.IGNORECASE)
    words = getattr(query, "words", [])
    return re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE) if words else None
