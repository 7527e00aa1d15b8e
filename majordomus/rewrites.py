"""History across rewrites (design §21): the old → new commit ids of each amend and rebase, and how a
recorded head relates to the work tree's HEAD through them.

git's post-rewrite hook (installed by `hooks install --runtime git`) runs `majordomus hook rewrite amend|rebase`
with `<old> <new> [extra]` lines on stdin; `record` keeps them, bounded, as ONE `git.rewrite` ledger event.
`load` reads those events once per command, from the ledger's tail (capped), and `relate` answers
from memory and a few git questions — never a commit count across unrelated history. Standard library
only: the post-rewrite hook and session-start run this.
"""

from __future__ import annotations

import os

from majordomus.git import status
from majordomus.git.oid import Oid
from majordomus.store import ledger

TYPE_CHECKING = False  # on the hook's path: typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any, BinaryIO

    from majordomus.workspace import Workspace

EVENT = "git.rewrite"
HOWS = ("amend", "rebase")  # what git passes post-rewrite as $1
STDIN_MAX_BYTES = 1 << 20  # what the hook reads of git's mapping…
STDIN_MAX_LINES = 10_000  # …and at most this many lines of it
MAP_MAX = 3_000  # pairs one event keeps (the newest of a rebase): 3,000 sha256 pairs stay far below a ledger line
LOOKBACK_BYTES = 4 << 20  # the ledger's tail `load` reads for rewrite events (some 13,000 lines)…
LOOKBACK_EVENTS = 500  # …and at most this many of them
FOLLOW_MAX = 1_000  # steps of a chain of rewrites (a cycle in a hand-edited ledger ends here)


# ---------------------------------------------------------------- the hook: git's mapping → one event


def parse(data: bytes) -> tuple[list[tuple[str, str]], int]:
    """The (old, new) pairs of post-rewrite's stdin, in git's order, and how many lines were not one."""
    pairs: list[tuple[str, str]] = []
    skipped = 0
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        words = line.split()
        old = Oid.parse(words[0].decode("ascii", "replace")) if len(words) >= 2 else None
        new = Oid.parse(words[1].decode("ascii", "replace")) if len(words) >= 2 else None
        if old is None or new is None or len(old) != len(new):
            skipped += 1
        else:
            pairs.append((str(old), str(new)))
    return pairs, skipped


def read_stdin(stream: BinaryIO | None) -> tuple[bytes, int]:
    """Git's mapping, bounded: at most `STDIN_MAX_LINES` whole lines within `STDIN_MAX_BYTES`, and how many
    lines were left unread past the bound. Read with the hooks' stdin deadline (design §2a): a stream that
    never ends or never closes costs at most that, so the amend or rebase that runs the hook goes on."""
    from majordomus.lite import stdin

    data, over = stdin.read_head(stream, STDIN_MAX_BYTES)
    if len(data) > STDIN_MAX_BYTES:
        cut = data.rfind(b"\n", 0, STDIN_MAX_BYTES) + 1
        over += data.count(b"\n", cut)  # the lines cut off here; the last one's end came past them (`over`)
        data = data[:cut]
    lines = data.split(b"\n")
    if len(lines) > STDIN_MAX_LINES + 1:
        over += len(lines) - 1 - STDIN_MAX_LINES
        data = b"\n".join(lines[:STDIN_MAX_LINES]) + b"\n"
    return data, over


def fields(how: str, pairs: list[tuple[str, str]], skipped: int, unread: int,
           tip: str | None = None) -> dict[str, Any]:
    """The event's fields: `how`, the new tip as `head` (the last pair's, or `tip` when git's mapping was
    longer than what was read), the count, and the newest `MAP_MAX` pairs."""
    kept = pairs[-MAP_MAX:]
    # Every line git gave is a commit rewritten, the ones past the read's bound (counted, not read) too.
    out: dict[str, Any] = {"how": how, "head": tip or pairs[-1][1], "rewritten": len(pairs) + unread,
                           "map": dict(kept)}
    if len(pairs) > len(kept) or unread:
        out["omitted"] = len(pairs) - len(kept) + unread
    if skipped:
        out["skipped"] = skipped
    return out


