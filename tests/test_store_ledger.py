"""The ledger (design §10): hash chain, sequence, tolerant replay, verify."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from helpers import ledger_bytes, ledger_events, start_task, state_dir

from majordomus.store import ledger


def test_chain_and_sequence(tmp_path):
    path = str(tmp_path / "ledger.jsonl")
    for i in range(5):
        ledger.append(path, "task.checkpoint", {"task": "t", "n": i}, "2026-01-01T00:00:00Z")
    lines = Path(path).read_bytes().splitlines()
    objs = [json.loads(line) for line in lines]
    assert [o["seq"] for o in objs] == [1, 2, 3, 4, 5]
    assert objs[0]["prev"] is None
    for prev_line, obj in zip(lines, objs[1:]):
        assert obj["prev"] == hashlib.sha256(prev_line).hexdigest()  # design §10: sha256 of the previous line
    assert list(objs[0])[:4] == ["v", "seq", "at", "event"]
    assert ledger.verify(path).ok


def test_a_field_holding_a_lone_surrogate_is_an_ascii_line_and_the_others_stay_readable_utf8(tmp_path):
    """A byte git gave that is not UTF-8 (a remote ref's name, kept by surrogateescape) cannot be UTF-8 text:
    that one line is ASCII JSON, the same value read back; the lines around it stay readable UTF-8."""
    path = str(tmp_path / "ledger.jsonl")
    for value in ("café", "refs/majordomus/machines/bad\udcff\udcfe", "naïve"):
        ledger.append(path, "sync.refused", {"task": None, "path": value}, "2026-01-01T00:00:00Z")
    lines = Path(path).read_bytes().splitlines()
    assert "café".encode() in lines[0] and "naïve".encode() in lines[2]
    assert lines[1].isascii() and b"bad\\udcff\\udcfe" in lines[1]
    assert [json.loads(line)["path"] for line in lines] == ["café", "refs/majordomus/machines/bad\udcff\udcfe", "naïve"]
    assert ledger.verify(path).ok


def test_torn_line_is_counted_and_the_chain_continues(tmp_path):
    path = str(tmp_path / "ledger.jsonl")
    ledger.append(path, "a", {}, "2026-01-01T00:00:00Z")
    with open(path, "ab") as fh:
        fh.write(b'{"v":1,"seq":2,"at":"2026')  # a writer killed mid-append
    assert ledger.replay(path).dropped_lines == 1
    ledger.append(path, "b", {}, "2026-01-01T00:00:01Z")
    raw = Path(path).read_bytes()
    assert raw.endswith(b"\n") and raw.split(b"\n")[1] == b'{"v":1,"seq":2,"at":"2026'  # the torn line stays alone
    first = raw.split(b"\n")[0]
    assert json.loads(raw.split(b"\n")[2])["prev"] == hashlib.sha256(first).hexdigest()  # chained past the tear
    replayed = ledger.replay(path)
    assert [e["event"] for e in replayed.events] == ["a", "b"] and replayed.dropped_lines == 1
    assert [e["seq"] for e in replayed.events] == [1, 2]
    result = ledger.verify(path)
    assert result.ok and result.dropped_lines == 1


def test_edited_line_breaks_the_chain(tmp_path):
    path = tmp_path / "ledger.jsonl"
    for name in ("a", "b", "c"):
        ledger.append(str(path), name, {"task": "t"}, "2026-01-01T00:00:00Z")
    lines = path.read_text().splitlines()
    lines[1] = lines[1].replace('"event":"b"', '"event":"x"')
    path.write_text("\n".join(lines) + "\n")
    result = ledger.verify(str(path))
    assert not result.ok and "seq 3" in result.breaks[0]


def test_cli_ledger_verify_task_filter_and_json(cli, repo):
    cli("task", "start", "a")
    cli("task", "start", "b")
    cli("checkpoint", input="x\n")
    out = json.loads(cli("ledger", "--json", "--task", "b").stdout)
    assert [e["event"] for e in out["events"]] == ["task.start", "task.checkpoint"]
    assert out["dropped_lines"] == 0
    ok = cli("ledger", "--verify")
    assert ok.exit_code == 0 and "4 events" in ok.stdout
    path = state_dir(repo) / "ledger.jsonl"
    text = path.read_text().replace('"task":"a"', '"task":"z"', 1)
    path.write_text(text)
    broken = cli("ledger", "--verify")
    assert broken.exit_code == 1 and "broken" in broken.stdout
    human = cli("ledger").stdout.splitlines()
    assert len(human) == 4 and "task.checkpoint" in human[-1]


def test_one_event_is_one_line_with_the_fields_spec_names(cli, repo):
    start_task(cli)
    assert cli("checkpoint", input="x\n").exit_code == 0
    raw = ledger_bytes(repo)
    assert raw.endswith(b"\n") and raw.count(b"\n") == 2
    event = ledger_events(repo)[-1]
    assert list(event)[:4] == ["v", "seq", "at", "event"] and list(event)[-1] == "prev"
    assert event["v"] == 1 and event["seq"] == 2 and event["event"] == "task.checkpoint"
    assert {"task", "worktree", "branch", "path", "sha256"} <= set(event)
    assert event["worktree"] == str(repo) and event["branch"] == "main" and event["task"] == "t1"


def test_verify_counts_a_torn_line_and_fails_a_missing_one(cli, repo):
    start_task(cli)
    for i in range(3):
        assert cli("checkpoint", input=f"note {i}\n").exit_code == 0
    path = state_dir(repo) / "ledger.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines) + b'{"v":1,"seq":5,"at"')
    torn = json.loads(cli("ledger", "--verify", "--json").stdout)
    assert torn["ok"] is True and torn["dropped_lines"] == 1 and torn["events"] == 4
    path.write_bytes(b"".join(lines[:1] + lines[2:]))
    broken = cli("ledger", "--verify")
    assert broken.exit_code == 1
    assert cli("ledger", "--verify", "--json").stdout.count("seq 3") >= 1


# ---------------------------------------------------------------- hostile lines (design §2a)


def _sparse_torn_tail(path: Path, size: int) -> None:
    """A final line of `size` bytes that never ended, as a sparse file: no disk used."""
    with open(path, "ab") as fh:
        fh.write(b'{"v":1,"seq":')
    os.truncate(path, path.stat().st_size + size)


def test_a_line_just_under_the_bound_is_read_and_one_over_it_is_one_dropped_line(tmp_path):
    path = tmp_path / "ledger.jsonl"
    ledger.append(str(path), "a", {}, "2026-01-01T00:00:00Z")
    pad = ledger.LINE_MAX - len(b'{"v":1,"seq":2,"event":"b","x":""}')
    with open(path, "ab") as fh:
        fh.write(b'{"v":1,"seq":2,"event":"b","x":"' + b"y" * pad + b'"}\n')  # LINE_MAX bytes and the newline
        fh.write(b'{"v":1,"seq":3,"event":"c","x":"' + b"y" * (pad + 1) + b'"}\n')  # one byte over
    replayed = ledger.replay(str(path))
    assert [e["event"] for e in replayed.events] == ["a", "b"] and replayed.dropped_lines == 1
    assert ledger.last_event(str(path))["event"] == "b"  # the backward reader skips it the same way


def test_a_torn_tail_of_100_mib_is_one_dropped_line_and_appends_continue(tmp_path):
    path = tmp_path / "ledger.jsonl"
    ledger.append(str(path), "a", {"task": "t"}, "2026-01-01T00:00:00Z")
    _sparse_torn_tail(path, 100 << 20)
    assert ledger.replay(str(path)).dropped_lines == 1
    assert ledger.last_event(str(path), "t")["event"] == "a"
    ledger.append(str(path), "b", {"task": "t"}, "2026-01-01T00:00:01Z")
    result = ledger.verify(str(path))
    assert result.ok and result.events == 2 and result.dropped_lines == 1
    assert [e["seq"] for e in ledger.replay(str(path)).events] == [1, 2]
    path.unlink()


def test_a_deep_line_is_a_dropped_line_never_a_recursion_error(cli, repo):
    start_task(cli)
    with open(state_dir(repo) / "ledger.jsonl", "ab") as fh:
        fh.write(b'{"v":1,"seq":2,"event":"x","deep":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n")
    for args in (("ledger",), ("ledger", "--verify"), ("brief",)):
        result = cli(*args)
        assert result.exit_code == 0, (args, result)
    verified = cli("ledger", "--verify", "--json")
    assert json.loads(verified.stdout)["dropped_lines"] == 1
    assert cli("checkpoint", input="after the deep line\n").exit_code == 0
    assert [e["event"] for e in ledger.replay(str(state_dir(repo) / "ledger.jsonl")).events] == [
        "task.start", "task.checkpoint"]
    doctor = cli("doctor", "--json")
    assert doctor.exit_code == 0 and "ledger.dropped" in doctor.stdout


def test_nested_64_deep_is_an_event_and_65_deep_is_dropped(tmp_path):
    path = tmp_path / "ledger.jsonl"
    ok = b'{"v":1,"seq":1,"event":"a","x":' + b"[" * 63 + b"]" * 63 + b"}"  # 64 levels with the object
    deep = b'{"v":1,"seq":2,"event":"b","x":' + b"[" * 64 + b"]" * 64 + b"}"
    path.write_bytes(ok + b"\n" + deep + b"\n")
    replayed = ledger.replay(str(path))
    assert [e["event"] for e in replayed.events] == ["a"] and replayed.dropped_lines == 1


def test_a_line_holding_nan_or_infinity_is_no_event(cli, repo):
    """`NaN` and `Infinity` are no JSON: Python reads them and `--json` would write them back out as text no
    other reader takes. A line holding one is not an event (counted, the chain broken there); the edge, the
    same line with a number, verifies."""
    import math

    cli("task", "start", "a")
    cli("checkpoint", input="x\n")
    path = state_dir(repo) / "ledger.jsonl"
    lines = path.read_text().splitlines()
    assert cli("ledger", "--verify").exit_code == 0
    for constant in ("NaN", "Infinity", "-Infinity"):
        path.write_text("\n".join([lines[0].replace('"v":1', f'"v":{constant}', 1), *lines[1:]]) + "\n")
        broken = cli("ledger", "--verify")
        assert broken.exit_code == 1, broken.output
        out = cli("ledger", "--json")
        data = json.loads(out.stdout, parse_constant=lambda name: math.nan)  # what any JSON reader takes
        assert out.exit_code == 0 and constant not in out.stdout and data["dropped_lines"] == 1, out.stdout


@pytest.mark.parametrize("field, value", [("task", ["t1"]), ("task", {"x": 1}), ("task", 7), ("task", True),
                                          ("at", 1764640800), ("at", ["2026"]), ("at", None)])
def test_an_event_whose_task_or_time_is_not_text_is_no_event_for_any_reader(cli, repo, field, value):
    """Readers key and order events by `task` and `at`: a line whose `task` is a list was no key of a set,
    and `log` exited 70. Such a line is no event (counted as an invalid line, as a torn one) for every
    reader; the edge: a string, or a `task` of null (an event of no task), is one."""
    cli("task", "start", "t1")
    cli("checkpoint", input="x\n")
    path = state_dir(repo) / "ledger.jsonl"
    good = len(path.read_text().splitlines())
    event = {"v": 1, "seq": good + 1, "at": "2026-12-02T02:20:00Z", "event": "task.note", "task": "t1"}
    event[field] = value
    with path.open("a") as f:
        f.write(json.dumps(event) + "\n")
    is_event = value is None and field == "at"  # an `at` of null: an event all the same
    for args in (["log"], ["log", "--all"], ["ledger"], ["brief"], ["doctor"], ["watch", "--once"], ["search", "x"]):
        done = cli(*args)
        assert done.exit_code in (0, 1), (args, done.output)
    listed = json.loads(cli("ledger", "--json").stdout)
    assert (len(listed["events"]) == good + 1) is is_event and listed["dropped_lines"] == (0 if is_event else 1)
    assert "torn or invalid ledger lines skipped" in cli("log").stderr or is_event
