"""The one wait for an exclusive `flock`: every lock majordomus takes (the state lock, the ledger's, the sync
lock, the compaction journal's) is waited for a bounded time, then exit 75 with nothing written.

A healthy holder keeps a lock for milliseconds (the sync lock: for a sync's round trips). One that holds it
longer is stopped (SIGSTOP, a suspended job, a debugger) or stuck, and waiting for it without end would
hang the agent's command, its MCP server or a hook (design §2b: nothing waits without a bound). Standard
library only: the hot paths and the compaction hook lock through here.
"""

from __future__ import annotations

import fcntl
import time

from majordomus.errors import BUSY, EnvironmentProblem
from majordomus.lite import textrules

# The longest any one wait of this process may be, whatever the lock's own bound; None: the lock's bound.
# The agent-runtime hooks set it (`majordomus.main`): a hook never blocks the session, and a bookkeeping
# write it cannot make in time is a note, never a wait.
cap: float | None = None


def limit(seconds: float | None) -> None:
    """From now on, no wait for a lock of this process is longer than `seconds` (None: each lock's own)."""
    global cap
    cap = seconds


def take(fd: int, path: str, wait: float, what: str, *, held_by: str = "another command",
         longer: str = ", longer than a write takes") -> None:
    """The exclusive lock on `fd` (the file `path`, named `what` in messages), waited for at most `wait`
    seconds; then exit 75, busy: this command wrote nothing under it and did not wait on."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    if cap is not None:
        wait = min(wait, cap)
    ends, pause = time.monotonic() + wait, 0.002
    while True:
        if time.monotonic() >= ends:
            # An environment problem, as a failed write is: a change of several steps whose first landed
            # says what is stored (`store.commit.incomplete`), and the same command again completes it.
            raise EnvironmentProblem(
                f"{held_by} has held {what} ({path}) for {wait:g} s{longer}; this one did not wait on",
                f"a stopped one may hold it (`fuser {textrules.shell_quoted(path)}` names the holder); "
                "once it has ended, "
                "run the same command again", code=BUSY)
        time.sleep(min(pause, max(ends - time.monotonic(), 0)))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pause = min(pause * 2, 0.05)
