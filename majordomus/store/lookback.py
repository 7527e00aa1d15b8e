"""How far back a search of the ledger for an event may go (design §10): the ledger is in the order of its
appends, not of its times."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CLOCK_SLACK = 3600  # seconds: how far back a clock may have been stepped between a record and its event


def search_cutoff(since: str) -> str:
    """Where a backwards search for the events of something stamped `since` may end: `CLOCK_SLACK` earlier
    (ISO-8601 UTC, as the ledger writes its times; `since` itself when it is not one)."""
    import time

    from majordomus import clock

    stamp = since[:19] + "Z"
    if not clock.is_iso(stamp):
        return since
    return time.strftime(clock.ISO, time.gmtime(clock.seconds_of(stamp) - CLOCK_SLACK))


def ends_search(event: dict[str, Any], cutoff: str) -> bool:
    """Whether a backwards search may stop at `event`: the ledger is in the order of its appends, not of its
    times (a run's event carries its command's start; a clock steps back), so never at a run's event, and
    at another only when it is older than the cutoff (`search_cutoff`)."""
    return event.get("event") != "task.run" and str(event.get("at", "")) < cutoff
