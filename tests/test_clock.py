from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from majordomus import clock


@given(st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9999, 12, 31)))
def test_parse_reads_what_iso_writes(moment):
    moment = moment.replace(microsecond=0, tzinfo=timezone.utc)
    text = clock.iso(moment)
    assert clock.parse(text) == moment
    assert clock.compact_of(text) == clock.compact(moment)


@pytest.mark.parametrize("text", ["2026-09-03 19:45:00Z", "2026-09-03T19:45:00", "2026-13-03T19:45:00Z", ""])
def test_parse_refuses_other_shapes(text):
    with pytest.raises(ValueError):
        clock.parse(text)


@given(st.datetimes(min_value=datetime(1000, 1, 2), max_value=datetime(9999, 12, 31)))  # %Y pads from 1000
def test_seconds_of_is_the_epoch_seconds_of_the_stamp_and_the_cutoff_an_hour_before(moment):
    import calendar
    import time

    from majordomus.store import lookback

    text = clock.iso(moment.replace(microsecond=0))
    seconds = calendar.timegm(time.strptime(text, clock.ISO))
    assert clock.seconds_of(text) == seconds
    earlier = time.strftime(clock.ISO, time.gmtime(seconds - lookback.CLOCK_SLACK))
    assert lookback.search_cutoff(text) == earlier


@pytest.mark.parametrize("text", ["2026-02-29T00:00:00Z", "2026-09-03T24:00:00Z", "20260903T194500Z", "", "x" * 20])
def test_seconds_of_refuses_what_is_no_stamp_and_the_cutoff_keeps_it(text):
    from majordomus.store import lookback

    with pytest.raises(ValueError):
        clock.seconds_of(text)
    assert lookback.search_cutoff(text) == text


@pytest.mark.parametrize(("seconds", "shown"), [(0, "1970-01-01T00:00:00Z"), (253402300799, "9999-12-31T23:59:59Z"),
                                                (300000000000, "9999-12-31T23:59:59Z"), (10**17, "9999-12-31T23:59:59Z"),
                                                (-62135596800, "0001-01-01T00:00:00Z"), (-10**17, "0001-01-01T00:00:00Z")])
def test_iso_of_holds_any_number_of_seconds_to_the_stamps_there_are(seconds, shown):
    """A time from git or a remote may be any number (a commit dated `@300000000000`): shown as a stamp held
    to the years 1 to 9999, never an OverflowError or `Value too large` (exit 70)."""
    assert clock.iso_of(seconds) == shown and clock.is_iso(shown)
