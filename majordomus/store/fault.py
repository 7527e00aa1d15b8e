"""A test-only fault-injection point, as SQLite has: `MAJORDOMUS_FAULT=STEP` kills the process at STEP.

The steps are the durable moments of a write: `after-temp-write`, `after-fsync`, `after-link`,
`after-ledger-write`; and `internal-error`, which `majordomus.main` raises as an unexpected exception
before running any command. The crash tests set the variable, run the real console script and show, for each
step, what survives. Unset (always, outside those tests) it costs one dictionary look-up.
"""

from __future__ import annotations

import os

_STEP = os.environ.get("MAJORDOMUS_FAULT")


def point(step: str) -> None:
    if _STEP is not None and step == _STEP:
        import signal

        os.kill(os.getpid(), signal.SIGKILL)
