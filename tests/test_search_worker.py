"""The second core of a large search (majordomus/search_worker.py, design §22): the listing it helps make is
the one a single process makes, line for line and note for note, and the worker never outlives the search."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from helpers import as_written, start_task, state_dir

from majordomus import search, search_worker
from majordomus.workspace import Workspace


@pytest.fixture
def mixed(cli: Any, repo: Path) -> Path:
    """Two tasks' checkpoints, runs and a handoff a second apart, pins among them, and in the directories
    what a search must name or pass over: a record replaced after it was written, a FIFO, a name that is no
    record's, a text that is not ASCII, a record edited by hand and renamed to its new digest."""
    from freezegun import freeze_time

    with freeze_time("2026-09-03T10:00:00Z") as clock:
        for task in ("alpha", "beta"):
            start_task(cli, task)
            for n in range(7):
                assert cli("checkpoint", input=f"{task} note {n}\nmore words\n").exit_code == 0
                clock.tick(1)
                if n == 3:
                    assert cli("context", "pin", "constraint", f"a pinned note of {task}").exit_code == 0
                    clock.tick(1)
            assert cli("run", "--label", "tests", "--", "sh", "-c", "echo note from a run").exit_code == 0
            clock.tick(1)
        assert cli("checkpoint", input="café note\n").exit_code == 0
        clock.tick(1)
        assert cli("handoff", input="## State\na note handed\n## Decisions\nd\n## Open items\no\n"
                                    "## Next actions\nn\n").exit_code == 0
    checkpoints = sorted((state_dir(repo) / "checkpoints").iterdir())
    replaced = checkpoints[4]
    replaced.write_bytes(replaced.read_bytes().replace(b"note", b"NOTE"))
    edited = checkpoints[9]
    edited.write_bytes(edited.read_bytes().replace(b" note ", b" note \x1b[2J "))
    as_written(edited)
    os.mkfifo(checkpoints[0].parent / "20260903T100003Z--main--0000000--0000000000000001.md")
    (checkpoints[0].parent / "notes.txt").write_text("a note that is no record\n")
    return repo


def listing(repo: Path, words: list[str], task: str | None = None,
            kind: str | None = None) -> tuple[str, list[str]]:
    skipped: list[str] = []
    text = "".join(search.text_chunks(Workspace.open(str(repo)), search.Query(words), task, kind, skipped))
    return text, skipped


def started(monkeypatch: Any) -> list[search_worker.Worker]:
    """Every worker a search starts, from here on, for a listing of any size, two names a block."""
    workers: list[search_worker.Worker] = []

    class Seen(search_worker.Worker):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            workers.append(self)

    monkeypatch.setattr(search_worker, "Worker", Seen)
    monkeypatch.setattr(search_worker, "MIN_NAMES", 1)
    monkeypatch.setattr(search_worker, "BLOCK_NAMES", 2)
    monkeypatch.setattr(search_worker, "wanted", lambda names: True)
    return workers


def no_children() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


QUERIES = [(["note"], None, None), (["NOTE", "more"], None, None), (["note"], "beta", None),
           (["note"], None, "checkpoint"), (["nowhere"], None, None), (["café"], None, None)]


def test_with_a_worker_the_listing_and_its_notes_are_one_process_s(mixed, monkeypatch):
    alone = [listing(mixed, *query) for query in QUERIES]
    workers = started(monkeypatch)
    helped = [listing(mixed, *query) for query in QUERIES]
    assert helped == alone
    assert len(workers) == len(QUERIES) - 1  # a word that is not ASCII: one process
    assert all(w.pid == 0 and not w.failed for w in workers) and no_children()
    text, skipped = helped[0]
    assert any(workers[0].theirs) and text.count("\n") == 19  # the child searched blocks, pins between
    assert workers[0].kept  # blocks of the child's with a pin inside: read here, around their pins
    assert "a pinned note of alpha" in text and "café note" in text and "\\x1b[2J" in text
    assert sum("no longer matches the digest in its name" in s for s in skipped) == 1
    assert sum("FIFO" in s for s in skipped) == 1 and "no record" not in text
    assert helped[4][0] == ""


def test_a_pin_goes_before_the_first_name_below_its_key():
    names = [f"2026090{d}T000000Z--x" for d in (9, 8, 7, 6, 5, 4, 3, 2, 1)]
    assert search_worker._pin_places(names, ["20260907T999999Z", "20260901T000000Z", "20261001T0"]) == {2, 9, 0}


def test_a_worker_that_fails_costs_time_never_a_line(mixed, monkeypatch):
    """The child dies before it sends a block: the search reads those blocks itself."""
    alone = listing(mixed, ["note"])
    workers = started(monkeypatch)
    real = search_worker._serve

    def dies(fd: int, run: Any, pairs: Any) -> None:
        os._exit(3)

    monkeypatch.setattr(search_worker, "_serve", dies)
    assert listing(mixed, ["note"]) == alone
    assert workers[0].failed and no_children()
    monkeypatch.setattr(search_worker, "_serve", real)


def test_a_worker_that_sends_something_else_costs_time_never_a_line(mixed, monkeypatch):
    alone = listing(mixed, ["note"])
    workers = started(monkeypatch)

    def lies(fd: int, run: Any, pairs: Any) -> None:
        os.write(fd, (5).to_bytes(4, "little") + b"\x00\x01\x02\x03\x04")
        os._exit(0)

    monkeypatch.setattr(search_worker, "_serve", lies)
    assert listing(mixed, ["note"]) == alone
    assert workers[0].failed and no_children()


def test_a_search_stopped_early_leaves_no_worker_behind(mixed, monkeypatch):
    workers = started(monkeypatch)
    monkeypatch.setattr(search, "BLOCK", 1)  # a chunk a line: the first comes before the worker is done
    chunks = search.text_chunks(Workspace.open(str(mixed)), search.Query(["note"]))
    first = next(chunks)
    assert first.count("\n") == 1 and workers[0].pid > 0
    chunks.close()
    assert workers[0].pid == 0 and workers[0].fd == -1 and no_children()


def test_only_a_large_plain_listing_of_one_thread_on_two_cores_takes_a_worker(monkeypatch):
    import threading

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    assert not search_worker.wanted(search_worker.MIN_NAMES - 1)
    assert search_worker.wanted(search_worker.MIN_NAMES) == (cores >= 2 and threading.active_count() == 1)
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    assert not search_worker.wanted(10 ** 6)


def test_json_regex_and_the_tool_stay_in_one_process(mixed, monkeypatch):
    workers = started(monkeypatch)
    ws = Workspace.open(str(mixed))
    assert list(search.search(ws, search.Query(["note"])))
    assert list(search.text_chunks(ws, search.Query(["no.e"], regex=True)))
    assert search.tool(ws, ["note"])["matches"]
    assert workers == []


@pytest.mark.parametrize("call", ["pipe", "fork"])
def test_no_descriptor_or_process_left_for_a_worker_is_a_search_alone(mixed, monkeypatch, call):
    """`ulimit -n` (no pipe) or `ulimit -u` (no fork): the search goes on in one process, line for line."""
    import errno

    alone = listing(mixed, ["note"])
    workers = started(monkeypatch)

    def refused(*args: Any) -> Any:
        raise OSError(errno.EMFILE if call == "pipe" else errno.EAGAIN, "refused")

    monkeypatch.setattr(os, call, refused)
    assert listing(mixed, ["note"]) == alone
    assert workers[0].failed and no_children()
