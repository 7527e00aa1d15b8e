"""The one text rule (design §2a "fields", "the terminal", "identity-field smuggling"; §6 step 4).

Every character class that matters to majordomus is defined here once — controls, line breaks, bidirectional
and isolate controls, invisible (default-ignorable) characters and the look-alikes of the identity keys —
and everything that checks or prints text imports it: the body rules and the identity rule of the record
store, the field grammars of task start and of sync, and the one escaping function of the output. A second
copy of a set drifts from the first, and the drift is where text gets through (a test greps for copies).
Standard library only: the hot paths use it.
"""

from __future__ import annotations

from majordomus.lite.lazyre import LazyRe

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from typing import Any

# ---------------------------------------------------------------- the classes, as regular-expression ranges

# C0 controls but tab and newline; DEL and the C1 controls (U+0085, NEXT LINE, among them).
C0_BUT_TAB_LF = "\x00-\x08\x0b-\x1f"
DEL_C1 = "\x7f-\x9f"
# What YAML and most Markdown readers split a line on besides LF: CR, VT, FF, NEL, LS and PS.
LINE_BREAKS = "\n\r\x0b\x0c\x85\u2028\u2029"
# Bidirectional marks, embeddings, overrides and isolates: they reorder what a reader sees.
BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
# Default-ignorable characters a reader does not see (zero-width, joiners, word joiner, BOM, soft hyphen,
# variation selectors, fillers, tags). U+200E/U+200F are bidi marks and listed there.
INVISIBLE = ("\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200d\u2060-\u2065\u206a-\u206f\u3164"
             "\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\U00013430-\U0001343f\U0001bca0-\U0001bca3"
             "\U0001d173-\U0001d17a\U000e0000-\U000e0fff")  # every HIDDEN character among them
# What JSON leaves raw but YAML refuses or reads as a line break, in a record's front matter.
# A lone surrogate: a byte that is not UTF-8, as `surrogateescape` keeps it (an argument, a path).
SURROGATES = "\ud800-\udfff"
NOT_YAML_PRINTABLE = DEL_C1 + "\u2028\u2029\ufffe\uffff" + SURROGATES

# Of those, the ones a body's output escapes too: they join or shape nothing a note needs (emoji and scripts
# keep their joiners and variation selectors), and they can carry text a reader does not see (tag characters
# spell a hidden instruction for a model; a zero-width space or a BOM splits a word a search would find).
HIDDEN = ("\u00ad\u180e\u200b\u2060-\u2064\u206a-\u206f\ufeff\ufff9-\ufffb\U00013430-\U0001343f"
          "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
          "\U000e0000-\U000e00ff")  # the tag block; not the variation selectors after it
# A body may hold tab and newline; nothing else of C0, DEL, C1, and no other line break.
BODY_REFUSED = LazyRe(f"[{C0_BUT_TAB_LF}{DEL_C1}\u2028\u2029]")
# A one-line field (title, owner) holds none of the four classes, nor a lone surrogate: a byte that is not
# UTF-8, as Python decodes an argument or a path (`surrogateescape`), which no record (UTF-8) can store.
_FIELD_BAD = LazyRe(f"[\x00-\x1f{DEL_C1}{LINE_BREAKS}{BIDI}{INVISIBLE}{SURROGATES}]")
# What the output escapes: in a body, everything but tab and newline of the controls, line breaks and bidi,
# and the hidden characters; in a one-line field, tab and newline too, and every invisible character (no
# field may hold one).
# A lone surrogate is a byte that is not UTF-8 (`surrogateescape`): shown as that byte, `\xff`, never raw.
_BODY_ESCAPED = LazyRe(f"[{C0_BUT_TAB_LF}{DEL_C1}{LINE_BREAKS.replace(chr(10), '')}{BIDI}{HIDDEN}{SURROGATES}]")
_LINE_ESCAPED = LazyRe(f"[\x00-\x1f{DEL_C1}{LINE_BREAKS}{BIDI}{INVISIBLE}{SURROGATES}]")
# Removed before an identity key is compared: a reader does not see them.
_IGNORED_IN_KEYS = LazyRe(f"[{BIDI}{INVISIBLE}]")
_BIDI_ONLY = LazyRe(f"[{BIDI}]")
_SURROGATE = LazyRe(f"[{SURROGATES}]")

MAX_LINE_FIELD = 256  # characters of a task title or an owner (design §2a)


# ---------------------------------------------------------------- output: the one escaping function


