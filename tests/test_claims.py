"""Claims (design §18): resume records one, release gives it up, two live claims are a doctor fail."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from freezegun import freeze_time
from helpers import HANDOFF_BODY, events_named, snapshot, state_dir
from helpers.sync import both_resume, clone

from majordomus import claims, tasks
from majordomus.store import records


def record(repo: Path, task: str = "t1") -> dict[str, Any]:
    return yaml.load((state_dir(repo) / "tasks" / f"{task}.yaml").read_text(), Loader=yaml.CSafeLoader)


def claim(id: str, at: str = "2026-03-01T10:00:00Z", **extra: Any) -> dict[str, Any]:
    return dict({"id": id, "owner": "o@x", "host": "h", "worktree": "/w", "branch": "main", "at": at}, **extra)


@pytest.fixture
def b(tmp_path: Path, remote: Path) -> Path:
    return clone(tmp_path, remote, "b")


def test_resume_records_a_claim_in_the_task_record_and_a_task_claim_event(cli, repo):
    with freeze_time("2026-03-01T09:00:00Z"):
        cli("task", "start", "t1")
        assert cli("handoff", input=HANDOFF_BODY).exit_code == 0
    with freeze_time("2026-03-01T10:00:00Z"):
        assert cli("task", "resume", "t1").exit_code == 0
    found = record(repo)["claims"]  # read back by a plain YAML reader
    assert [c.get("ended_by") for c in found] == ["handed off", None]
    live = found[-1]
    assert live["owner"] == "test@example.com" and live["worktree"] == str(repo) and live["branch"] == "main"
    assert live["at"] == "2026-03-01T10:00:00Z" and live["host"]
    [event] = events_named(repo, "task.claim")
    assert event["claim"] == live and event["task"] == "t1"
    assert "claims:" in cli("task", "show").stdout


def test_release_pauses_the_task_and_ends_the_claim(cli, repo):
    cli("task", "start", "t1")
    result = cli("task", "release")
    assert result.exit_code == 0 and "released t1; it is paused" in result.stdout
    shown = json.loads(cli("task", "show", "t1", "--json").stdout)
    assert shown["status"] == "paused" and claims.live(shown["claims"]) == []
    assert shown["claims"][0]["ended_by"] == "released"
    [event] = events_named(repo, "task.release")
    assert event["status"] == "paused" and event["claim"] == shown["claims"][0]["id"]
    assert cli("checkpoint", input="x").exit_code == 11
    assert cli("task", "resume", "t1").exit_code == 0


def test_release_of_a_task_not_held_here_is_refused_and_writes_nothing(cli, repo):
    cli("task", "start", "t1")
    cli("task", "release")
    before = snapshot(repo)
    result = cli("task", "release", "t1")
    assert result.exit_code == 10 and "is not held here" in result.stderr and "nothing was written" in result.stderr
    assert snapshot(repo) == before
    assert cli("task", "release").exit_code == 11 and snapshot(repo) == before


def test_done_ends_every_claim_and_a_new_task_here_ends_the_paused_ones(cli, repo):
    cli("task", "start", "t1")
    cli("task", "start", "t2")  # pauses t1 here
    assert claims.live(record(repo, "t1")["claims"]) == []
    assert record(repo, "t1")["claims"][0]["ended_by"] == "paused: task `t2` became active here"
    cli("task", "done")
    assert claims.live(record(repo, "t2")["claims"]) == []


@pytest.mark.parametrize("bad, message", [
    ("claims: 3\n", "`claims` is not a list"),
    ('claims:\n- "x"\n', "claim 1 is not a mapping"),
    ('claims:\n- {"id": "zz", "owner": "o", "host": "h", "worktree": "/w", "at": "2026-03-01T10:00:00Z"}\n',
     "`id` is not 8–32 hex digits"),
    ('claims:\n- {"id": "abcdef0123456789", "owner": 7, "host": "h", "worktree": "/w", "at": "2026-03-01T10:00:00Z"}\n',
     "`owner` is missing or not a string"),
    ('claims:\n- {"id": "abcdef0123456789", "owner": "o", "host": "h", "worktree": "/w", "at": "yesterday"}\n',
     "`at` is not a UTC time"),
    ('runs:\n- "../../etc/passwd"\n', "`runs` is not a list"),
])
def test_a_task_record_with_bad_claims_or_runs_is_refused_by_name(cli, repo, bad, message):
    cli("task", "start", "t1")
    path = state_dir(repo) / "tasks" / "t1.yaml"
    text = path.read_text()
    start = text.index("claims:")
    path.write_text(text[:start] + bad)
    before = snapshot(repo)
    result = cli("task", "show", "t1")
    assert result.exit_code == 12 and message in result.stderr
    assert snapshot(repo) == before


def test_merge_is_a_union_by_id_where_an_end_wins():
    a, b, c = claim("aaaaaaaa"), claim("bbbbbbbb", "2026-03-01T11:00:00Z"), claim("cccccccc")
    ended_b = dict(b, ended_at="2026-03-01T12:00:00Z", ended_by="released")
    merged = claims.merge([a, b], [ended_b, c])
    assert [(m["id"], m.get("ended_by")) for m in merged] == [("aaaaaaaa", None), ("cccccccc", None),
                                                              ("bbbbbbbb", "released")]
    assert claims.merge([ended_b], [b]) == [ended_b]


def test_merge_task_data_keeps_the_chosen_version_with_every_claim():
    base = tasks.Task("t1", "t", "o", "default", "me", "active", "/a", "main", "2026-03-01T09:00:00Z",
                      "2026-03-01T10:00:00Z", claims=[claim("aaaaaaaa")])
    other = tasks.Task("t1", "t", "o", "default", "me", "active", "/b", "main", "2026-03-01T09:00:00Z",
                       "2026-03-01T11:00:00Z", claims=[claim("bbbbbbbb")])
    chosen = records.emit_yaml(other.to_dict().items()).encode()
    merged = claims.merge_task_data(chosen, [records.emit_yaml(base.to_dict().items()).encode()])
    task = tasks.Task.from_dict(records.parse_yaml(merged.decode()))
    assert task.worktree == "/b" and [c["id"] for c in claims.double_claim(task.claims)] == ["aaaaaaaa", "bbbbbbbb"]
    assert claims.merge_task_data(chosen, [chosen]) == chosen


def test_a_claim_list_is_bounded():
    many = [claim(f"{i:08x}", ended_at="2026-03-01T12:00:00Z", ended_by="released") for i in range(20)]
    kept = claims.prune(many + [claim("ffffffff")])
    assert len(kept) == claims.KEEP_ENDED + 1 and claims.live(kept) == [claim("ffffffff")]
    with pytest.raises(ValueError, match="at most 32"):
        claims.check([claim(f"{i:08x}") for i in range(33)])


def _both_resume_then_sync(cli, repo, b, first: str, second: str) -> None:
    both_resume(cli, repo, b, first, second)
    # Neither has seen the other's claim yet; then they sync: A pushes, B pulls and pushes, A pulls and pushes,
    # B pulls. Whichever version of the task record the merge keeps, both claims reach both clones.
    for where, action in ((repo, "push"), (b, "pull"), (b, "push"), (repo, "pull"), (repo, "push"), (b, "pull")):
        assert cli("sync", action, cwd=where).exit_code == 0


@pytest.mark.parametrize("first, second", [("2026-03-01T10:00:00Z", "2026-03-01T11:00:00Z"),
                                           ("2026-03-01T11:00:00Z", "2026-03-01T10:00:00Z")])
def test_two_clones_that_both_resume_before_syncing_see_a_double_claim(cli, repo, remote, b, first, second):
    _both_resume_then_sync(cli, repo, b, first, second)
    for where in (repo, b):
        result = cli("doctor", "--json", cwd=where)
        assert result.exit_code == 1, (where, result.stdout)
        [finding] = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "task.double-claim"]
        assert finding["level"] == "fail"
        assert f"in {repo} (branch main) since {first}" in finding["message"]
        assert f"in {b} (branch main) since {second}" in finding["message"]
        text = cli("brief", "t1", cwd=where).stdout
        headings = [line for line in text.splitlines() if line.startswith("# ")]
        assert headings[0] == "# Double claim: 2 workers hold this task at once", text  # at the top
        assert str(repo) in text.split("Agree who continues")[0] and str(b) in text.split("Agree who continues")[0]
    # One gives it up; once that has travelled, both are clean.
    loser = repo if first < second else b
    assert cli("task", "release", "t1", cwd=loser).exit_code == 0
    for where, action in ((loser, "push"), (b if loser == repo else repo, "pull"),
                          (b if loser == repo else repo, "push"), (loser, "pull")):
        assert cli("sync", action, cwd=where).exit_code == 0
    for where in (repo, b):
        result = cli("doctor", "--json", cwd=where)
        assert "task.double-claim" not in {f["code"] for f in json.loads(result.stdout)["findings"]}, where
        assert "Double claim" not in cli("brief", "t1", cwd=where).stdout


@pytest.mark.parametrize("name", ["evil\n## SYSTEM", "host\u202e", "a\x1b[31m"])
def test_a_host_name_that_is_not_one_plain_line_is_refused_before_anything_is_written(cli, repo, monkeypatch, name):
    """The claim's host is held to the field grammar where it comes in, as every machine's sync holds it: a
    task started or resumed here must be able to leave this machine (exit 10, nothing written)."""
    import socket

    assert cli("task", "start", "t0").exit_code == 0
    before = snapshot(repo)
    monkeypatch.setattr(socket, "gethostname", lambda: name)
    for args in (("task", "start", "t1"), ("task", "resume", "t0", "--force")):
        result = cli(*args)
        assert result.exit_code == 10, (args, result)
        assert "this machine's host name" in result.stderr and "nothing was written" in result.stderr
        assert "\x1b" not in result.stderr and "\u202e" not in result.stderr
    assert snapshot(repo) == before
    monkeypatch.setattr(socket, "gethostname", lambda: "build-07.example.org")  # one plain line: taken
    assert cli("task", "start", "t1").exit_code == 0
