"""Every record and pin that holds all the words, or a regular expression, newest first (design §22).

Built to cost about what `grep -rli` costs over the same files: names are listed, never stat'ed (a record's
name begins with its UTC second, so name order is time order); each file is read once, bounded and without
following links, by one `read` in the common case; the words are looked for in the bytes before anything
is decoded or parsed; and matches are yielded as they are found, so memory holds the names and one record.
A large listing is searched on two cores, every other block of names by a forked child (`search_worker`).
A search of a small store is mostly the interpreter starting, so this module loads little: what only
`-E`, `--task`, an odd record or a pin needs is imported where it is needed.
"""

from __future__ import annotations

import os
import stat

from majordomus import search_dirs, search_names, search_query
from majordomus.errors import EnvironmentProblem, UsageError
from majordomus.search_dirs import FIRST_READ
from majordomus.search_listing import BLOCK, REPLACED, Lines, Row
from majordomus.search_listing import text_line as text_line  # the listing's line is part of this module's face
from majordomus.search_query import Query as Query  # the query is part of this module's face

TYPE_CHECKING = False  # typing is not loaded at run time (see above)
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any

    from majordomus.workspace import Workspace

KINDS = ("checkpoint", "handoff", "run", "pin")
DIRECTORIES = (("checkpoint", "checkpoints"), ("handoff", "handoffs"), ("run", "runs"))
TOOL_MAX = 200  # matches the MCP tool returns at most


class Hit:
    __slots__ = ("at", "kind", "line", "path", "task")

    def __init__(self, task: str, kind: str, at: str, path: str, line: str) -> None:
        self.task, self.kind, self.at, self.path, self.line = task, kind, at, path, line

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "kind": self.kind, "at": self.at, "path": self.path, "line": self.line}


def check_task(ws: Workspace, task_id: str) -> str:
    """`--task T` refused as `task show` refuses it: a bad id or no such task is exit 2."""
    from majordomus import tasks

    tasks.load(ws, tasks.validate_id(task_id))
    return task_id


def _iso(compact: str) -> str:
    """`20260903T194500Z` -> `2026-09-03T19:45:00Z`."""
    c = compact
    return f"{c[0:4]}-{c[4:6]}-{c[6:8]}T{c[9:11]}:{c[11:13]}:{c[13:15]}Z"


def search(ws: Workspace, query: Query, task: str | None = None, kind: str | None = None,
           skipped: list[str] | None = None) -> Iterator[Hit]:
    """Every matching record and pin, newest first, yielded as found; files that cannot be read as
    records are named in `skipped` (doctor says what is wrong with them) and the search goes on."""
    return (Hit(*row) for row in rows(ws, query, task, kind, skipped))


def rows(ws: Workspace, query: Query, task: str | None = None, kind: str | None = None,
         skipped: list[str] | None = None) -> Iterator[Row]:
    """`search` as (task, kind, at, path, line) tuples, with no object per match."""
    return _scan(ws, query, task, kind, [] if skipped is None else skipped, False)  # type: ignore[return-value]


def text_chunks(ws: Workspace, query: Query, task: str | None = None, kind: str | None = None,
                skipped: list[str] | None = None) -> Iterator[str]:
    """`search` as its text listing, escaped, in chunks of whole lines (up to `BLOCK` of them): `AT  TASK  KIND
    PATH  LINE`, the kind padded to 10, the line stripped. A listing of 100,000 matches is built here: a match
    of the common case is three appends, and its line is made with a block of others (`Lines`)."""
    return _scan(ws, query, task, kind, [] if skipped is None else skipped, True)  # type: ignore[return-value]


