"""Writing data to stdout: JSON for machines, plain lines for people (no colour, ever)."""

from __future__ import annotations

import json
import sys

from majordomus.lite.lazyre import LazyRe
from majordomus.lite.textrules import BIDI, DEL_C1, INVISIBLE, LINE_BREAKS
from majordomus.lite.textrules import escape as escape  # the one escaping function (design §2a "the terminal")

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


# What `json.dumps(ensure_ascii=False)` leaves raw although the one text rule escapes it: DEL and C1 (NEL among
# them), the line breaks past C0 (U+2028, U+2029), bidi and invisible characters, and lone surrogates (which
# UTF-8 cannot carry). JSON escapes C0 itself. These can only sit inside a JSON string, where `\uNNNN` is
# the same value: a reader decodes what was stored, and no reader sees a line break or a control raw.
_JSON_RAW = LazyRe(f"[{DEL_C1}{''.join(c for c in LINE_BREAKS if c > chr(0x1f))}{BIDI}{INVISIBLE}\ud800-\udfff]")


def _json_escaped(match: Any) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def dumps(data: Any, *, indent: int | None = None, separators: tuple[str, str] | None = None,
          sort_keys: bool = False) -> str:
    """The one JSON encoder of every output (`--json`, MCP tool results, hook answers): readable UTF-8,
    with every character of the text rule escaped as `\\uNNNN` (design §2a "the terminal")."""
    return json_text(json.dumps(data, ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys))


def json_text(text: str) -> str:
    """JSON text (a stored ledger line, say) with the characters `dumps` escapes escaped: the same value,
    and the same text when it holds none of them."""
    if text.isascii() and DEL_C1[0] not in text:
        return text  # DEL is the one ASCII character of the rule (JSON escapes C0 itself): two C-speed passes
    return text if _JSON_RAW.search(text) is None else str(_JSON_RAW.sub(_json_escaped, text))


def emit_json(data: Any) -> None:
    sys.stdout.write(dumps(data, indent=2) + "\n")


def emit(text: str = "") -> None:
    sys.stdout.write(text + ("" if text.endswith("\n") else "\n"))


def note(text: str) -> None:
    """Human-facing remarks that are not data go to stderr, so stdout stays pipeable."""
    sys.stderr.write(text + "\n")


def width(text: str) -> int:
    """Display width in terminal columns: East Asian wide and full-width characters take two."""
    import unicodedata

    if text.isascii():
        return len(text)
    return sum(0 if unicodedata.combining(c) else (2 if unicodedata.east_asian_width(c) in "WF" else 1)
               for c in text)


def table(rows: list[list[str]]) -> str:
    """Columns lined up by display width; the last column is not padded."""
    if not rows:
        return ""
    widths = [max(width(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for row in rows:
        cells = [cell + " " * (widths[i] - width(cell)) for i, cell in enumerate(row[:-1])] + [row[-1]]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


class BlockWriter:
    """Writes long listings in blocks, whatever PYTHONUNBUFFERED says: one write per line is a syscall
    per record on a store of 100,000."""

    def __init__(self, stream: Any, block: int = 256) -> None:
        self.stream = stream
        self.block = block
        self.pending: list[str] = []
        self.written = 0

    def write(self, text: str) -> None:
        self.pending.append(text)
        self.written += 1
        if len(self.pending) >= self.block:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.stream.write("".join(self.pending))
            self.pending = []
        self.stream.flush()


def print_records(found: Any, as_json: bool) -> None:
    """Stream record summaries (`checkpoint --list`, `handoff --list`), newest first, never all in memory."""
    out = BlockWriter(sys.stdout)
    if as_json:
        out.write("[")
        for i, d in enumerate(found):
            out.write(("," if i else "") + "\n  " + dumps(d))
        out.write("\n]\n" if out.written > 1 else "]\n")
        out.flush()
        return
    for d in found:
        if "error" in d:  # a file in the store that is not readable as a record: named, never shown
            out.write(escape(f"{d['path']}  ({d['error']})") + "\n")
            continue
        out.write(escape(f"{d.get('timestamp')}  {d.get('task')}  {d.get('branch') or '(detached)'}  "
                         f"{(d.get('head') or '0000000')[:7]}  {d.get('lines', '?')} lines  {d['path']}") + "\n")
    out.flush()