def record(ws: Workspace, how: str, data: bytes, unread: int = 0) -> dict[str, Any] | None:
    """Append one `git.rewrite` event for one amend or rebase; None when git passed no mapping."""
    from majordomus import clock, tasks
    from majordomus.errors import NoActiveTask

    pairs, skipped = parse(data)
    if not pairs:
        return None
    try:
        task: str | None = tasks.active(ws).id
    except NoActiveTask:
        task = None
    tip = None
    if unread:  # the last pair read is not the last one git gave: the tip is HEAD's, as git left it
        from majordomus.git import status

        tip = status.head(ws.place)
    return ws.event(EVENT, task, clock.now_iso(), **fields(how, pairs, skipped, unread, tip))


# ---------------------------------------------------------------- reading: once per command


class Rewrites:
    """Every old → new id the ledger's recent rewrite events give, newest mapping first when two differ."""

    __slots__ = ("complete", "mapping")

    def __init__(self, mapping: dict[str, tuple[str, str]], complete: bool = True) -> None:
        self.mapping = mapping  # old -> (new, how)
        self.complete = complete  # False when the lookback cap cut the reading short

    def follow(self, head: str) -> tuple[str, list[str]]:
        """Where `head` went through the chain of rewrites, and how, oldest step first (empty: not rewritten)."""
        hows: list[str] = []
        seen = {head}
        for _ in range(FOLLOW_MAX):
            step = self.mapping.get(head)
            if step is None or step[0] in seen:
                break
            head = step[0]
            hows.append(step[1])
            seen.add(head)
        return head, hows


_CACHE: dict[str, tuple[tuple[int, int, int], Rewrites]] = {}


def load(ws: Workspace) -> Rewrites:
    """The rewrite events of the ledger's last `LOOKBACK_BYTES`, read once while the ledger is unchanged."""
    from majordomus.lite import safeio

    path = ws.paths.ledger
    try:
        fd = safeio.open_regular(path, ledger.MAX_BYTES)
    except (OSError, safeio.UnsafeFile):
        return Rewrites({})
    try:
        st = os.fstat(fd)
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        cached = _CACHE.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        begin = max(0, st.st_size - LOOKBACK_BYTES)
        window = os.pread(fd, st.st_size - begin, begin)
    finally:
        os.close(fd)
    found = Rewrites(*_mapping(window, whole=begin == 0))
    _CACHE[path] = (stamp, found)
    return found


def _mapping(window: bytes, whole: bool) -> tuple[dict[str, tuple[str, str]], bool]:
    """The mapping of the rewrite events in `window` (the ledger's tail), newest first; and whether it saw
    every one (`whole`: the window is the whole ledger, and the event cap was not reached). Only the lines
    that name the event are parsed: finding them is one `rfind` each, whatever the ledger's size."""
    mapping: dict[str, tuple[str, str]] = {}
    events = 0
    at = len(window)
    while True:
        at = window.rfind(b'"' + EVENT.encode() + b'"', 0, at)
        if at < 0:
            return mapping, whole
        if events >= LOOKBACK_EVENTS:
            return mapping, False
        first = window.rfind(b"\n", 0, at) + 1
        last = window.find(b"\n", at)
        line = window[first:last if last >= 0 else len(window)]
        at = first
        if first == 0 and not whole:
            return mapping, False  # the window's first line may be cut: not read
        event = ledger.parse_line(line)
        if event is None or event.get("event") != EVENT or not isinstance(event.get("map"), dict):
            continue
        events += 1
        how = str(event.get("how"))
        for old, new in event["map"].items():
            if isinstance(new, str) and old not in mapping:  # newest first: a later rewrite wins
                mapping[old] = (new, how)
        if at == 0:
            return mapping, whole


# ---------------------------------------------------------------- a recorded head and HEAD


