"""The second core of a large search (design §22): one forked worker searches every other block of names.

`grep -r` reads its files on one core; a search of 100,000 records does the same reads and, for each match,
checks its sha256 against its name, parses its task and makes its line. Where a second core is there, one
child process takes every other block of `BLOCK_NAMES` names of the same listing and sends back, block by
block, the very text the search would have made of them (the listing's lines and its `skipped` notes); the
search writes each block in its place, so the order, the lines and the notes are those of one process.

Bounded: the child is at most a pipe's capacity ahead (it blocks on the write until the search reads), one
block in its memory. Clean: it is reaped in every case (done, an error, the reader gone: the generator's
close kills it), it never writes to the search's output, and a block it does not deliver whole (it died, or
it sent something else) is searched again by the search itself, so a failure costs time, never a line.
Only the plain-word text listing of a large listing goes this way, and only from a process with one thread
(a fork copies no other thread, nor what locks it holds) on a machine with two cores for it: `-E` and its
deadline timer, `--json` and the MCP tool (which stops at its first matches) stay in one process.
"""

from __future__ import annotations

import itertools
import marshal
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    Pair = tuple[str, int]

MIN_NAMES = 4096  # below this, the fork costs about what it saves
BLOCK_NAMES = 1024  # names a block: a child's block is one message, of about a pipe's default capacity
SHARE = 0.5  # of the blocks, the child's
PIPE_BYTES = 1 << 20  # asked for (Linux), so that the child runs a few blocks ahead; the default is fine too
_HEADER = 4  # bytes of a message's length, little-endian


def wanted(names: int) -> bool:
    """Whether a search of `names` names takes a worker: enough names, a fork, one thread, two cores."""
    if names < MIN_NAMES or not hasattr(os, "fork"):
        return False
    import threading

    if threading.active_count() != 1:
        return False
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(os.cpu_count() or 1)
    return len(cores) >= 2


def _pin_places(names: list[str], pin_keys: list[str]) -> set[int]:
    """Where in `names` (newest first) each pin goes: before the first name below its key."""
    places = set()
    for key in pin_keys:
        low, high = 0, len(names)
        while low < high:
            mid = (low + high) // 2
            if names[mid] < key:
                high = mid
            else:
                low = mid + 1
        places.add(low)
    return places


class Worker:
    """The child that searches a share of the blocks. `search(pairs, skipped)` is the search's own loop over
    the given (name, directory index) pairs, with an end-of-block mark, `(name, -1)`, after each block:
    there it yields "" (and never otherwise). `indexes` is each name's directory; None: all the first."""

    def __init__(self, names: list[str], indexes: list[int] | None,
                 search: Callable[[Iterable[Pair], list[str]], Iterator[str]]) -> None:
        self.names, self.indexes = names, indexes
        count = (len(names) + BLOCK_NAMES - 1) // BLOCK_NAMES
        # the child's share: SHARE of the blocks, spread evenly (the search also writes the whole listing)
        self.theirs = [int((k + 1) * SHARE) > int(k * SHARE) for k in range(count)]
        self.kept: set[int] = set()  # blocks of the child's that the search reads itself after all (`keep`)
        self.failed = False
        self.at = -1  # the block whose place the search has reached
        self.pid = 0
        try:
            read_end, write_end = os.pipe()
        except OSError:  # no descriptor left (`ulimit -n`): the search goes on alone
            self.failed, self.fd = True, -1
            return
        try:
            import fcntl

            fcntl.fcntl(write_end, getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
        except (ImportError, OSError):
            pass  # the default capacity: the child is a block ahead at most
        try:
            self.pid = os.fork()
        except OSError:
            os.close(read_end)
            os.close(write_end)
            self.failed, self.fd = True, -1
            return
        if self.pid == 0:  # the child: its blocks, then out, never through the parent's exit path
            code = 1
            try:
                os.close(read_end)
                mine = (pair for k in range(count) if self.theirs[k] for pair in (*self.block(k), ("", -1)))
                _serve(write_end, search, mine)
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
        self.fd = read_end

    def block(self, k: int) -> Iterable[Pair]:
        at, end = k * BLOCK_NAMES, (k + 1) * BLOCK_NAMES
        indexes = itertools.repeat(0) if self.indexes is None else self.indexes[at:end]
        return zip(self.names[at:end], indexes)

    def keep(self, pin_keys: list[str]) -> None:
        """A pin goes between two names: a block of the child's with a pin's place inside it is read by the
        search after all, which places its pins (the child's message for it is dropped). Pins are few."""
        for place in _pin_places(self.names, pin_keys):
            k, inside = divmod(place, BLOCK_NAMES)
            if inside and k < len(self.theirs) and self.theirs[k]:
                self.kept.add(k)

    def pairs(self) -> Iterator[Pair]:
        """The names the search reads itself, with the place of each of the child's blocks: `(its first
        name, -1)`, where the search yields "" and takes the block (`receive`). After a failure, the rest."""
        for k in range(len(self.theirs)):
            if not self.theirs[k] or self.failed:
                yield from self.block(k)
                continue
            self.at = k
            yield self.names[k * BLOCK_NAMES], -1
            if self.lost() or k in self.kept:  # that block did not come, or has a pin inside: read here
                yield from self.block(k)

    def lost(self) -> bool:
        """Whether the child failed (then the search reads the rest itself)."""
        return self.failed

    def receive(self, skipped: list[str]) -> Iterator[str]:
        """The child's next block: its text (when any), its notes added to `skipped`."""
        if self.failed:
            return
        message = self._message()
        if message is None:
            self.failed = True
            self.close()
            return
        text, notes = message
        if self.at in self.kept:
            return  # read again by the search, with its pins
        skipped.extend(notes)
        if text:
            yield text

    def _message(self) -> tuple[str, list[str]] | None:
        head = self._exactly(_HEADER)
        body = self._exactly(int.from_bytes(head, "little")) if head is not None else None
        if body is None:
            return None
        try:
            text, notes = marshal.loads(body)
        except (ValueError, EOFError, TypeError):
            return None
        if not isinstance(text, str) or not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
            return None
        return text, notes

    def _exactly(self, size: int) -> bytes | None:
        chunks, got = [], 0
        while got < size:
            try:
                chunk = os.read(self.fd, min(size - got, 1 << 20))
            except InterruptedError:  # pragma: no cover - Python retries it (PEP 475)
                continue
            except OSError:
                return None
            if not chunk:
                return None
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        """The child stopped and reaped (idempotent): whatever it was doing, it is not left behind."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.pid > 0:
            import signal

            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:  # pragma: no cover - not reaped yet, so it is still there
                pass
            while True:
                try:
                    os.waitpid(self.pid, 0)
                    break
                except InterruptedError:  # pragma: no cover - Python retries it (PEP 475)
                    continue
                except ChildProcessError:  # pragma: no cover - reaped by someone else
                    break
            self.pid = 0


def _serve(fd: int, search: Callable[[Iterable[Pair], list[str]], Iterator[str]], pairs: Iterable[Pair]) -> None:
    """In the child: each block's text and notes, one message a block, in order."""
    skipped: list[str] = []
    texts: list[str] = []
    for chunk in search(pairs, skipped):
        if chunk:
            texts.append(chunk)
            continue
        body = marshal.dumps(("".join(texts), skipped))
        data = len(body).to_bytes(_HEADER, "little") + body
        texts.clear()
        skipped.clear()
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
