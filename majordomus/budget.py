"""Fitting a text into a byte budget by dropping whole entries in a stated order, never by cutting one.

The continuity render (design §8) and the briefing (design §9) are both a sequence of blocks — a heading and
entries — that must fit `render_max_bytes`. Cutting an entry in the middle would leave a sentence that
reads as complete and is not, so whole entries go, in the order the caller states, and a closing line
says what went. Sizes are kept as running sums so that fitting stays linear in the number of entries.
"""

from __future__ import annotations

TYPE_CHECKING = False  # on the session-start path: typing is not imported at run time
if TYPE_CHECKING:
    from typing import Callable, Union

    Part = Union[str, "Block"]  # a str is fixed text: never dropped


class Entry:
    __slots__ = ("plural", "singular", "text", "whole")

    def __init__(self, text: str, singular: str, plural: str = "", whole: bool = False) -> None:
        self.text = text
        self.singular = singular  # what the closing line calls one dropped entry, e.g. "next action"
        self.plural = plural  # "" means singular + "s"; "the objective" style labels use `whole=True`
        self.whole = whole  # a label that is never counted ("the objective", "the latest handoff")

    def label(self, count: int) -> str:
        if self.whole:
            return self.singular
        if count == 1:
            return f"1 {self.singular}"
        return f"{count} {self.plural or self.singular + 's'}"


class Block:
    __slots__ = ("entries", "heading")

    def __init__(self, heading: str, entries: list[Entry] | None = None) -> None:
        self.heading = heading  # printed only while at least one entry of the block is kept
        self.entries = entries if entries is not None else []




class Fitted:
    __slots__ = ("cut", "dropped", "text")

    def __init__(self, text: str, dropped: list[str], cut: bool = False) -> None:
        self.text = text
        self.dropped = dropped  # labels in the order first dropped, e.g. ["2 next actions", "the objective"]
        self.cut = cut  # True when even the fixed text did not fit and had to be cut at a character boundary


def size(text: str) -> int:
    return len(text.encode("utf-8"))


def cut_to(text: str, budget: int) -> str:
    """The longest prefix of `text` within `budget` bytes that ends on a character boundary."""
    data = text.encode("utf-8")
    if len(data) <= budget:
        return text
    return data[: max(budget, 0)].decode("utf-8", errors="ignore")


class Tally:
    """Dropped entries counted by label as they go, so the closing line costs nothing to recompute."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.first: dict[str, Entry] = {}

    def add(self, entry: Entry, count: int = 1) -> None:
        self.counts[entry.singular] = self.counts.get(entry.singular, 0) + count
        self.first.setdefault(entry.singular, entry)

    def labels(self) -> list[str]:
        return [self.first[key].label(count) for key, count in self.counts.items()]


def fit(
    parts: list[Part],
    order: list[tuple[int, int]],
    budget: int,
    closing: Callable[[list[str]], str],
    already: tuple[Entry, int] | None = None,
) -> Fitted:
    """Drop entries (`(part index, entry index)` in `order`) until the text and its closing line fit.
    `already` counts entries the caller left out before fitting (they head the closing line)."""
    kept = [[True] * len(p.entries) if isinstance(p, Block) else [] for p in parts]
    block_bytes = [
        sum(size(e.text) for e in p.entries) if isinstance(p, Block) else size(p) for p in parts
    ]
    kept_count = [len(p.entries) if isinstance(p, Block) else 0 for p in parts]

    def part_size(i: int) -> int:
        part = parts[i]
        if isinstance(part, str):
            return block_bytes[i]
        return size(part.heading) + block_bytes[i] if kept_count[i] else 0

    total = sum(part_size(i) for i in range(len(parts)))
    dropped = Tally()
    if already is not None and already[1]:
        dropped.add(*already)
    step = 0
    while total + size(closing(dropped.labels())) > budget and step < len(order):
        i, j = order[step]
        step += 1
        part = parts[i]
        if not isinstance(part, Block) or not kept[i][j]:
            continue
        before = part_size(i)
        kept[i][j] = False
        kept_count[i] -= 1
        block_bytes[i] -= size(part.entries[j].text)
        total += part_size(i) - before
        dropped.add(part.entries[j])
    out: list[str] = []
    for i, part in enumerate(parts):
        if isinstance(part, str):
            out.append(part)
        elif kept_count[i]:
            out.append(part.heading)
            out.extend(e.text for e, keep in zip(part.entries, kept[i]) if keep)
    labels = dropped.labels()
    tail = closing(labels)
    body = "".join(out)
    if size(body) + size(tail) <= budget:
        return Fitted(text=body + tail, dropped=labels)
    # Even the fixed text is over budget (a tiny budget): cut it at a character boundary, say so, and keep
    # the closing line whole if it fits at all.
    labels.append("the end of the remaining text")
    tail = closing(labels)
    if size(tail) > budget:
        return Fitted(text=cut_to(tail, budget), dropped=labels, cut=True)
    return Fitted(text=cut_to(body, budget - size(tail)) + tail, dropped=labels, cut=True)
