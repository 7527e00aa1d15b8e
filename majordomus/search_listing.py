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
# A record whose bytes no longer hash to the digest in its name was changed after it was written: a match
# in it is named, never shown as what majordomus stored (design §9).
REPLACED = "no longer matches the digest in its name (its content was replaced after it was written): not shown"


class Lines:
    """The text listing on its way out. A match of the common case is its name, its tag (`  TASK  KIND
    DIRECTORY/`, escaped: the same for every record of a task in a directory) and its line's ASCII bytes, in
    three lists; `cut` makes them lines in bulk: the times of the names in a few C calls
    (`search_names.times`), the lines decoded, stripped and checked for escaping in one pass each. Any other
    line (a pin, an odd record) is escaped as it comes, in order.

    Each match of the common case also keeps its record's bytes and where it lies (`datas`, `wheres`): `cut`
    checks that they hash to the digest in the name (`records.intact`) for the whole block in one pass —
    a sha256 in a tight loop costs two thirds of one between reads — and a record that does not is named
    in `skipped` instead of listed. The search cuts before it names any other file, so the notes keep
    their order."""

    def __init__(self, skipped: list[str] | None = None) -> None:
        self.names: list[str] = []
        self.tags: list[str] = []
        self.lines: list[bytes] = []
        self.datas: list[bytes] = []
        self.wheres: list[str] = []
        self.skipped: list[str] = [] if skipped is None else skipped
        self.done: list[str] = []
        self.size = 0  # the lines in `done`

    def _check(self) -> None:
        """Only the matches whose bytes are the ones their name was made from stay; the others are named."""
        from hashlib import sha256

        names, datas = self.names, self.datas
        if [sha256(data).hexdigest()[:16] for data in datas] == [name[-19:-3] for name in names]:
            return  # the common case: every one intact
        keep = []
        for at, (name, data) in enumerate(zip(names, datas)):
            if sha256(data).hexdigest()[:16] == name[-19:-3]:
                keep.append(at)
            else:
                self.skipped.append(f"{self.wheres[at]}{name} {REPLACED}")
        # in place: the search holds these lists' `append`
        names[:] = [names[at] for at in keep]
        self.tags[:] = [self.tags[at] for at in keep]
        self.lines[:] = [self.lines[at] for at in keep]

    def cut(self) -> None:
        if not self.names:
            return
        if len(self.datas) != len(self.names):
            raise AssertionError("every match of the common case is checked against its name")
        self._check()
        self.datas.clear()
        self.wheres.clear()
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
