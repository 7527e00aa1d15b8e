"""The text listing checks its matches' digests a block at a time (search_listing.Lines, design §9, §22): a
replaced record is never listed, whichever block it falls in, and the notes stay in the order of the names."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from helpers import start_task, state_dir

from majordomus import search
from majordomus.workspace import Workspace


@pytest.fixture
def five(cli: Any, repo: Path) -> list[Path]:
    """Five checkpoints a second apart, oldest first."""
    from freezegun import freeze_time

    with freeze_time("2026-09-03T10:00:00Z") as clock:
        start_task(cli)
        for n in range(5):
            assert cli("checkpoint", input=f"a note {n}\n").exit_code == 0
            clock.tick(1)
    return sorted((state_dir(repo) / "checkpoints").iterdir())


def replace(record: Path) -> None:
    record.write_bytes(record.read_bytes().replace(b"a note", b"A note"))


@pytest.mark.parametrize("block", [1, 2, 512])
def test_replaced_records_are_named_in_their_place_among_other_notes(cli, repo, five, monkeypatch, block):
    monkeypatch.setattr(search, "BLOCK", block)
    replace(five[3])
    replace(five[1])
    fifo = five[2].name[:16] + "--main--fffffff--0000000000000000.md"  # between 2 and 3
    os.mkfifo(five[0].parent / fifo)
    skipped: list[str] = []
    text = "".join(search.text_chunks(Workspace.open(str(repo)), search.Query(["note"]), skipped=skipped))
    assert [line.rsplit("  ", 1)[1] for line in text.splitlines()] == ["a note 4", "a note 2", "a note 0"]
    assert [note.split("checkpoints/")[1][:49] for note in skipped] == [
        five[3].name[:49], fifo[:49], five[1].name[:49]]
    assert "no longer matches the digest" in skipped[0] and "FIFO" in skipped[1]
    assert "no longer matches the digest" in skipped[2]


def test_a_block_of_replaced_records_only_is_no_match(cli, repo, five, monkeypatch):
    """A chunk whose every match is replaced is not written (an empty chunk would count as a match)."""
    monkeypatch.setattr(search, "BLOCK", 2)
    for record in five:
        replace(record)
    chunks = list(search.text_chunks(Workspace.open(str(repo)), search.Query(["note"])))
    assert chunks == []
    found = cli("search", "note")
    assert found.exit_code == 1 and found.stdout == "" and found.stderr.count("no longer matches") == 5
