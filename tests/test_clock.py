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
