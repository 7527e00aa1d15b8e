"""The one reader of a committed profile, `.ai/profiles/NAME.md` (design §2a, §12).

A profile is put at the top of every agent conversation, and anyone who can push wrote it: it is read like
every untrusted file (no link, no FIFO, at most `PROFILE_MAX_BYTES`), and its text must be what a person
writes in an editor — UTF-8, with no control character but tab and newline (CRLF is read as LF, a leading
byte-order mark dropped). Anything else (a terminal escape, a NUL, bytes that are not UTF-8, U+2028) is
never injected, not even with replacement characters: session-start says why in one line, and doctor fails
`profile.unsafe`. Standard library and `lite` only: session-start reads it.
"""

from __future__ import annotations

from majordomus.lite import safeio, textrules
from majordomus.lite.limits import PROFILE_MAX_BYTES

_HINT = ("write the profile as plain UTF-8 text (tab and newline are fine; no terminal escapes, NUL bytes or "
         "other control characters) and commit it")


class BadProfile(safeio.UnsafeFile):
    """A profile whose bytes are not text a person writes: not UTF-8, or holding a control character."""


def read(path: str) -> str:
    """The text of the profile at `path`, as session-start injects it (edges stripped). FileNotFoundError
    passes through; a file that breaks a rule raises `UnsafeFile` (`BadProfile` for its text), naming it."""
    data = safeio.read(path, PROFILE_MAX_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise BadProfile(path, f"is not valid UTF-8 (line {line}, byte {exc.start})", _HINT) from None
    text = text.replace("\r\n", "\n").removeprefix("\ufeff")
    bad = textrules.BODY_REFUSED.search(text)
    if bad is not None:
        line = text.count("\n", 0, bad.start()) + 1
        raise BadProfile(path, f"holds {textrules.describe(bad.group())} on line {line}", _HINT)
    return text.strip()
