"""The budget of a text: what it may take, in the units its reader counts, and how it is made to fit.

The continuity render (design §8), the briefing (design §9) and the session-start context (design §12) are a
sequence of blocks — a heading and entries — that must fit `render_max_bytes` and, in an agent's context,
the runtime's own limit: Claude Code counts UTF-16 code units, Codex estimates ceil(UTF-8 bytes / 4)
tokens. Cutting an entry in the middle would leave a sentence that reads as complete and is not, so whole
entries go, in the order the caller states, and one closing line — written here, so that it always names
the limit that was applied — says what went. Sizes are kept as running sums so that fitting stays linear
in the number of entries.
"""

from __future__ import annotations

TYPE_CHECKING = False  # on the session-start path: typing is not imported at run time
if TYPE_CHECKING:
    from typing import Callable, Union

    Part = Union[str, "Block"]  # a str is fixed text: never dropped


def size(text: str) -> int:
    """UTF-8 bytes."""
    return len(text.encode("utf-8"))


def utf16_units(text: str) -> int:
    """Length as JavaScript counts it (Claude Code's `.length`): two units for a character past U+FFFF."""
    return len(text) if text.isascii() else len(text.encode("utf-16-le", "surrogatepass")) // 2


def codex_tokens(text: str) -> int:
    """Codex's estimate: ceil(UTF-8 bytes / 4). Rounded up: 4·T + 1 bytes are T + 1 tokens."""
    return (size(text) + 3) // 4


class Room:
    """What a text may take: at most `max_bytes` UTF-8 bytes and, where the reader counts them (Claude
    Code), at most `max_units` UTF-16 code units. Each is measured in its own unit, so a CJK text gets
    as many of Claude Code's units as a Latin one (a CJK character is 3 bytes but 1 unit)."""

    __slots__ = ("max_bytes", "max_units")

    def __init__(self, max_bytes: int, max_units: int | None = None) -> None:
        self.max_bytes = max_bytes
        # A UTF-16 unit never takes fewer than one UTF-8 byte: a unit limit at or over the byte limit never binds.
        self.max_units = max_units if max_units is not None and max_units < max_bytes else None

    @classmethod
    def codex(cls, max_bytes: int, max_tokens: int) -> Room:
        """Codex spills more than `max_tokens` of ceil(bytes / 4): at most 4·T bytes pass whole."""
        return cls(min(max_bytes, 4 * max_tokens))

    def measure(self, text: str) -> tuple[int, int]:
        return size(text), (utf16_units(text) if self.max_units is not None else 0)

    def holds(self, nbytes: int, units: int) -> bool:
        return nbytes <= self.max_bytes and (self.max_units is None or units <= self.max_units)

    def fits(self, text: str) -> bool:
        return self.holds(*self.measure(text))

    def after(self, used: str) -> Room:
        """The room left once `used` is placed before the rest (never below zero)."""
        nbytes, units = self.measure(used)
        left_units = None if self.max_units is None else max(self.max_units - units, 0)
        return Room(max(self.max_bytes - nbytes, 0), left_units)

    def describe(self) -> str:
        """The limit as the closing line names it: the byte budget, and the runtime's units where they bind."""
        if self.max_units is None:
            return f"{self.max_bytes} bytes"
        return f"{self.max_units} UTF-16 units ({self.max_bytes} bytes)"

    def cut(self, text: str) -> str:
        """The longest prefix of `text` within the room that ends on a character boundary."""
        text = cut_to(text, self.max_bytes)
        if self.max_units is not None and utf16_units(text) > self.max_units:
            data = text.encode("utf-16-le", "surrogatepass")[: 2 * self.max_units]
            text = data.decode("utf-16-le", "ignore")  # half a surrogate pair at the end is dropped
        return text

    def cut_lines(self, text: str, note: str) -> str:
        """`text` within the room, cut at a line boundary, ending with `note` when anything went."""
        if self.fits(text):
            return text
        kept: list[str] = []
        used_b, used_u = self.measure(note)
        for line in text.split("\n"):
            b, u = self.measure(line + "\n")
            if not self.holds(used_b + b, used_u + u):
                break
            kept.append(line)
            used_b, used_u = used_b + b, used_u + u
        return "\n".join(kept + [note]) if self.fits(note) else ""


def closing_line(room: Room, dropped: list[str], complete: bool = True) -> str:
    """The briefing's last line: what was dropped to fit `room`, or that nothing was. With `complete`
    False (a record the task names is missing, design §9) it never says "complete"."""
    if dropped:
        return f"\n(dropped to fit {room.describe()}: {', '.join(dropped)})\n"
    if complete:
        return f"\n(complete: nothing was dropped to fit {room.describe()})\n"
    return f"\n(incomplete: a record is missing (named at the top); nothing else was dropped to fit {room.describe()})\n"


def render_closing(room: Room) -> Callable[[list[str]], str]:
    """The continuity render's closing line: only when something was dropped."""
    return lambda dropped: closing_line(room, dropped) if dropped else ""