class Relation:
    """How a recorded head `then` stands to HEAD `now`.

    `kind`: `same` (HEAD is it, or what it was rewritten as), `descends` (HEAD has `ahead` commits more),
    `behind` (HEAD was moved back: `behind` commits of the recorded line are not in it), `unreachable`
    (in this repository, not in HEAD's history), `foreign` (not in this repository), `no-head` (nothing
    committed here). `mapped` is what `then` was rewritten as (`hows`: amend or rebase, each step), or None.
    `same_tree` is whether an amend kept the files (None after a rebase: a new base changes every tree)."""

    __slots__ = ("ahead", "behind", "hows", "kind", "mapped", "now", "same_tree", "then")

    def __init__(self, then: str | None, now: str | None) -> None:
        self.then, self.now = then, now
        self.kind = "same"
        self.mapped: str | None = None
        self.hows: list[str] = []
        self.ahead = self.behind = 0
        self.same_tree: bool | None = None

    @property
    def base(self) -> str | None:
        """The id HEAD is compared with: what the recorded head became, or the recorded head."""
        return self.mapped or self.then


def relate(ws: Workspace, then: str | None, now: str | None, rewrites: Rewrites | None = None,
           count: bool = True) -> Relation:
    """Relate a recorded head to HEAD through the rewrites (`load`ed when not given, and only when the
    heads differ); counts (unless `count` is False: the caller lists the commits itself) only along one
    line of history."""
    rel = Relation(then, now)
    if then is not None and then == now:
        return rel  # the common case costs no read and no git
    if then and rewrites is None:
        rewrites = load(ws)
    if then and rewrites is not None:
        mapped, hows = rewrites.follow(then)
        if hows:
            rel.mapped, rel.hows = mapped, hows
    base = rel.base
    if now is None:
        rel.kind = "no-head"
    elif base is None:
        rel.kind = "descends"  # written on an unborn branch
        rel.ahead = _count_all(ws, now) if count else 0
    elif base == now:
        rel.kind = "same"
    elif not status.is_commit(ws.place, base):
        rel.kind = "foreign"
    elif status.is_ancestor(ws.place, base, now):
        rel.kind = "descends"
        rel.ahead = status.count_between(ws.place, base, now) if count else 0
    elif status.is_ancestor(ws.place, now, base):
        rel.kind, rel.behind = "behind", status.count_between(ws.place, now, base)
    else:
        rel.kind = "unreachable"
    if rel.mapped is not None and then is not None and set(rel.hows) == {"amend"}:
        rel.same_tree = status.same_tree(ws.place, then, rel.mapped)
    return rel


def _count_all(ws: Workspace, now: str) -> int:
    _shown, total = status.commits_since(ws.place, None, now, 0)
    return total


def by(hows: list[str]) -> str:
    """`by an amend`, `by a rebase`, `by an amend, then a rebase`: how git said a commit was rewritten."""
    words = {"amend": "an amend", "rebase": "a rebase"}
    steps: list[str] = []
    for how in hows:
        word = words.get(how, "a rewrite")
        if not steps or steps[-1] != word:
            steps.append(word)
    return "by " + ", then ".join(steps) if steps else "by a rewrite"


def short(oid: str | None) -> str:
    return oid[:7] if oid else "(none)"


def summary(event: dict[str, Any]) -> str:
    """One line for a `git.rewrite` event: `amend: 3f2a9c1 -> 8b1c0de`, `rebase: 12 commits, … -> 8b1c0de`."""
    how = str(event.get("how") or "rewrite")
    found = event.get("map")
    pairs: dict[str, Any] = found if isinstance(found, dict) else {}
    count = event.get("rewritten") if isinstance(event.get("rewritten"), int) else len(pairs)
    if count == 1 and len(pairs) == 1:
        old, new = next(iter(pairs.items()))
        return f"{how}: {short(str(old))} -> {short(str(new))}"
    head = event.get("head") if isinstance(event.get("head"), str) else None
    text = f"{how}: {count} commit{'s' if count != 1 else ''} rewritten, now at {short(head)}"
    if event.get("omitted"):
        text += f" ({event['omitted']} pair(s) not kept)"
    return text
