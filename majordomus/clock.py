"""UTC time at second precision, the only clock majordomus reads (freezegun freezes it in tests).

`now_iso` reads the time module only: the hot paths stamp records without importing datetime.
"""

from __future__ import annotations

import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime

ISO = "%Y-%m-%dT%H:%M:%SZ"
COMPACT = "%Y%m%dT%H%M%SZ"


def now_iso() -> str:
    """Now, as `2026-09-03T19:45:00Z`."""
    return time.strftime(ISO, time.gmtime())


def now() -> datetime:
    from datetime import datetime, timezone

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
    from datetime import datetime, timezone

    if len(text) != 20 or text[4] + text[7] + text[10] + text[13] + text[16] + text[19] != "--T::Z":
        raise ValueError(f"not a UTC timestamp like 2026-09-03T19:45:00Z: {text!r}")
    return datetime(int(text[0:4]), int(text[5:7]), int(text[8:10]), int(text[11:13]), int(text[14:16]),
                    int(text[17:19]), tzinfo=timezone.utc)


def is_iso(text: object) -> bool:
    """Whether `text` is a UTC timestamp as majordomus writes them (`2026-09-03T19:45:00Z`)."""
    if not isinstance(text, str) or len(text) != 20:
        return False
    digits = text[0:4] + text[5:7] + text[8:10] + text[11:13] + text[14:16] + text[17:19]
    if not (digits.isascii() and digits.isdigit()) or text[4] + text[7] + text[10] + text[13] + text[16] + text[19] != "--T::Z":
        return False
    year, month, day = int(text[0:4]), int(text[5:7]), int(text[8:10])
    if not (year >= 1 and 1 <= month <= 12 and int(text[11:13]) < 24 and int(text[14:16]) < 60
            and int(text[17:19]) < 60):
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 1 <= day <= (31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[month - 1]


def seconds_of(text: str) -> int:
    """`2026-09-03T19:45:00Z` as seconds since the epoch, by arithmetic on its fields: neither datetime nor
    strptime (whose first use imports _strptime, calendar and locale) is loaded. ValueError when it is no
    such timestamp (`is_iso`)."""
    if not is_iso(text):
        raise ValueError(f"not a UTC timestamp like 2026-09-03T19:45:00Z: {text!r}")
    year, month, day = int(text[0:4]), int(text[5:7]), int(text[8:10])
    year -= month <= 2  # the year counted from March, so that February's length comes last
    era, of_era = divmod(year, 400)
    of_year = (153 * (month - 3 if month > 2 else month + 9) + 2) // 5 + day - 1
    days = era * 146097 + of_era * 365 + of_era // 4 - of_era // 100 + of_year - 719468  # 1970-01-01 is day 0
    return days * 86400 + int(text[11:13]) * 3600 + int(text[14:16]) * 60 + int(text[17:19])


_FIRST, _LAST = -62135596800, 253402300799  # 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z


def iso_of(seconds: int) -> str:
    """Seconds since the epoch as a stamp, held to the years 1 to 9999: a time git or a remote gives may be
    any number (a commit dated `@300000000000`), and what cannot be shown as a stamp is shown as the first
    or the last one there is, never an error."""
    moment = time.gmtime(min(max(int(seconds), _FIRST), _LAST))
    return (f"{moment.tm_year:04d}-{moment.tm_mon:02d}-{moment.tm_mday:02d}T"
            f"{moment.tm_hour:02d}:{moment.tm_min:02d}:{moment.tm_sec:02d}Z")
