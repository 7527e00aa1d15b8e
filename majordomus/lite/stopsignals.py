"""The signals that ask a command to stop — SIGINT (Ctrl-C), SIGHUP (a closed terminal), SIGTERM (a runtime's
timeout, an MCP client ending its server) — wait while a write is under way, so that the write lands whole
or not at all (design §10); then they are acted on as they would have been (exit 130 for Ctrl-C, the
signal's own end for the others). SIGKILL cannot wait: the store completes what it leaves (`store.commit`).

A handler, not a signal mask: a mask holds back a signal in one thread only, and the kernel hands a signal
sent to the process to any thread that does not block it (the MCP server reads its stdin in another thread
while a tool writes); and a mask is inherited by the programs started meanwhile (git would not see a
Ctrl-C). Python runs a handler in the main thread between two steps of the program; it counts what is
under way in any thread, keeps what came meanwhile, and sends it again when the last write is done.

A signal whose disposition is not the default (ignored under `nohup` or in a background job, or a handler
of the program that calls the Python API) is left as it is. Standard library only, and only the C module
under `signal`: its enums are not free on the hot paths.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    import _thread
    import signal as _signal
    from types import FrameType
else:
    _signal = __import__("_signal")
    _thread = __import__("_thread")

STOPS = (_signal.SIGHUP, _signal.SIGINT, _signal.SIGTERM)

_under_way = [0]  # writes under way in this process, in any thread
_pending: list[int] = []  # what came meanwhile, in order
_count_lock = _thread.allocate_lock()  # never waited for by the handler: it runs between two steps of any code
_previous: dict[int, object] = {}  # the dispositions replaced: only the defaults are
_waited = [False]  # whether a stop signal came while a write was under way (`waited`)
_failed: list[BaseException] = []  # the error the write it waited for ended with (`failed`)
# Process groups of the children that lead their own (`lite.spawn` with a deadline): the signal that ends
# this process goes to them first, as it would have had they stayed in ours.
groups: set[int] = set()


def install() -> bool:
    """Our handler for each stop signal that still has its default disposition. Only the main thread can
    set a handler: elsewhere nothing changes, and False says so."""
    if _previous:
        return True
    try:
        for signum in STOPS:
            now = _signal.getsignal(signum)
            if now is _signal.SIG_DFL or now is _signal.default_int_handler:
                _signal.signal(signum, _handler)
                _previous[signum] = now
    except ValueError:  # not the main thread
        return False
    return True


def _handler(signum: int, frame: FrameType | None) -> None:
    if _under_way[0] > 0:
        _waited[0] = True
        if signum not in _pending:
            _pending.append(signum)
        if _under_way[0] > 0:
            return
        # The last write ended in another thread meanwhile, perhaps after it looked for what came: act on it
        # here. Never wait for the lock in a handler: whoever holds it now looks at what came, ours included.
        if not _count_lock.acquire(False):
            return
        try:
            due = _pending[:] if _under_way[0] == 0 else []
            del _pending[: len(due)]
        finally:
            _count_lock.release()
        for queued in due:
            _act(queued)
        return
    _act(signum)


def waited() -> bool:
    """Whether a stop signal of this process waited for a write to land (the message of exit 130 says so)."""
    return _waited[0]


def failed() -> BaseException | None:
    """The error that ended the write a stop signal waited for: what the command says, not that it landed."""
    return _failed[-1] if _failed else None


def _act(signum: int) -> None:
    if _previous.get(signum) is _signal.default_int_handler:
        raise KeyboardInterrupt
    problem = failed()
    if problem is not None and hasattr(problem, "message"):  # the signal's own end: say first what is left
        from majordomus.lite.textrules import render_error

        try:
            os.write(2, (render_error(problem) + "\n").encode("utf-8", "replace"))
        except OSError:
            pass
    for group in list(groups):
        try:
            os.killpg(group, signum)
        except OSError:
            pass  # ended meanwhile
    _signal.signal(signum, _signal.SIG_DFL)  # the handler runs in the main thread: it may
    os.kill(os.getpid(), signum)  # the signal's own end


class held:
    """While inside (in any thread, nested), the stop signals wait. Leaving the last one delivers what came."""

    __slots__ = ()

    def __enter__(self) -> None:
        if not _previous:
            install()
        with _count_lock:
            # A write begins: the changes of several steps around it (`from_first_write`) hold from now on.
            _under_way[0] += 1 + len(_unbegun)
            for region in _unbegun:
                region.begun = True
            _unbegun.clear()

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        _leave(exc)


def _leave(exc: BaseException | None) -> None:
    """The end of one region that held the stop signals back: the last one delivers what came."""
    with _count_lock:
        _under_way[0] -= 1
        due = _pending[:] if _under_way[0] == 0 else []
        if due:
            del _pending[:]
    if isinstance(exc, Exception) and (due or _pending) and not _failed:
        _failed.append(exc)  # the write a signal waited for did not land whole: that is what to say
    for signum in due:  # sent again: the handler acts on it now, in the main thread
        os.kill(os.getpid(), signum)


_unbegun: list[from_first_write] = []  # changes entered whose first write has not begun


class from_first_write:
    """A change of several steps (a record, then the task it releases; a document, then its event): the
    stop signals wait from its first write on (`held`, which every write and the state lock enter) until
    its last step is done. Before that — while it waits for the state lock another command holds — a stop
    signal ends it at once, as it ends any command: nothing of it was written yet."""

    __slots__ = ("begun",)

    def __init__(self) -> None:
        self.begun = False

    def __enter__(self) -> None:
        if not _previous:
            install()
        with _count_lock:
            _unbegun.append(self)

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        with _count_lock:
            if not self.begun:
                _unbegun.remove(self)
                return
        _leave(exc)
