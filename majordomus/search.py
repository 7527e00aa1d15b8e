"""Every record and pin that holds all the words, or a regular expression, newest first (design §22).

Built to cost about what `grep -rli` costs over the same files: names are listed, never stat'ed (a record's
name begins with its UTC second, so name order is time order); each file is read once, bounded and without
following links, by one `read` in the common case; the words are looked for in the bytes before anything
is decoded or parsed; and matches are yielded as they are found, so memory holds the names and one record.
"""

from __future__ import annotations

import errno
import heapq
import itertools
import os
import re
import stat
from collections.abc import Iterator
from typing import Any

from majordomus import continuity, regexbound, tasks
from majordomus.errors import EnvironmentProblem, UsageError
from majordomus.lite import names, safeio, statepaths
from majordomus.lite.lazyre import LazyRe
from majordomus.search_query import Query as Query  # the query is part of this module's face
from majordomus.store import records
from majordomus.workspace import Workspace

KINDS = ("checkpoint", "handoff", "run", "pin")
DIRECTORIES = (("checkpoint", "checkpoints"), ("handoff", "handoffs"), ("run", "runs"))
TOOL_MAX = 200  # matches the MCP tool returns at most
_FIRST_READ = 8192  # most records are smaller: one read(2) and a short count means the end of the file


Row = tuple[str, str, str, str, str]  # task, kind, at, path, line


class Hit:
    __slots__ = ("at", "kind", "line", "path", "task")

    def __init__(self, task: str, kind: str, at: str, path: str, line: str) -> None:
        self.task, self.kind, self.at, self.path, self.line = task, kind, at, path, line

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "kind": self.kind, "at": self.at, "path": self.path, "line": self.line}


def check_task(ws: Workspace, task_id: str) -> str:
    """`--task T` refused as `task show` refuses it: a bad id or no such task is exit 2."""
    tasks.load(ws, tasks.validate_id(task_id))
    return task_id


def _iso(compact: str) -> str:
    """`20260903T194500Z` -> `2026-09-03T19:45:00Z`."""
    c = compact
    return f"{c[0:4]}-{c[4:6]}-{c[6:8]}T{c[9:11]}:{c[11:13]}:{c[13:15]}Z"


def _open_dir(path: str) -> int | None:
    """The record directory, opened without following a link; None when there is none."""
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            statepaths.is_real_dir(path)  # the one rule's refusal, naming what is there instead
            raise safeio.UnsafeFile(path, "is not a real directory") from None
        raise EnvironmentProblem(f"cannot open {path}: {exc.strerror}", "check the state directory") from exc


# A listing joined by newlines whose every line is of the record-name grammar: 100,000 names in one C call.
_NAME = re.sub(r"\((?!\?)", "(?:", names.RECORD_NAME.pattern)
_NAME_LINES = LazyRe(f"(?:{_NAME}\n)*{_NAME}")
_CHUNK = 4096  # names a match: its memory stays small (a repeat keeps state per name)


def _names(dir_fd: int, index: int) -> Iterator[tuple[str, int]]:
    """(record name, index of its directory), newest first; only names of the one record-name grammar."""
    listed = os.listdir(dir_fd)
    match = names.RECORD_NAME.fullmatch
    found: list[str] = []
    for at in range(0, len(listed), _CHUNK):
        chunk = listed[at:at + _CHUNK]
        joined = "\n".join(chunk)
        # The common case in one C call a chunk: no name holds a line break and every one is a record's name.
        if joined.count("\n") == len(chunk) - 1 and _NAME_LINES.fullmatch(joined) is not None:
            found += chunk
        else:
            found += [n for n in chunk if match(n)]
    found.sort(reverse=True)  # strings sort faster than tuples: pair them up only as they are merged
    return zip(found, itertools.repeat(index))


def _read(name: str, dir_fd: int) -> bytes:
    """The record's bytes through the one safe open (no link, no FIFO, bounded), in one read when it can."""
    fd = safeio.open_regular(name, records.MAX_RECORD_BYTES, dir_fd=dir_fd)
    try:
        data = os.read(fd, _FIRST_READ)
        if len(data) < _FIRST_READ:
            return data  # a short read of a regular file is its end
        chunks = [data]
        size = len(data)
        while True:
            chunk = os.read(fd, min(1 << 20, records.MAX_RECORD_BYTES + 1 - size))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
            if size > records.MAX_RECORD_BYTES:
                raise safeio.UnsafeFile(name, f"is over the {records.MAX_RECORD_BYTES} bytes a record may be")
    finally:
        os.close(fd)


_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)  # safeio's