def _scan(ws: Workspace, query: Query, task: str | None, kind: str | None, skipped: list[str],
          as_lines: bool) -> Iterator[Row | str]:
    from majordomus.store import records  # the body caps: a record over them is never served

    needle = b'\ntask: "' + task.encode() + b'"\n' if task is not None else None
    wanted = [(k, d) for k, d in DIRECTORIES if kind in (None, k)]
    fds: list[int] = []
    worker = None
    try:
        shown, listings, caps = [], [], []
        for kind_name, directory in wanted:
            fd = search_dirs.open_dir(ws.paths.directory(directory))
            if fd is not None:
                fds.append(fd)
                listings.append(search_dirs.names(fd))
                shown.append((kind_name, ws.display(ws.paths.directory(directory)) + os.sep))
                caps.append(records.body_caps(directory, ws.config))  # over them, not ours: never served
        pairs: Iterable[tuple[str, int]] = search_dirs.merged(listings) if listings else ()
        plain = query.pattern is None and len(query.ascii_words) == len(query.words)
        if as_lines and plain and listings:
            from majordomus import search_worker  # the second core, for a large listing (see there)

            if search_worker.wanted(sum(map(len, listings))):
                # forked before the pins are read: the child needs the names only
                if len(listings) == 1:
                    every, indexes = listings[0], None
                else:
                    every, indexes = [name for name, _ in pairs], [index for _, index in pairs]
                worker = search_worker.Worker(every, indexes, lambda theirs, notes: _records(
                    query, task, needle, shown, fds, caps, listings, [], theirs, notes, True))  # type: ignore[arg-type,return-value]
                pairs = worker.pairs()
        pins: list[tuple[str, Row]] = []
        if kind in (None, "pin"):
            from majordomus import search_pins  # pins are few: gathered in full, then merged in

            pins = search_pins.hits(ws, query, task, skipped)
            if worker is not None and pins:
                worker.keep([key for key, _row in pins])
        chunks = _records(query, task, needle, shown, fds, caps, listings, pins, pairs, skipped, as_lines)
        if worker is None:
            yield from chunks
        else:
            for chunk in chunks:
                if chunk:
                    yield chunk
                else:  # the place of a block the worker searched
                    yield from worker.receive(skipped)
    finally:
        if worker is not None:
            worker.close()
        for fd in fds:
            os.close(fd)


