"""Which names in a record directory are records' names (design §3), asked only of the names a search
reports, and answered for a whole listing in a few C calls when it reports many."""

from __future__ import annotations

import re

from majordomus.lite import names
from majordomus.lite.lazyre import LazyRe

# The record-name grammar with its branch slug matched lazily (`{1,64}?`): the same names, at half the cost,
# since a greedy slug runs on over the `--head--digest.md` that follows it (all slug characters) and backs
# off one character at a time.
RECORD_NAME = LazyRe(names.RECORD_NAME.pattern.replace("{1,64})", "{1,64}?)"))


class Grammar:
    """Whether a listed name is a record's, asked only of a name that is reported: one by one at first (a
    search that finds a few records checks a few names), then, once many have been asked, for every
    listed name in one pass over the joined listing (a search that finds every record)."""

    ONE_BY_ONE = 64

    def __init__(self, listings: list[list[str]]) -> None:
        self.listings = listings
        self.asked = 0
        self.others: list[set[str]] | None = None  # per directory, the names that are not records'

    def holds(self, name: str, index: int) -> bool:
        if self.others is not None:
            return name not in self.others[index]
        self.asked += 1
        if self.asked > self.ONE_BY_ONE:
            self.others = [_not_records(listed) for listed in self.listings]
        return RECORD_NAME.fullmatch(name) is not None


# A listing joined by newlines whose every line is of the record-name grammar: 100,000 names in one C call.
_NAME_LINES = LazyRe("(?:{0}\n)*{0}".format(re.sub(r"\((?!\?)", "(?:", RECORD_NAME.pattern)))
_CHUNK = 4096  # names a match: its memory stays small (a repeat keeps state per name)


def _not_records(listed: list[str]) -> set[str]:
    """The names in `listed` that are not of the record-name grammar (most often none)."""
    others: set[str] = set()
    for at in range(0, len(listed), _CHUNK):
        chunk = listed[at:at + _CHUNK]
        if _all_records(chunk):
            continue
        joined = "\n".join(chunk)
        # in one C call a chunk: no name holds a line break and every one is a record's name
        if joined.count("\n") != len(chunk) - 1 or _NAME_LINES.fullmatch(joined) is None:
            others.update(n for n in chunk if RECORD_NAME.fullmatch(n) is None)
    return others


_DIGITS, _HEX = b"0123456789", b"0123456789abcdef"
_SLUG = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"
_HEAD = [_DIGITS] * 8 + [b"T"] + [_DIGITS] * 6 + [b"Z", b"-", b"-"]  # `20260903T100000Z--`
_TAIL = [b"-", b"-"] + [_HEX] * 7 + [b"-", b"-"] + [_HEX] * 16 + [b".", b"m", b"d"]  # `--0123abc--….md`


def _all_records(chunk: list[str]) -> bool:
    """Whether every name of `chunk` is a record's, when they are all of one length and ASCII (one branch
    writes them so): the grammar then fixes what each column of the names may hold, the slug being what
    lies between the first 18 and the last 30 characters, and each column is checked in one C pass (a
    tenth of what the expression costs). False means: ask the expression."""
    lengths = set(map(len, chunk))
    width = lengths.pop() if len(lengths) == 1 else 0
    if not 49 <= width <= 112:  # a slug of 1 to 64 characters
        return False
    joined = "".join(chunk)
    if not joined.isascii():
        return False
    raw = joined.encode("ascii")
    columns = _HEAD + [_SLUG] * (width - 48) + _TAIL
    return not any(raw[p::width].translate(None, allowed) for p, allowed in enumerate(columns))


# `YYYYMMDDTHHMMSSZ` -> `YYYY-MM-DDTHH:MM:SSZ`: (where in the time, where in the name) of each digit
_TIME = b"0000-00-00T00:00:00Z"
_DIGIT_COLUMNS = ((0, 0), (1, 1), (2, 2), (3, 3), (5, 4), (6, 5), (8, 6), (9, 7), (11, 9), (12, 10), (14, 11),
                  (15, 12), (17, 13), (18, 14))


def times(listed: list[str]) -> list[str]:
    """The time each record name begins with, as `YYYY-MM-DDTHH:MM:SSZ`. Names of one length (one branch writes
    them so) are done a column at a time, fourteen C calls for the lot, a tenth of the slicing it replaces."""
    if len(set(map(len, listed))) != 1:
        return [f"{n[0:4]}-{n[4:6]}-{n[6:8]}T{n[9:11]}:{n[11:13]}:{n[13:15]}Z" for n in listed]
    width = len(listed[0])
    raw = "".join(listed).encode("ascii")  # a record's name is ASCII (RECORD_NAME)
    step = len(_TIME) + 1
    out = bytearray((_TIME + b"\n") * len(listed))
    for at, taken in _DIGIT_COLUMNS:
        out[at::step] = raw[taken::width]
    del out[-1]
    return out.decode("ascii").split("\n")


TASK_LINE = b'\ntask: "'


def task_and_start(data: bytes, known: dict[bytes, str]) -> tuple[str, int] | None:
    """(task, where the body starts) of a record as `emit_yaml` and `records.render` write it, or None.
    A match costs this for each of up to 100,000 records, so the task line is taken as written (a task id
    never needs escaping; `known` holds the ids checked already); anything else is for `records.split`."""
    end = data.find(b"\n---\n", 3)
    at = data.find(TASK_LINE, 0, end) if end > 0 else -1  # no closed front matter: for `records.split`
    close = data.find(b'"', at + len(TASK_LINE), end) if at >= 0 else -1
    if close < 0 or not data.startswith(b"---\n"):
        return None
    if data.find(TASK_LINE, close, end) >= 0:
        return None  # `task:` named twice: for `records.split`, which refuses it as every reader does
    raw = data[at + len(TASK_LINE):close]
    task = known.get(raw)
    if task is None and names.is_task_id(raw.decode("ascii", "replace")):
        task = known[raw] = raw.decode("ascii")
    return None if task is None else (task, end + 5)


def task_and_body(data: bytes, known: dict[bytes, str]) -> tuple[str, str] | None:
    """(task, body) of a record, or None when it is not one."""
    head = task_and_start(data, known)
    if head is not None:
        try:
            return head[0], data[head[1]:].decode("utf-8").removesuffix("\n")
        except UnicodeDecodeError:
            return None
    from majordomus.store import records

    try:
        meta, body = records.split(data)
    except ValueError:  # UnicodeDecodeError included
        return None
    return str(meta.get("task")), body