def _pin_hits(ws: Workspace, query: Query, task: str | None, skipped: list[str]) -> list[tuple[str, Row]]:
    """(sort key, row) of every matching pin: pins are few, so they are gathered, then merged in."""
    out = []
    for task_id in continuity.task_ids(ws):  # a link where `context/` or `context/ID/` belongs: refused
        if task is not None and task_id != task:
            continue
        try:
            doc = continuity.load(ws, task_id)
        except EnvironmentProblem as exc:
            skipped.append(f"the pins of `{task_id}`: {exc.message}")
            continue
        shown = ws.display(continuity.path_of(ws, task_id))
        for key in continuity.PIN_KEYS:
            for pin in (doc or {}).get(key, []):
                try:
                    line = query.line(pin["text"])
                except regexbound.TooSlow as exc:
                    raise exc.at(f"a pin in {shown}") from None
                if line is not None:
                    at = str(pin["createdAt"])
                    out.append((at.replace("-", "").replace(":", ""), (task_id, "pin", at, shown, line)))
    out.sort(key=lambda pair: pair[0], reverse=True)
    return out


_TASK_LINE = b'\ntask: "'


def _task_and_start(data: bytes, known: dict[bytes, str]) -> tuple[str, int] | None:
    """(task, where the body starts) of a record as `emit_yaml` and `records.render` write it, or None.
    A match costs this for each of up to 100,000 records, so the task line is taken as written (a task id
    never needs escaping; `known` holds the ids checked already); anything else is for `records.split`."""
    end = data.find(b"\n---\n", 3)
    at = data.find(_TASK_LINE, 0, end)
    close = data.find(b'"', at + len(_TASK_LINE), end) if at >= 0 else -1
    if close < 0 or not data.startswith(b"---\n"):
        return None
    raw = data[at + len(_TASK_LINE):close]
    task = known.get(raw)
    if task is None and names.is_task_id(raw.decode("ascii", "replace")):
        task = known[raw] = raw.decode("ascii")
    return None if task is None else (task, end + 5)


def _task_and_body(data: bytes, known: dict[bytes, str]) -> tuple[str, str] | None:
    """(task, body) of a record, or None when it is not one."""
    head = _task_and_start(data, known)
    if head is not None:
        try:
            return head[0], data[head[1]:].decode("utf-8").removesuffix("\n")
        except UnicodeDecodeError:
            return None
    try:
        meta, body = records.split(data)
    except ValueError:  # UnicodeDecodeError included
        return None
    return str(meta.get("task")), body


def search(ws: Workspace, query: Query, task: str | None = None, kind: str | None = None,
           skipped: list[str] | None = None) -> Iterator[Hit]:
    """Every matching record and pin, newest first, yielded as found; files that cannot be read as
    records are named in `skipped` (doctor says what is wrong with them) and the search goes on."""
    return (Hit(*row) for row in rows(ws, query, task, kind, skipped))


def rows(ws: Workspace, query: Query, task: str | None = None, kind: str | None = None,
         skipped: list[str] | None = None) -> Iterator[Row]:
    """`search` as (task, kind, at, path, line) tuples, with no object per match."""
    return _scan(ws, query, task, kind, [] if skipped is None else skipped, False)  # type: ignore[return-value]


def text_lines(ws: Workspace, query: Query, task: str | None = None, kind: str | None = None,
               skipped: list[str] | None = None) -> Iterator[str]:
    """`search` as the lines of its text listing, not yet escaped: `AT  TASK  KIND  PATH  LINE` (the kind
    padded to 10, the line stripped). A listing of 100,000 matches is built here, one format per match."""
    return _scan(ws, query, task, kind, [] if skipped is None else skipped, True)  # type: ignore[return-value]


def text_line(row: Row) -> str:
    task, kind, at, path, line = row
    return f"{at}  {task}  {kind:<10}  {path}  {line.strip()}"


