"""Writing data to stdout: JSON for machines, plain lines for people (no colour, ever)."""

from __future__ import annotations

import json
import sys
from typing import Any


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, sort_keys=False) + "\n")


def emit(text: str = "") -> None:
    sys.stdout.write(text + ("" if text.endswith("\n") else "\n"))


def note(text: str) -> None:
    """Human-facing remarks that are not data go to stderr, so stdout stays pipeable."""
    sys.stderr.write(text + "\n")


def table(rows: list[list[str]]) -> str:
    if not rows:
        return ""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])] + [row[-1]]
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