def _records(query: Query, task: str | None, needle: bytes | None, shown: list[tuple[str, str]], fds: list[int],
             caps: list[Any], listings: list[list[str]], pins: list[tuple[str, Row]],
             pairs: Iterable[tuple[str, int]], skipped: list[str], as_lines: bool) -> Iterator[Row | str]:
    """The search of the names in `pairs`, newest first, with `pins` merged in: rows, or the text listing
    in chunks. A pair `(name, -1)` marks the place of a block searched elsewhere (`search_worker`): there
    the text so far is yielded, then "" (never a chunk otherwise)."""
    from majordomus.store import records
    # A pin goes out before the first record older than it: `pin_key` is the next pin's sort key ("" when
    # none is left, which no record name is below), so a record costs one comparison for the pins.
    pin_at, pin_key = 0, pins[0][0] if pins else ""
    maybe, line_of, ascii_line = query.maybe, query.line, query.ascii_line
    known: dict[bytes, str] = {}
    days: dict[str, str] = {}
    # text: per directory, the tag of a line by the task line's bytes (`Lines`), only for the task asked
    tags: list[dict[bytes, str]] = [{} for _ in shown]
    last_raw, last_index, last_tag = b"", -1, ""  # the last tag found there, and for what
    tag: str | None = None
    out = Lines(skipped)
    names_append, tags_append, lines_append = out.names.append, out.tags.append, out.lines.append
    datas_append, wheres_append = out.datas.append, out.wheres.append

    def note(text: str) -> None:
        """A file named as skipped, in its place: after the digests of the matches before it are checked."""
        if out.names:
            out.cut()
        skipped.append(text)
    room = BLOCK  # the matches of the common case a chunk still takes
    fast = query.pattern is None and len(query.ascii_words) == len(query.words)
    words = query.ascii_words  # lower-cased
    one = words[0] if fast and len(words) == 1 else None  # the common case: one plain word
    open_, read, close_, flags, fstat, regular = os.open, os.read, os.close, search_dirs.OPEN_FLAGS, os.fstat, stat.S_ISREG
    task_line, task_and_start = search_names.TASK_LINE, search_names.task_and_start
    sha256: Any = None  # OpenSSL's, loaded by the first match: a search that finds nothing never pays for it
    grammar = search_names.Grammar(listings)
    is_record, others = grammar.holds, grammar.others
    odd = False  # whether any name listed is not a record's (once `others` answers)
    # a text in the fast path is under FIRST_READ bytes, so under that many lines: no line cap is that
    line_caps = [FIRST_READ if lines is None else lines for lines, _bytes in caps]
    byte_caps = [max_bytes for _lines, max_bytes in caps]
    small = any(max_bytes < FIRST_READ for max_bytes in byte_caps)  # else no text here is over its byte cap
    for name, index in pairs:
        while pin_key > name:  # a pin's key is its second, which sorts below the names of that second
            row = pins[pin_at][1]
            if as_lines:
                out.add(text_line(row))
            else:
                yield row
            pin_at += 1
            pin_key = pins[pin_at][0] if pin_at < len(pins) else ""
        if index < 0:  # a block searched by the worker goes here
            rest = out.take()
            if rest:
                yield rest
            yield ""
            room = BLOCK
            continue
        # The common case inlined (this runs once per record): opened without following a link or waiting
        # on a FIFO, confirmed by fstat to be a regular file (design §2a: never a FIFO, even one with a
        # writer, nor a device), read by one read(2); anything else goes to the careful read, which names it.
        try:
            fd = open_(name, flags, dir_fd=fds[index])
        except OSError:
            data = b""
        else:
            try:
                data = read(fd, FIRST_READ) if regular(fstat(fd).st_mode) else b""
            except OSError:
                data = b""
            finally:
                close_(fd)
        if not 0 < len(data) < FIRST_READ:
            if not is_record(name, index):
                continue  # not a record's name: never read further, never named
            try:  # anything but a small regular file: the careful read (fstat, bounded), which names it
                data = search_dirs.read_record(name, fds[index])
            except FileNotFoundError:
                continue  # removed by retention since the listing
            except EnvironmentProblem as exc:
                note(shown[index][1] + exc.message)
                continue
        # (`bytes.find`, not `in`: `x in data` first asks whether x is an int, and raises and clears a
        # TypeError for every record it is not)
        if needle is not None and data.find(needle) < 0:
            continue
        if fast:
            # Only a record's text is searched (after its front matter), so only the text is lower-cased,
            # when it is ASCII (there bytes.lower() is str.lower()); no word in it: nothing more is done.
            # (`find`, not `in`: `x in bytes` first tries x as an int, and raises for it.)
            head, closed, raw_text = data.partition(b"\n---\n")
            if closed and raw_text.isascii():
                low = raw_text.lower()
                if one is not None:
                    pos = low.find(one)
                    if pos < 0:
                        continue
                elif not all(low.find(w) >= 0 for w in words):
                    continue
                if others is not None:  # `grammar.holds`, inlined once it answers from its sets
                    if odd and name in others[index]:
                        continue
                elif not is_record(name, index):
                    continue
                else:
                    others = grammar.others
                    odd = others is not None and any(others)
                # the task line as `records.render` writes it (a task met before costs a lookup)
                # (found, not partitioned: one slice instead of six objects)
                at = head.find(task_line)
                close = head.find(b'"', at + 8) if at >= 0 else -1  # 8: len(task_line)
                if close < 0 or head.find(task_line, close) >= 0:  # `task:` named twice: the careful way
                    raw, quote = b"", False  # (which refuses it)
                else:
                    raw, quote = head[at + 8:close], True
                rendered = quote and head[:4] == b"---\n"
                owner = None
                if rendered and as_lines and raw == last_raw and index == last_index:
                    tag = last_tag  # a task writes its records in a run: the record before's tag
                else:
                    tag = tags[index].get(raw) if as_lines and rendered else None
                    if tag is not None:
                        last_raw, last_index, last_tag = raw, index, tag
                if tag is None:
                    owner = known.get(raw) if rendered else None
                    if owner is None and quote:  # a task not met yet, or not as `records.render` writes it
                        start = task_and_start(data, known)
                        owner = None if start is None else start[0]
                    if owner is None:
                        pass  # no task line as `records.render` writes it: the careful way, below
                    elif task is not None and owner != task:
                        continue
                    elif as_lines:
                        tag = f"  {owner}  {_escape(f'{shown[index][0]:<10}  {shown[index][1]}')}"
                        if rendered:
                            tags[index][raw] = tag
                            last_raw, last_index, last_tag = raw, index, tag
                if tag is not None or owner is not None:
                    # the body caps, asked of a match only, and in full only past a bound it may be over
                    # (the line breaks counted as what removing them takes off: `count` parses its arguments slowly)
                    if (len(raw_text) - len(raw_text.replace(b"\n", b"")) > line_caps[index]
                            or (small and len(raw_text) > byte_caps[index])):
                        over = records.over_cap(data, caps[index])
                        if over is not None:
                            note(f"{shown[index][1]}{name} {over}")
                            continue
                    if as_lines:  # the line's bytes: `Lines` makes the line, with a block of others, and
                        # checks the block's digests in one pass (`records.intact`, for a name the grammar holds)
                        if one is not None:  # the line of the word's first place
                            end = raw_text.find(b"\n", pos)
                            lines_append(raw_text[raw_text.rfind(b"\n", 0, pos) + 1:end if end >= 0 else len(raw_text)])
                        else:
                            found_line = ascii_line(low, raw_text)
                            if found_line is None:
                                continue
                            lines_append(found_line)
                        names_append(name)
                        tags_append(tag)  # type: ignore[arg-type]
                        datas_append(data)
                        wheres_append(shown[index][1])
                        room -= 1
                        if not room:
                            chunk = out.take()
                            if chunk:  # (every one of them replaced: nothing to yield)
                                yield chunk
                            room = BLOCK
                        continue
                    if sha256 is None:
                        import hashlib

                        sha256 = hashlib.sha256
                    if sha256(data).hexdigest()[:16] != name[-19:-3]:  # `records.intact`, for a name the grammar holds
                        skipped.append(f"{shown[index][1]}{name} {REPLACED}")
                        continue
                    text = raw_text.decode("ascii")  # a copy: the text is ASCII
                    if one is not None:  # the line of the word's first place
                        matched = text[text.rfind("\n", 0, pos) + 1:].partition("\n")[0]
                    else:
                        first = line_of(text)
                        if first is None:
                            continue
                        matched = first
                    day = days.get(name[:8])
                    if day is None:
                        day = days[name[:8]] = f"{name[0:4]}-{name[4:6]}-{name[6:8]}T"
                    # (rows have no tag: the owner was found above)
                    yield (owner, shown[index][0], f"{day}{name[9:11]}:{name[11:13]}:{name[13:15]}Z",  # type: ignore[misc]
                           shown[index][1] + name, matched)
                    continue
        # anything else (a text that is not ASCII, a record not as `records.render` writes it, -E, a word
        # that is not ASCII): the text decoded, as it is parsed everywhere
        if not maybe(data) or not is_record(name, index):
            continue
        others = grammar.others
        odd = others is not None and any(others)
        found = search_names.task_and_body(data, known)
        if found is None:
            note(f"{shown[index][1]}{name} has no readable front matter")
            continue
        if task is not None and found[0] != task:
            continue
        over = records.over_cap(data, caps[index])
        if over is not None:
            note(f"{shown[index][1]}{name} {over}")
            continue
        try:
            line = line_of(found[1])
            if line is not None and not records.intact(name, data):
                note(f"{shown[index][1]}{name} {REPLACED}")
                continue
        except UsageError as exc:  # -E past its deadline (regexbound.TooSlow): where
            raise search_query.where(exc, shown[index][1] + name) from None
        if line is not None:
            row = (found[0], shown[index][0], _iso(name), shown[index][1] + name, line)
            if as_lines:
                out.add(text_line(row))
            else:
                yield row
        if as_lines and out.size >= BLOCK:
            chunk = out.take()
            if chunk:
                yield chunk
            room = BLOCK
    for _key, row in pins[pin_at:]:
        if as_lines:
            out.add(text_line(row))
        else:
            yield row
    if as_lines:
        rest = out.take()
        if rest:
            yield rest