def render_error(exc: Any) -> str:
    """An error (a `MajordomusError`) as stderr shows it, escaped: a message may quote what the user gave
    (an id, a path, a worktree whose name holds a line break). The message and the hint are one line each;
    what the error quotes (`detail`: git's words, a list of refused entries) follows the message, each item
    on a line of its own, indented and escaped as one line. Here, not in `errors`, below the text rule."""
    text = f"majordomus: {escape(str(exc.message))}"
    for line in getattr(exc, "detail", ()):
        text += f"\n  {escape(str(line))}"
    if exc.hint:
        text += f"\nhint: {escape(str(exc.hint))}"
    return text


def escape(text: str, *, body: bool = False) -> str:
    """Stored text made safe for a terminal and for an agent's context (design §2a "the terminal").

    A control, line break, bidi or (in a one-line field) invisible character becomes a visible `\\xNN` or
    `\\uNNNN`; a body (`body=True`) keeps its newlines and tabs, a one-line field keeps neither, so a field can
    never start a line of its own."""
    if _plain(text, body):
        return text  # no regular expression compiled for the text almost everything is
    pattern = _BODY_ESCAPED if body else _LINE_ESCAPED
    if pattern.search(text) is None:
        return text  # the common case, decided by one C-speed pass: listings print 100,000 lines
    return str(pattern.sub(_visible, text))


def shell_quoted(path: str) -> str:
    """`path` as a hint's shell command names it, copied and pasted as it is: `'…'`, or, when it holds a
    character `escape` would show (a line break, ESC, a byte that is not UTF-8), bash's `$'…'` with each of
    those bytes as `\\xNN`, so that the command names the file that is there, and prints nothing raw."""
    if escape(path) == path:
        return "'" + path.replace("'", "'\\''") + "'"
    out = []
    for char in path:
        if char in "\\'":
            out.append("\\" + char)
        elif _LINE_ESCAPED.match(char) is not None:
            out.append("".join(f"\\x{b:02x}" for b in char.encode("utf-8", "surrogateescape")))
        else:
            out.append(char)
    return "$'" + "".join(out) + "'"


def ascii_plain(raw: bytes, *, lines: bool = False) -> bool:
    """Whether `escape` leaves ASCII `raw` as it is, as a one-line field (`lines=True`: each of its lines, the
    line breaks between them apart). The ASCII of `_LINE_ESCAPED` is C0 and DEL, looked for one byte at a time
    (memchr): cheaper than any pass that looks at each byte, and a listing asks it of a block of lines."""
    global _ASCII_ESCAPED
    if _ASCII_ESCAPED is None:
        _ASCII_ESCAPED = tuple(bytes([c]) for c in range(0x80) if _LINE_ESCAPED.match(chr(c)) is not None)
    return all(raw.find(c) < 0 for c in _ASCII_ESCAPED if not (lines and c == b"\n"))


_ASCII_ESCAPED: tuple[bytes, ...] | None = None


def _plain(text: str, body: bool) -> bool:
    """Whether `text` surely holds nothing the output escapes, decided without a regular expression.

    Every character of the controls, line breaks and bidi controls is one `str.isprintable` refuses (a
    test checks each code point), so printable text (a body: but for its newlines and tabs) holds none of
    them; the invisible characters of a one-line field are not all unprintable, so there only ASCII is
    decided here. False means "look": the regular expression answers."""
    if body:
        return (text.replace("\n", "").replace("\t", "") if "\n" in text or "\t" in text else text).isprintable()
    return text.isascii() and text.isprintable()


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8, as `surrogateescape` keeps it: that byte
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


# ---------------------------------------------------------------- field grammars


def field_problem(value: str, *, limit: int = MAX_LINE_FIELD) -> str | None:
    """Why `value` is not a one-line field (a task title, an owner), or None: at most `limit` characters,
    not empty, with no control, line-break, bidi or invisible character. Never echoes the character raw."""
    if not value.strip():
        return "is empty"
    bad = _FIELD_BAD.search(value)
    if bad is not None:
        char = bad.group()
        return f"holds {describe(char)} at character {bad.start() + 1}"
    if len(value) > limit:
        return f"is {len(value)} characters long; the limit is {limit}"
    return None


def not_utf8(value: str) -> str | None:
    """Where `value` holds a byte that is not UTF-8 (a lone surrogate, as `surrogateescape` keeps one), or None."""
    bad = _SURROGATE.search(value)
    return None if bad is None else f"holds {describe(bad.group())} at character {bad.start() + 1}"


