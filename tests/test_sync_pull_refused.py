"""The bounded ledger event of what a pull refused (design §13 "all are in the ledger")."""

from __future__ import annotations

import hashlib
import json

import pytest

from majordomus.sync import pull_refused
from majordomus.sync.layout import Refusal


@pytest.mark.parametrize("length", [256, 257])
def test_the_event_names_the_first_twenty_each_text_cut_at_256_and_digests_them_all(length):
    refused = [Refusal("p" * length, "r" * length, ref="refs/majordomus/machines/m-1")]
    refused += [Refusal(f"tasks/bad{i}.yaml", "not a task record name") for i in range(24)]
    event = pull_refused.fields("origin", refused)
    assert event["count"] == 25 and len(event["refused"]) == 20
    first = event["refused"][0]
    assert len(first["path"]) == 256 and (first["path"].endswith("…") == (length > 256))
    assert first["ref"] == "refs/majordomus/machines/m-1" and event["refused"][1]["ref"] is None
    lines = "\n".join(json.dumps(vars(r), sort_keys=True, separators=(",", ":")) for r in refused)
    assert event["sha256"] == hashlib.sha256(lines.encode()).hexdigest()  # of the whole list, uncut


def test_the_summary_is_one_line_with_the_count_the_first_entry_and_the_digest():
    one = pull_refused.fields("origin", [Refusal("tasks/x.yaml", "not a task record name")])
    assert pull_refused.summary(one) == ("1 entry refused from origin: tasks/x.yaml: not a task record name "
                                         f"(sha256 {one['sha256'][:16]})")
    odd = {"count": 3, "remote": "o", "refused": "not a list", "sha256": "ab" * 32}  # never raises on a hand edit
    assert pull_refused.summary(odd) == "3 entries refused from o; and 2 more (sha256 abababababababab)"
