"""Writing data to stdout: JSON for machines, plain lines for people (no colour, ever)."""

from __future__ import annotations

import json
import sys

from majordomus.lite.textrules import escape as escape  # the one escaping function (design §2a "the terminal")

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, sort_keys=False) + "\n")


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
            out.write(("," if i else "") + "\n  " + json.dumps(d, ensure_ascii=False))
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
