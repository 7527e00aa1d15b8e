"""What `majordomus search` looks for (design §22): every WORD, case-insensitive, or one regular expression
under a deadline (`regexbound`), and which line of a text shows the match."""

from __future__ import annotations

from majordomus.errors import UsageError

TYPE_CHECKING = False  # on the path of every search: typing and the regex deadline are loaded only for -E
if TYPE_CHECKING:
    import re
    from typing import AnyStr


class Query:
    """All the WORDs (case-insensitive), or one regular expression (`-E`, case-insensitive too)."""

    def __init__(self, words: list[str] | tuple[str, ...], regex: bool = False) -> None:
        if not words:
            raise UsageError("give at least one WORD to search for", "e.g. `majordomus search parser streaming`")
        if any(not w for w in words):
            raise UsageError("an empty WORD matches everything", "give words with at least one character")
        self.pattern: re.Pattern[str] | None = None
        self.words = [w.lower() for w in words]
        # the bytes prefilter: sound for a record that is all ASCII, where bytes.lower() is str.lower()
        self.ascii_words = [w.encode("ascii") for w in self.words if w.isascii()]
        if regex:
            if len(words) != 1:
                raise UsageError(f"-E takes one regular expression, not {len(words)} words",
                                 "quote it as one argument: majordomus search -E 'parser|lexer'")
            from majordomus import regexbound

            self.pattern = regexbound.compile_pattern(words[0])  # any failure a usage error
            self.ascii_words = []

    def maybe(self, data: bytes) -> bool:
        """False only when the record cannot match: checked on its bytes, before any decoding."""
        if not self.ascii_words or not data.isascii():
            return True
        low = data.lower()  # (`find`, not `in`: `x in bytes` first tries x as an int, and raises for it)
        if len(self.ascii_words) == 1:  # the common case, without a generator per record
            return low.find(self.ascii_words[0]) >= 0
        return all(low.find(w) >= 0 for w in self.ascii_words)

    def line(self, text: str) -> str | None:
        """The matching line of `text`: the first that holds every word (else the first that holds the
        first word), or the line where the expression matches first; None when `text` does not match."""
        if self.pattern is not None:
            from majordomus import regexbound

            found = regexbound.search(self.pattern, text)  # under a deadline: TooSlow past it
            return None if found is None else _line_at(text, found.start())
        low = text.lower()
        if len(low) != len(text):  # lower-casing changed the length (a rare letter): go line by line
            return self._line_by_line(text)
        return _matching_line(low, text, self.words, "\n", 0)

    def ascii_line(self, low: bytes, text: bytes) -> bytes | None:
        """`line` of an ASCII text, on its bytes (`low` is `text.lower()`): there they lower-case as str does,
        so the line is the same, and nothing is decoded. For the words only, when they are all ASCII."""
        return _matching_line(low, text, self.ascii_words, b"\n", 0)

    def _line_by_line(self, text: str) -> str | None:
        lines = text.split("\n")
        low = [line.lower() for line in lines]
        if not all(any(w in line for line in low) for w in self.words):
            return None
        for line, lowered in zip(lines, low):
            if all(w in lowered for w in self.words):
                return line
        return next(line for line, lowered in zip(lines, low) if self.words[0] in lowered)


def _matching_line(low: AnyStr, text: AnyStr, words: list[AnyStr], nl: AnyStr, begin: int) -> AnyStr | None:
    """The first line of `text[begin:]` that holds every word, else the first that holds the first; None
    unless all are there. `low` is `text` lower-cased, of the same length."""
    first, rest = words[0], words[1:]
    pos = low.find(first, begin)
    if pos < 0 or (rest and not all(low.find(w, begin) >= 0 for w in rest)):
        return None
    fallback = pos
    while pos >= 0:
        start, end = max(begin, low.rfind(nl, 0, pos) + 1), low.find(nl, pos)
        end = len(low) if end < 0 else end
        if all(w in low[start:end] for w in rest):
            return text[start:end]
        pos = low.find(first, end)
    end = text.find(nl, fallback)
    return text[max(begin, text.rfind(nl, 0, fallback) + 1):end if end >= 0 else len(text)]


def _line_at(text: str, pos: int) -> str:
    end = text.find("\n", pos)
    return text[text.rfind("\n", 0, pos) + 1:end if end >= 0 else len(text)]


def where(exc: UsageError, place: str) -> UsageError:
    """A `TooSlow` named by the record or pin it ran past its deadline on; any other error as it is."""
    from majordomus import regexbound  # loaded already: only -E raises it

    return exc.at(place) if isinstance(exc, regexbound.TooSlow) else exc
