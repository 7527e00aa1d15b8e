"""One listing and one order for every kind of record (majordomus/store/listing.py): by the second in the
name, then modification time, then name — the same tie-break newest first and oldest first."""

from __future__ import annotations

import os
from pathlib import Path

from majordomus.store import listing

SECOND = "20261201T090000Z"


def make(directory: Path, name: str, mtime_ns: int) -> None:
    (directory / name).write_text("x")
    os.utime(directory / name, ns=(mtime_ns, mtime_ns))


def test_within_one_second_the_older_file_comes_first_and_a_tie_falls_back_to_the_name(tmp_path: Path) -> None:
    make(tmp_path, f"{SECOND}--main--aaaaaaa--{'f' * 16}.md", 3)
    make(tmp_path, f"{SECOND}--main--aaaaaaa--{'0' * 16}.md", 5)  # the name sorts first, the file is newer
    make(tmp_path, f"{SECOND}--main--aaaaaaa--{'1' * 16}.md", 5)  # the same mtime: then by name
    make(tmp_path, f"20261201T085959Z--main--aaaaaaa--{'e' * 16}.md", 9)  # an earlier second, whatever its mtime
    make(tmp_path, ".tmp-1-0", 1)  # never a record
    oldest = listing.names_since(str(tmp_path), "0")
    assert [n[-19:-3] for n in oldest] == ["e" * 16, "f" * 16, "0" * 16, "1" * 16]
    assert listing.list_names(str(tmp_path)) == list(reversed(oldest))
    assert listing.names_since(str(tmp_path), SECOND) == oldest[1:]
    assert listing.list_names(str(tmp_path / "missing")) == [] and listing.names_since(str(tmp_path / "missing"), "0") == []