def checked(field: str, value: str, *, source: str | None = None, hint: str) -> str:
    """`value` when it is a one-line field, else a refusal (exit 10) naming the field and its source."""
    problem = field_problem(value)
    if problem is None:
        return value
    from majordomus.errors import Refused

    where = f" (from {source})" if source else ""
    raise Refused(f"the {field}{where} {problem}; nothing was written", hint)


def describe(char: str) -> str:
    """`a line break U+000A`, `a bidi control U+202E`, … — what a refusal names instead of the character."""
    code = f"U+{ord(char):04X}"
    if 0xDC80 <= ord(char) <= 0xDCFF:  # `surrogateescape`'s form of one byte that is not UTF-8
        return f"a byte that is not UTF-8 (\\x{ord(char) - 0xDC00:02x})"
    if 0xD800 <= ord(char) <= 0xDFFF:
        return f"a lone surrogate {code} (not UTF-8)"
    if char in "\n\r\x0b\x0c\x85\u2028\u2029":
        return f"a line break {code}"
    if _BIDI_ONLY.match(char) is not None:
        return f"a bidi control {code}"
    if _IGNORED_IN_KEYS.match(char) is not None:
        return f"an invisible character {code}"
    return f"a control character {code}"


def collapse(text: str) -> str:
    """One line, as a pin is kept: every control, line break, bidi and invisible character becomes a space,
    runs of white space one space, the edges trimmed (design §8; an objective is kept the same way)."""
    spaced = text if _plain(text, body=False) else _LINE_ESCAPED.sub(" ", text)
    return " ".join(spaced.split())


def unquoted_problem(value: str) -> str | None:
    """Why `value` (a worktree path, a branch name) is not stored as `c_quote` stores one, or None: it holds a
    control, line-break or bidi character raw."""
    bad = _QUOTE_NEEDED.search(value)
    return None if bad is None else f"holds {describe(bad.group())} at character {bad.start() + 1}"


def c_quote(text: str) -> str:
    """`text` in git's C-quoted form when it holds a control, line-break or bidi character (git allows them
    in a path, and some in a branch name), else unchanged: `"a\\nb"`, octal escapes of the UTF-8 bytes."""
    # Every character quoted is one `str.isprintable` refuses: printable text needs no regular expression.
    if not text.startswith('"') and (text.isprintable() or _QUOTE_NEEDED.search(text) is None):
        return text
    return c_quote_bytes(text.encode("utf-8", "surrogateescape"), _QUOTED_BYTES.search)


def c_quote_bytes(raw: bytes, special: Any = None) -> str:
    """git's C-quoted form of a path (as `core.quotePath` prints it): `"bad\\377\\376.txt"`. With
    `special`, only the characters it matches are escaped and the rest of the UTF-8 stays readable."""
    if special is None:
        return '"' + "".join(_C_ESCAPES.get(b) or (f"\\{b:03o}" if b < 0x20 or b >= 0x7F else chr(b))
                             for b in raw) + '"'
    out = ['"']
    for char in raw.decode("utf-8", "surrogateescape"):
        code = ord(char)
        if code < 0x80 and code in _C_ESCAPES:
            out.append(_C_ESCAPES[code])
        elif special(char) is not None:
            out.append("".join(f"\\{b:03o}" for b in char.encode("utf-8", "surrogateescape")))
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


_QUOTE_NEEDED = LazyRe(f"[\x00-\x1f{DEL_C1}{LINE_BREAKS}{BIDI}]")
_QUOTED_BYTES = LazyRe(f"[\x00-\x1f{DEL_C1}{LINE_BREAKS}{BIDI}\udc80-\udcff]")
_C_ESCAPES = {7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r", 34: '\\"',
              92: "\\\\"}


# ---------------------------------------------------------------- the identity rule


