"""`majordomus search WORD… [-E] [--task T] [--kind checkpoint|handoff|run|pin] [--json]` (design §22).

A search of 100,000 records is held to about what `grep -rli` costs over the same files, and loading
click costs more than reading 10,000 of them: like every command's, its words are read without click
(`params`), which is loaded only for `--help` and usage errors.
"""

from __future__ import annotations

import sys

from majordomus.cli import params

TYPE_CHECKING = False  # typing is not free either: a search of a small store is mostly start-up
if TYPE_CHECKING:
    import re
    from collections.abc import Iterator
    from typing import Any


KINDS = ("checkpoint", "handoff", "run", "pin")  # search.KINDS: the choices, without importing search
_MARK, _RESET = "\x1b[1;31m", "\x1b[0m"


def main(argv: list[str]) -> int:
    return params.run(search_cmd, argv, "majordomus search")


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


@params.command("search")
@params.argument("words", nargs=-1, required=True, metavar="WORD...")
@params.option("-E", "--regexp", "regex", is_flag=True, help="WORD is one regular expression (case-insensitive).")
@params.option("--task", "task_id", metavar="T", help="Only the records and pins of task T.")
@params.option("--kind", type=params.Choice(KINDS), help="Only records of this kind.")
@params.json_option
def search_cmd(words: tuple[str, ...], regex: bool, task_id: str | None, kind: str | None, as_json: bool) -> int:
    """Find the records and pins that hold every WORD, newest first.

    Case-insensitive. Each line: time, task, kind, path and the matching line. Exit 0 with matches,
    1 with none.
    """
    return search_words(words, regex, task_id, kind, as_json)


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
