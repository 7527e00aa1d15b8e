"""UTC time at second precision, the only clock majordomus reads (freezegun freezes it in tests)."""

from __future__ import annotations

from datetime import datetime, timezone

ISO = "%Y-%m-%dT%H:%M:%SZ"
COMPACT = "%Y%m%dT%H%M%SZ"


def now() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0)


def iso(moment: datetime) -> str:
    return moment.strftime(ISO)


def compact(moment: datetime) -> str:
    return moment.strftime(COMPACT)


def parse(text: str) -> datetime:
    return datetime.strptime(text, ISO).replace(tzinfo=timezone.utc)