class Entry:
    __slots__ = ("cut_note", "plural", "singular", "text", "whole")

    def __init__(self, text: str, singular: str, plural: str = "", whole: bool = False,
                 cut_note: str | None = None) -> None:
        self.text = text
        self.singular = singular  # what the closing line calls one dropped entry, e.g. "next action"
        self.plural = plural  # "" means singular + "s"; "the objective" style labels use `whole=True`
        self.whole = whole  # a label that is never counted ("the objective", "the latest handoff")
        # An entry too long for the room is shown cut at a line, ending with this note, rather than
        # dropped whole (the latest handoff): the closing line then names "the end of" it.
        self.cut_note = cut_note

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

    def remove(self, entry: Entry) -> None:
        self.counts[entry.singular] -= 1
        if not self.counts[entry.singular]:
            del self.counts[entry.singular], self.first[entry.singular]

    def labels(self) -> list[str]:
        return [self.first[key].label(count) for key, count in self.counts.items()]


def fit(
    parts: list[Part],
    order: list[tuple[int, int]],
    budget: int | Room,
    closing: Callable[[list[str]], str],
    already: tuple[Entry, int] | None = None,
) -> Fitted:
    """Drop entries (`(part index, entry index)` in `order`) until the text and its closing line fit the
    room (an int is that many bytes), each limit in its own unit. `already` counts entries the caller left
    out before fitting (they head the closing line)."""
    room = budget if isinstance(budget, Room) else Room(budget)
    measure = room.measure
    kept = [[True] * len(p.entries) if isinstance(p, Block) else [] for p in parts]
    entry_sizes = [[measure(e.text) for e in p.entries] if isinstance(p, Block) else [] for p in parts]
    block_b = [sum(b for b, _ in entry_sizes[i]) if isinstance(p, Block) else 0 for i, p in enumerate(parts)]
    block_u = [sum(u for _, u in entry_sizes[i]) if isinstance(p, Block) else 0 for i, p in enumerate(parts)]
    fixed = [measure(p) if isinstance(p, str) else measure(p.heading) for p in parts]
    kept_count = [len(p.entries) if isinstance(p, Block) else 0 for p in parts]

    def part_size(i: int) -> tuple[int, int]:
        if isinstance(parts[i], str):
            return fixed[i]
        if not kept_count[i]:
            return 0, 0
        return fixed[i][0] + block_b[i], fixed[i][1] + block_u[i]

    sizes = [part_size(i) for i in range(len(parts))]
    total_b, total_u = sum(b for b, _ in sizes), sum(u for _, u in sizes)
    dropped = Tally()
    if already is not None and already[1]:
        dropped.add(*already)
    gone: list[tuple[int, int]] = []  # the entries dropped, in the order they went

    def over() -> bool:
        tail_b, tail_u = measure(closing(dropped.labels()))
        return not room.holds(total_b + tail_b, total_u + tail_u)

    step = 0
    while step < len(order) and over():
        i, j = order[step]
        step += 1
        part = parts[i]
        if not isinstance(part, Block) or not kept[i][j]:
            continue
        before = part_size(i)
        kept[i][j] = False
        kept_count[i] -= 1
        block_b[i] -= entry_sizes[i][j][0]
        block_u[i] -= entry_sizes[i][j][1]
        after = part_size(i)
        total_b += after[0] - before[0]
        total_u += after[1] - before[1]
        dropped.add(part.entries[j])
        gone.append((i, j))
    texts = [[e.text for e in p.entries] if isinstance(p, Block) else [] for p in parts]
    # An entry that may be cut (the handoff, last in the order) is shown cut to the room that is left
    # rather than dropped whole: it still goes only after everything before it in the order went.
    for i, j in reversed(gone):
        entry = parts[i].entries[j]  # type: ignore[union-attr]
        if entry.cut_note is None:
            continue
        label = Entry("", f"the end of {entry.singular}", whole=True)
        dropped.remove(entry)
        dropped.add(label)
        heading = fixed[i] if not kept_count[i] else (0, 0)
        tail_b, tail_u = measure(closing(dropped.labels()))
        left = Room(max(room.max_bytes - total_b - heading[0] - tail_b, 0),
                    None if room.max_units is None else max(room.max_units - total_u - heading[1] - tail_u, 0))
        shortened = left.cut_lines(entry.text, entry.cut_note)
        if shortened.count("\n") <= entry.cut_note.count("\n") + 2:  # not a line of it would be left
            dropped.remove(label)
            dropped.add(entry)
            continue
        size = measure(shortened)
        before = part_size(i)
        texts[i][j], kept[i][j] = shortened, True
        kept_count[i] += 1
        block_b[i] += size[0]
        block_u[i] += size[1]
        after = part_size(i)
        total_b += after[0] - before[0]
        total_u += after[1] - before[1]
    out: list[str] = []
    for i, part in enumerate(parts):
        if isinstance(part, str):
            out.append(part)
        elif kept_count[i]:
            out.append(part.heading)
            out.extend(text for text, keep in zip(texts[i], kept[i]) if keep)
    labels = dropped.labels()
    tail = closing(labels)
    body = "".join(out)
    if room.fits(body + tail):
        return Fitted(text=body + tail, dropped=labels)
    # Even the fixed text is over budget (a tiny budget): cut it at a character boundary, say so, and keep
    # the closing line whole if it fits at all.
    labels.append("the end of the remaining text")
    tail = closing(labels)
    if not room.fits(tail):
        return Fitted(text=room.cut(tail), dropped=labels, cut=True)
    return Fitted(text=room.after(tail).cut(body) + tail, dropped=labels, cut=True)