def identity_key(line: str, keys: frozenset[str]) -> tuple[str, str] | None:
    """(key, as written) when the line, read as a person or a YAML/Markdown reader would read it, sets one of
    `keys`: its first word — after indentation and any list, quote, heading or task-box marker (`-`, `*`, `+`,
    `•`, `1.`, `1)`, `>`, `#`, `- [ ]`, `- [x]`), Markdown emphasis or quotes — is a key followed by a colon.

    Compared after NFKC, case folding, removal of bidi and invisible characters and reduction to the
    confusables skeleton (UTS #39) of the letters, digits, separators and colons the keys use (small capitals
    and `0` included); `_`, `-` or spaces join a key's words alike (`Repo ID:` is `repo_id`). First, what a
    Markdown reader renders differently from what is written: HTML character references (`&#58;`, `&nbsp;`),
    HTML tags (`<b>owner</b>:`) and backslash escapes (`owner\\:`)."""
    rendered = as_rendered(line)
    if rendered.isascii():
        folded = rendered.lower()
    else:
        import unicodedata

        bare = _IGNORED_IN_KEYS.sub("", rendered).translate(_COLON_SKELETON)  # before NFKC: U+FE30 is `..`
        folded = unicodedata.normalize("NFKC", bare).casefold().translate(_SKELETON)
    rest = _MARKERS.sub("", folded, count=1)
    colon = rest.find(":")
    key = None
    if colon > 0:
        words = rest[:colon].strip(_EMPHASIS).translate(_DIGIT_SKELETON)  # after the markers: `1.` stays one
        key = "_".join(_JOINERS.split(words))  # a joiner at an edge leaves an empty word
    if key not in keys:
        key = None if rendered.isascii() else _shaped_like(rendered, keys)
    if key is None:
        return None
    # As written, for the hint: the original text up to its first colon or look-alike, without markers.
    original = line.lstrip()
    end = _ANY_COLON.search(original)
    return key, (original[: end.start()] if end is not None else original).strip()


def _shaped_like(rendered: str, keys: frozenset[str]) -> str | None:
    """The backstop of the skeleton table, which cannot list every look-alike of UTS #39: a first word of a
    key's length whose ASCII characters are the key's, every other one a non-ASCII character in its place
    (`ⲟwner`, `branϲh`), followed by a colon, a look-alike of one, or a non-ASCII mark that is not a letter
    (`ownerः`), is taken for that key. A line meant as prose has no reason to spell a key so."""
    import unicodedata

    plain = unicodedata.normalize("NFKC", _IGNORED_IN_KEYS.sub("", rendered)).casefold()
    word = _FIRST_WORD.match(_MARKERS.sub("", plain, count=1).lstrip(_EMPHASIS))
    if word is None:
        return None
    text, after = word.group(1), word.group(2)
    if not after and text and unicodedata.category(text[-1]) in ("Mc", "Mn"):
        text, after = text[:-1], text[-1]  # a (spacing) mark in the colon's place
    if not after:
        return None
    text = "_".join(_JOINERS.split(text.translate(_DIGIT_SKELETON)))
    for key in keys:
        if len(key) == len(text) and all(
                a == k or (ord(a) > 0x7F and k.isalpha() and unicodedata.category(a).startswith("L"))
                for a, k in zip(text, key)):
            return key
    return None


# A first word (letters, digits, joiners and any non-ASCII character but a space), then a colon or a
# look-alike of one.
_FIRST_WORD = LazyRe(r"((?:[\w\-]|[^\x00-\x7f\s])+?)[*_`~\"'\s]*([:\u02d0\u02f8\u0589\u05c3\u0703\u0704\u16ec\u1803\u1809"
                     r"\u205a\u2236\ua4fd\ua789\ufe30\uff1a\ufe13\ufe55]|$|(?=\s))")


def as_rendered(line: str) -> str:
    """`line` as a Markdown reader shows it, as far as the identity rule cares: HTML character references
    decoded, HTML tags dropped, backslash escapes of punctuation undone (CommonMark). Unchanged, at the
    cost of one scan, when it holds none of `&`, `<` or a backslash."""
    if "&" in line:
        import html

        line = html.unescape(line)
    if "<" in line:
        line = _HTML_TAG.sub("", _HTML_COMMENT.sub("", line))
    if "\\" in line:
        line = _BACKSLASH_ESCAPE.sub(r"\1", line)
    return line


def is_front_matter_fence(line: str) -> bool:
    """Whether a reader sees `line` as `---`, a YAML front-matter fence: after invisible and bidi
    characters are removed and NFKC (a zero-width space before it, a full-width hyphen-minus)."""
    if line.isascii():
        return line.strip() == "---"
    import unicodedata

    return unicodedata.normalize("NFKC", _IGNORED_IN_KEYS.sub("", line)).strip() == "---"


