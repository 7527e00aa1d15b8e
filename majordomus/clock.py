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


def compact_of(text: str) -> str:
    """`2026-09-03T19:45:00Z` -> `20260903T194500Z`, without a trip through strptime."""
    return text.replace("-", "").replace(":", "")


def parse(text: str) -> datetime:
    # By hand rather than strptime, whose first use imports _strptime, calendar and locale (~5 ms).
    if len(text) != 20 or text[4] + text[7] + text[10] + text[13] + text[16] + text[19] != "--T::Z":
        raise ValueError(f"not a UTC timestamp like 2026-09-03T19:45:00Z: {text!r}")
    return datetime(int(text[0:4]), int(text[5:7]), int(text[8:10]), int(text[11:13]), int(text[14:16]),
                    int(text[17:19]), tzinfo=timezone.utc)
