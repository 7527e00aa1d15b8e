"""The one JSON loader: every JSON majordomus parses goes through it (design §2a, "JSON, wherever it is").

The standard library's decoder recurses once per level of nesting, so a document nested 100,000 deep
(a ledger line, a continuity.json, a journal line, a cache, a runtime settings file, a hook payload) would
end in `RecursionError`. Here the nesting is measured before the decoder sees the text, without
recursion and in time linear in its size; deeper than `MAX_DEPTH` is refused like any other bad JSON,
with `BadJSON`, a `json.JSONDecodeError` (so a `ValueError`): a reader skips and counts the line, or
refuses the file naming it. A leading byte-order mark is refused by name too: no writer of ours puts
one there, and a runtime that reads the file may not accept it either.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate

from majordomus.lite.lazyre import LazyRe

TYPE_CHECKING = False  # on every hook's path: typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any

MAX_DEPTH = 64
BOM = "\ufeff"

# A JSON string: a quote, then anything but a quote or a backslash, or a backslash and any character, up to
# the closing quote — or to the end, unterminated. A match from every quote succeeds, so the strings are
# cut out in one pass from left to right: a string that never ends (`"\"\"\"…`) must not make every later
# quote start a new search to the end (quadratic). The decoder stops at such a string, as this count does.
# Compiled on first use: only a document with more brackets than the bound is measured at all.
_STRING = LazyRe(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKET = LazyRe(r"[^\[\]{}]+")
_OPENERS = LazyRe(rf"[\[{{]{{{MAX_DEPTH + 1}}}")
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def _no_constant(name: str) -> Any:
    # `NaN`, `Infinity` and `-Infinity` are no JSON (RFC 8259): Python reads them, and writes them back out
    # as text no other reader takes.
    raise BadJSON(f"`{name}` is not a JSON number", "")


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise BadJSON(f"an object names `{key[:40]}` twice", "")
        found[key] = value
    return found


_DECODER = json.JSONDecoder(parse_constant=_no_constant)
_UNIQUE = json.JSONDecoder(parse_constant=_no_constant, object_pairs_hook=_unique)


class BadJSON(json.JSONDecodeError):
    """JSON that majordomus does not parse: too deep, or starting with a byte-order mark."""

    def __init__(self, msg: str, doc: str) -> None:
        super().__init__(msg, doc, 0)
        self.args = (msg,)

    def __str__(self) -> str:
        return self.msg


class TooDeep(BadJSON):
    """Arrays or objects nested deeper than `MAX_DEPTH`."""


class ByteOrderMark(BadJSON):
    """A document that starts with U+FEFF."""


def depth(text: str) -> int:
    """How deep the arrays and objects of `text` nest (brackets inside strings do not count): strings are
    cut out, the brackets kept, and the running sum of their +1/-1 steps taken by C-level iteration —
    linear in the size, never recursive."""
    return _depth_of_brackets(_NOT_BRACKET.sub("", _STRING.sub("", text)))


def _depth_of_brackets(brackets: str) -> int:
    if not brackets:
        return 0
    return max(0, max(accumulate(map(_STEP.__getitem__, map(ord, brackets)))))


def too_deep(text: str) -> bool:
    """Whether `text` nests deeper than `MAX_DEPTH`; two counts answer for the common case, where there
    are no more opening brackets in all (strings included) than the bound, and one search for the usual
    attack, more openers in a row than the bound outside strings (deeper wherever they start)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return False
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return _OPENERS.search(brackets) is not None or _depth_of_brackets(brackets) > MAX_DEPTH


def check(text: str) -> None:
    """Raise `BadJSON` when `text` starts with a byte-order mark or nests deeper than `MAX_DEPTH`."""
    if text[:1] == BOM:
        raise ByteOrderMark("it starts with a byte-order mark (U+FEFF); save it as UTF-8 without one", text)
    if too_deep(text):
        raise TooDeep(f"it nests arrays or objects deeper than {MAX_DEPTH} levels", text)


def loads(data: str | bytes | bytearray, *, unique: bool = False) -> Any:
    """`json.loads` with the nesting bound and the byte-order-mark rule; bytes must be UTF-8. `NaN` and
    `Infinity` are refused; with `unique`, so is an object that names a key twice (a stored record's values:
    which of the two counts would be the reader's choice).

    Raises `ValueError` for anything that is not such a JSON document (`UnicodeDecodeError` for bytes
    that are not UTF-8, `json.JSONDecodeError` — `BadJSON` included — for the rest)."""
    text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    check(text)
    return (_UNIQUE if unique else _DECODER).decode(text)


def loads_object_line(text: str) -> Any:
    """One JSON value on a line (the ledger's hot path): the decoder's scanner, skipping `json.loads`'
    whitespace regular expressions when the line starts with `{`. Raises `ValueError` like `loads`."""
    check(text)
    if text[:1] != "{":
        return _DECODER.decode(text)
    obj, end = _DECODER.raw_decode(text)
    if end != len(text) and text[end:].strip():
        raise json.JSONDecodeError("extra data", text, end)
    return obj


def describe(exc: ValueError) -> str:
    """What is wrong with a document, for a message that names the file: '… is not valid JSON (…)'."""
    if isinstance(exc, BadJSON):
        return f"is not JSON majordomus reads: {exc.msg}"
    if isinstance(exc, UnicodeDecodeError):
        return "is not UTF-8"
    if isinstance(exc, json.JSONDecodeError):
        return f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
    return f"is not valid JSON ({exc})"
