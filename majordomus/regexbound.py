"""A `search -E` expression, compiled with every way of failing a usage error and matched under a deadline
(design §22): Python's `re` backtracks without bound (`(a+)+$` on forty `a`s and a `!`), and the text it
runs over can come from a remote, so neither side of a match is under the searcher's control.

The deadline is an interval timer (SIGALRM): its handler runs between two steps of the matching engine, so
it interrupts a match that never returns. Off the main thread (a program that embeds majordomus) signals
cannot be used and a match runs unbounded; the CLI and the MCP server match on the main thread.
"""

from __future__ import annotations

import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from majordomus.errors import UsageError

T = TypeVar("T")
RECORD_SECONDS = 2.0  # what one record's (or one pin's) whole text may cost a match (majordomus-search(1))


class TooSlow(UsageError):
    """The expression ran past RECORD_SECONDS on one text (exit 2): named by `at` where it is known."""

    def __init__(self, where: str = "") -> None:
        on = f" on {where}" if where else ""
        super().__init__(f"the pattern takes too long{on} (over {RECORD_SECONDS:g} s on one record); simplify it",
                         "avoid nested repetition such as `(a+)+`, or search for plain words without -E")
        self.where = where

    def at(self, where: str) -> TooSlow:
        return self if self.where else TooSlow(where)


def compile_pattern(text: str) -> re.Pattern[str]:
    """`text` compiled case-insensitive and multi-line; any failure to compile it is a usage error, and so
    is what Python only warns about (a POSIX class such as `[[:alpha:]]`, a `[` or `--` that a later Python
    will read as a set operation): said plainly, never as a raw FutureWarning."""
    import warnings

    shown = text if len(text) <= 80 else text[:60] + "…"
    posix = re.search(r"\[:(alnum|alpha|ascii|blank|cntrl|digit|graph|lower|print|punct|space|upper|word|xdigit):\]",
                      text)
    if posix is not None:
        raise UsageError(f"`{shown}` uses the POSIX class `{posix.group()}`, which Python's regular expressions do "
                         "not have", "write `[a-z]` (the search ignores case), `\\d` for a digit or `\\s` for white "
                         "space; or search for plain words without -E")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)
            return re.compile(text, re.IGNORECASE | re.MULTILINE)
    except FutureWarning as exc:
        raise UsageError(f"`{shown}` is ambiguous to Python's regular expressions ({str(exc).lower()})",
                         "escape the `[`, `-`, `&`, `~` or `|` that is meant literally (`\\[`), or search for plain "
                         "words without -E") from None
    except (re.error, OverflowError, RecursionError, ValueError, MemoryError) as exc:
        what = "it is nested too deeply" if isinstance(exc, RecursionError) else str(exc) or type(exc).__name__
        raise UsageError(f"`{shown}` is not a valid regular expression: {what}",
                         "fix the expression, or search for plain words without -E") from None


class _Expired(Exception):
    pass


def _expired(signum: int, frame: Any) -> None:
    raise _Expired


def _bounded(call: Callable[[], T], seconds: float) -> T:
    """`call()`, or _Expired once it has run `seconds`. A timer already armed (the caller's own deadline)
    is kept: the earlier of the two fires, the caller's through its own handler, and what is left of it
    is armed again afterwards."""
    if threading.current_thread() is not threading.main_thread():
        return call()
    previous = signal.signal(signal.SIGALRM, _expired)
    began = time.monotonic()
    outer, interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    if 0 < outer <= seconds:
        signal.setitimer(signal.ITIMER_REAL, outer)
    try:
        try:
            return call()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Expired:
        if 0 < outer <= seconds and callable(previous):  # the caller's deadline, not ours
            previous(signal.SIGALRM, None)
        raise
    finally:
        if previous is not None:
            signal.signal(signal.SIGALRM, previous)
        if outer > 0:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - began), 0.001), interval)


class _Watch:
    """A search under way: a timer ticks every TICK_SECONDS, and a match that began more than its budget ago
    is interrupted at the next tick. One handler and one timer for the whole search: arming a timer for
    each record would cost more than matching most records."""

    __slots__ = ("outer_at", "previous", "since")

    def __init__(self, previous: Any, outer_at: float | None) -> None:
        self.previous = previous
        self.outer_at = outer_at  # when the caller's own timer was due, or None
        self.since: float | None = None  # when the match under way began


TICK_SECONDS = 0.1
_watch: _Watch | None = None


def _tick(signum: int, frame: Any) -> None:
    watch = _watch
    if watch is None:
        return
    now = time.monotonic()
    if watch.outer_at is not None and now >= watch.outer_at:
        watch.outer_at = None
        if callable(watch.previous):  # the caller's deadline came first: its handler decides
            watch.previous(signum, frame)
    if watch.since is not None and now - watch.since >= RECORD_SECONDS:
        watch.since = None
        raise _Expired


@contextmanager
def watching() -> Iterator[None]:
    """The deadline for every `search` and `sub` inside, with one timer (off the main thread, or nested:
    each call arms its own)."""
    global _watch
    if _watch is not None or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGALRM, _tick)
    began = time.monotonic()
    outer, interval = signal.setitimer(signal.ITIMER_REAL, TICK_SECONDS, TICK_SECONDS)
    _watch = _Watch(previous, began + outer if outer > 0 else None)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        _watch = None
        if previous is not None:
            signal.signal(signal.SIGALRM, previous)
        if outer > 0:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - began), 0.001), interval)


def _watched(call: Callable[[], T], seconds: float | None) -> T:
    watch = _watch
    if watch is None or seconds is not None:
        return _bounded(call, RECORD_SECONDS if seconds is None else seconds)
    watch.since = time.monotonic()
    try:
        return call()
    finally:
        watch.since = None


def search(pattern: re.Pattern[str], text: str, seconds: float | None = None) -> re.Match[str] | None:
    """`pattern.search(text)`, or TooSlow once it has run `seconds` (RECORD_SECONDS)."""
    try:
        return _watched(lambda: pattern.search(text), seconds)
    except _Expired:
        raise TooSlow() from None


def sub(pattern: re.Pattern[str], repl: Any, text: str, seconds: float | None = None) -> str | None:
    """`pattern.sub(repl, text)`, or None once it has run `seconds` (what colouring a shown line may cost)."""
    try:
        return _watched(lambda: pattern.sub(repl, text), seconds)
    except _Expired:
        return None