_HTML_TAG = LazyRe(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")
_HTML_COMMENT = LazyRe(r"<!--.*?(?:-->|$)")  # a reader sees nothing of it (an unclosed one hides the rest)
_BACKSLASH_ESCAPE = LazyRe(r"\\([!-/:-@\[-`{-~])")

# Any run of markers and white space at the start of a line, as many as there are (`> 1. - [x] **owner**:`):
# bullets, quotes, headings, task boxes, and list numbers as people write them (`1.`, `1)`, `a)`, `iv.`,
# `(2)`, `(b)`). Not `|`: a run record quotes each line of the output behind it, so that none is a key.
# Matched after case folding.
_MARKERS = LazyRe(r"^(?:[\s\-*+•‣◦⁃∙·▪●○■□>#]|\d{1,9}[.)]|(?:[a-z]|[ivxlcdm]{1,8})[.)](?=\s)"
                  r"|\((?:\d{1,9}|[a-z]|[ivxlcdm]{1,8})\)|\[[ x✓✔]?\])*")
_EMPHASIS = "*_`~\"' \t"
_JOINERS = LazyRe(r"[-_ \t]+")
# Colons a reader takes for `:` that NFKC leaves alone (U+FF1A, U+FE13 and U+FE55 it already folds).
_COLONS = "\u02d0\u02f8\u0589\u05c3\u0703\u0704\u16ec\u1803\u1809\u205a\u2236\ua4fd\ua789\ufe30"
_ANY_COLON = LazyRe(f"[:{_COLONS}\uff1a\ufe13\ufe55]")
_COLON_SKELETON = str.maketrans(dict.fromkeys(_COLONS, ":"))
# Digits that look like the keys' letters, in a key's words only (UTS #39: `0` is `O`, `1` is `l`).
_DIGIT_SKELETON = str.maketrans({"0": "o", "1": "l"})
# The confusables skeleton (UTS #39) of what the keys are made of, as it stands after NFKC and case folding:
# Cyrillic, Greek, Armenian and IPA letters that look like the Latin letters of the keys; dashes and
# low lines that look like `-` and `_`; colons that look like `:`. A look-alike outside the keys' letters
# cannot spell a key, so the table stops there.
_SKELETON = str.maketrans({
    **dict.fromkeys(_COLONS, ":"),
    **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2043\ufe58\ufe63\uff0d\u02d7\u06d4", "-"),
    **dict.fromkeys("\u2017\uff3f\u02cd", "_"),
    # a
    "\u0430": "a", "\u03b1": "a", "\u0251": "a", "\u0252": "a",
    # b, c, d, e
    "\u042c": "b", "\u044c": "b", "\u0185": "b", "\u0441": "c", "\u03f2": "c", "\u1d04": "c", "\u0501": "d",
    "\u0435": "e", "\u04bd": "e", "\u0454": "e", "\u03b5": "e",
    # f, g, h
    "\u0192": "f", "\u0261": "g", "\u0581": "g", "\u04bb": "h", "\u0570": "h", "\u13c2": "h",
    # i, k, l
    "\u0456": "i", "\u03b9": "i", "\u0131": "i", "\u0269": "i", "\u04cf": "l", "\u01c0": "l", "\u05c0": "l",
    "\u0399": "i", "\u03ba": "k", "\u043a": "k", "\u0138": "k",
    # m, n, o
    "\u043c": "m", "\u0578": "n", "\u057c": "n", "\u03b7": "n", "\u043f": "n",
    "\u043e": "o", "\u03bf": "o", "\u0585": "o", "\u03c3": "o", "\u0ce6": "o", "\u0d20": "o", "\u1d0f": "o",
    # p, r, s, t
    "\u0440": "p", "\u03c1": "p", "\u2374": "p", "\u0433": "r", "\u1d26": "r", "\u0280": "r",
    "\u0455": "s", "\ua731": "s", "\u01bd": "s", "\u0442": "t", "\u03c4": "t", "\u1d1b": "t",
    # v, w
    "\u03bd": "v", "\u0475": "v", "\u1d20": "v", "\u051d": "w", "\u0461": "w", "\u1d21": "w", "\u0270": "w",
    # small capitals (ᴀ ʙ ᴅ ᴇ ꜰ ɢ ʜ ɪ ᴊ ᴋ ʟ ᴍ ɴ ᴘ ᴜ ʏ ᴢ; ᴄ ᴏ ʀ ꜱ ᴛ ᴠ ᴡ are above): case folding leaves them
    "\u1d00": "a", "\u0299": "b", "\u1d05": "d", "\u1d07": "e", "\ua730": "f", "\u0262": "g", "\u029c": "h",
    "\u026a": "i", "\u1d0a": "j", "\u1d0b": "k", "\u029f": "l", "\u1d0d": "m", "\u0274": "n", "\u1d18": "p",
    "\u1d1c": "u", "\u028f": "y", "\u1d22": "z",
})