def _escape(text: str) -> str:
    from majordomus.lite.textrules import escape

    return escape(text)


TOOL_DESCRIPTION = ("Find the records and pins whose text holds every word (case-insensitive), newest first; "
                    "regex=true: words is one regular expression. Optional task, and kind (checkpoint, handoff, "
                    "run or pin). Returns {\"matches\": [{task, kind, at, path, line}], \"truncated\": bool}.")


def tool(ws: Workspace, words: list[str], regex: bool = False, task: str | None = None,
         kind: str | None = None) -> dict[str, Any]:
    """The MCP `search` tool: the newest TOOL_MAX matches, as `majordomus search --json` gives them."""
    from majordomus import regexbound

    if kind is not None and kind not in KINDS:
        raise UsageError(f"`{kind}` is not a kind to search", f"use one of: {', '.join(KINDS)}")
    query = Query(words, regex)
    task = check_task(ws, task) if task is not None else None
    found: list[dict[str, Any]] = []
    skipped: list[str] = []
    with regexbound.watching():  # -E: each record's match bounded, one timer for the whole search
        for hit in search(ws, query, task, kind, skipped):
            if len(found) == TOOL_MAX:
                return {"matches": found, "truncated": True, "skipped": skipped}
            found.append(hit.to_dict())
    return {"matches": found, "truncated": False, "skipped": skipped}
