"""The text listing of a search (design §22): `AT  TASK  KIND  PATH  LINE`, escaped, made a block at a time.

A search that finds every one of 100,000 records prints 100,000 lines: the common case of each is made here
with a block of others, in a few C calls each, instead of one format and one escape check per line.
"""

from __future__ import annotations

from majordomus import search_names

Row = tuple[str, str, str, str, str]  # task, kind, at, path, line


def text_line(row: Row) -> str:
    task, kind, at, path, line = row
    return f"{at}  {task}  {kind:<10}  {path}  {line.strip()}"


BLOCK = 512  # lines a chunk of the text listing holds at most: one write each, and it is on its way


class Lines:
    """The text listing on its way out. A match of the common case is its name, its tag (`  TASK  KIND
    DIRECTORY/`, escaped: the same for every record of a task in a directory) and its line's ASCII bytes, in
    three lists; `cut` makes them lines in bulk: the times of the names in a few C calls
    (`search_names.times`), the lines decoded, stripped and checked for escaping in one pass each. Any other
    line (a pin, an odd record) is escaped as it comes, in order."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.tags: list[str] = []
        self.lines: list[bytes] = []
        self.done: list[str] = []
        self.size = 0  # the lines in `done`

    def cut(self) -> None:
        if not self.names:
            return
        from itertools import chain, repeat

        from majordomus.lite.textrules import ascii_plain, escape

        joined = b"\n".join(self.lines)
        texts = list(map(str.strip, joined.decode("ascii").split("\n")))
        if not ascii_plain(joined, lines=True):  # a line to escape: each line escaped as it is
            texts = [escape(text) for text in texts]
        self.done.append("".join(chain.from_iterable(zip(
            search_names.times(self.names), self.tags, self.names, repeat("  "), texts, repeat("\n")))))
        self.size += len(self.names)
        self.names.clear()
        self.tags.clear()
        self.lines.clear()

    def add(self, line: str) -> None:
        from majordomus.lite.textrules import escape

        self.cut()
        self.done.append(escape(line) + "\n")
        self.size += 1

    def take(self) -> str:
        self.cut()
        text = "".join(self.done)
        self.done.clear()
        self.size = 0
        return text