def _scan(ws: Workspace, query: Query, task: str | None, kind: str | None, skipped: list[str],
          as_lines: bool) -> Iterator[Row | str]:
    needle = b'\ntask: "' + task.encode() + b'"\n' if task is not None else None
    wanted = [(k, d) for k, d in DIRECTORIES if kind in (None, k)]
    fds: list[int] = []
    try:
        shown, listings, caps = [], [], []
        for kind_name, directory in wanted:
            fd = _open_dir(ws.paths.directory(directory))
            if fd is not None:
                listings.append(_names(fd, len(fds)))
                shown.append((kind_name, ws.display(ws.paths.directory(directory)) + os.sep))
                caps.append(records.body_caps(directory, ws.config))  # over them, not ours: never served
                fds.append(fd)
        padded = [f"{kind_name:<10}" for kind_name, _where in shown]
        pins = _pin_hits(ws, query, task, skipped) if kind in (None, "pin") else []
        # (key, index): a record's index is its directory's (>= 0), a pin's is -1 - its place in `pins`.
        pin_items = [(key, -1 - n) for n, (key, _row) in enumerate(pins)]
        maybe, line_of = query.maybe, query.line
        known: dict[bytes, str] = {}
        days: dict[str, str] = {}
        fast = query.pattern is None and len(query.ascii_words) == len(query.words)
        words = query.ascii_words
        one = words[0] if fast and len(words) == 1 else None  # the common case: one plain word
        sources = [*listings, iter(pin_items)] if pin_items else listings
        merged = sources[0] if len(sources) == 1 else heapq.merge(*sources, reverse=True)
        open_, read, close_, flags, fstat, regular = os.open, os.read, os.close, _OPEN_FLAGS, os.fstat, stat.S_ISREG
        for name, index in merged:
            if index < 0:
                row = pins[-1 - index][1]
                yield text_line(row) if as_lines else row
                continue
            # `_read_small`, inlined: this runs once per record
            try:
                fd = open_(name, flags, dir_fd=fds[index])
            except OSError:
                data = b""
            else:
                try:  # a regular file only (never a FIFO, even one with a writer): else the careful read refuses it
                    data = read(fd, _FIRST_READ) if regular(fstat(fd).st_mode) else b""
                except OSError:
                    data = b""
                finally:
                    close_(fd)
            if not 0 < len(data) < _FIRST_READ:  # anything but a small plain file: the careful read
                try:
                    data = _read(name, fds[index])
                except FileNotFoundError:
                    continue  # removed by retention since the listing
                except EnvironmentProblem as exc:
                    skipped.append(shown[index][1] + exc.message)
                    continue
            if needle is not None and needle not in data:
                continue
            over = records.over_cap(data, caps[index])
            if over is not None:
                skipped.append(f"{shown[index][1]}{name} {over}")
                continue
            if fast and data.isascii():  # all in the bytes: a lower-cased copy, then the line alone decoded
                low = data.lower()
                if one is not None:
                    pos = low.find(one)
                    if pos < 0:
                        continue
                elif not all(w in low for w in words):
                    continue
                # `_task_and_start`, inlined with `_iso` and the matching line: this runs once per match
                end = data.find(b"\n---\n", 3)
                at = data.find(_TASK_LINE, 0, end)
                close = data.find(b'"', at + 8, end) if at >= 0 else -1
                owner = known.get(data[at + 8:close]) if close >= 0 and data.startswith(b"---\n") else None
                if owner is None:  # a task not met yet, or not as `records.render` writes it (then None)
                    head = _task_and_start(data, known)
                    owner = None if head is None else head[0]
                if owner is not None:
                    if task is not None and owner != task:
                        continue
                    begin = end + 5
                    if one is None:
                        line = query.ascii_line(data, low, begin)
                        if line is None:
                            continue
                    else:
                        if pos < begin:  # the word is in the front matter too: its first place in the text
                            pos = low.find(one, begin)
                            if pos < 0:
                                continue
                        stop = low.find(b"\n", pos)
                        # `begin` follows a newline, so the line starts at or after it
                        line = data[low.rfind(b"\n", 0, pos) + 1:stop if stop >= 0 else len(data)].decode("ascii")
                    day = days.get(name[:8])
                    if day is None:
                        day = days[name[:8]] = f"{name[0:4]}-{name[4:6]}-{name[6:8]}"
                    if as_lines:  # `text_line` of the row, in one format
                        yield (f"{day}T{name[9:11]}:{name[11:13]}:{name[13:15]}Z  {owner}  {padded[index]}  "
                               f"{shown[index][1]}{name}  {line.strip()}")
                    else:
                        yield (owner, shown[index][0], f"{day}T{name[9:11]}:{name[11:13]}:{name[13:15]}Z",
                               shown[index][1] + name, line)
                    continue
            elif not maybe(data):
                continue
            found = _task_and_body(data, known)
            if found is None:
                skipped.append(f"{shown[index][1]}{name} has no readable front matter")
                continue
            if task is not None and found[0] != task:
                continue
            try:
                line = line_of(found[1])
            except regexbound.TooSlow as exc:
                raise exc.at(shown[index][1] + name) from None
            if line is not None:
                row = (found[0], shown[index][0], _iso(name), shown[index][1] + name, line)
                yield text_line(row) if as_lines else row
    finally:
        for fd in fds:
            os.close(fd)


TOOL_DESCRIPTION = ("Find the records and pins whose text holds every word (case-insensitive), newest first; "
                    "regex=true: words is one regular expression. Optional task, and kind (checkpoint, handoff, "
                    "run or pin). Returns {\"matches\": [{task, kind, at, path, line}], \"truncated\": bool}.")


def tool(ws: Workspace, words: list[str], regex: bool = False, task: str | None = None,
         kind: str | None = None) -> dict[str, Any]:
    """The MCP `search` tool: the newest TOOL_MAX matches, as `majordomus search --json` gives them."""
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
