"""Task records changed on several machines (design §13): the newest `updated_at` wins, never an older version
than a machine already had, and a change made on two machines without either seeing the other's is a
`sync.conflict` on the machine that sees it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from freezegun import freeze_time
from helpers import git, state_dir
from helpers.sync import both_resume, clone, events, machine_ref, read_remote


@pytest.fixture
def b(tmp_path: Path, remote: Path) -> Path:
    return clone(tmp_path, remote, "b")


def _updated_at(repo: Path) -> str:
    import yaml

    return str(yaml.load((state_dir(repo) / "tasks" / "t1.yaml").read_text(), Loader=yaml.CSafeLoader)["updated_at"])


def test_changed_on_two_machines_both_record_the_conflict_and_the_newest_wins(cli, repo, remote, b):
    both_resume(cli, repo, b, "2026-03-01T10:00:00Z", "2026-03-01T11:00:00Z")
    assert cli("sync", "push").exit_code == 0
    assert cli("sync", "push", cwd=b).exit_code == 0  # no race: each machine pushes its own ref

    at_a = cli("sync", "pull")
    assert at_a.exit_code == 0, at_a.output
    assert "conflict: task t1 changed on two machines; kept the remote record" in at_a.stdout
    assert "task t1 is no longer active here" in at_a.stdout
    [conflict] = events(repo, "sync.conflict")
    assert conflict["task"] == "t1" and conflict["kept"] == "remote" and conflict["machine"] == machine_ref(b)
    assert (conflict["local_updated_at"], conflict["remote_updated_at"]) == ("2026-03-01T10:00:00Z",
                                                                           "2026-03-01T11:00:00Z")
    assert _updated_at(repo) == "2026-03-01T11:00:00Z"
    assert cli("checkpoint", input="still mine?").exit_code == 11
    assert [e["by"] for e in events(repo, "task.pause")] == ["sync"]

    at_b = cli("sync", "pull", cwd=b)
    assert "conflict: task t1 changed on two machines; kept the local record" in at_b.stdout
    [seen_by_b] = events(b, "sync.conflict")
    assert seen_by_b["kept"] == "local" and seen_by_b["machine"] == machine_ref(repo)
    assert _updated_at(b) == "2026-03-01T11:00:00Z"
    assert cli("checkpoint", input="B holds it", cwd=b).exit_code == 0
    # Settled: more pulls record nothing more.
    cli("sync", "pull")
    cli("sync", "pull", cwd=b)
    assert len(events(repo, "sync.conflict")) == len(events(b, "sync.conflict")) == 1


def test_the_older_side_loses_even_when_it_pushed_last(cli, repo, remote, b):
    both_resume(cli, repo, b, "2026-03-01T11:00:00Z", "2026-03-01T10:00:00Z")
    cli("sync", "push", cwd=b)
    cli("sync", "push")
    result = cli("sync", "pull", cwd=b)
    assert "kept the remote record" in result.stdout and "no longer active here" in result.stdout
    [conflict] = events(b, "sync.conflict")
    assert conflict["kept"] == "remote" and conflict["remote_updated_at"] == "2026-03-01T11:00:00Z"
    assert json.loads(cli("task", "show", "t1", "--json", cwd=b).stdout)["worktree"] == str(repo)
    assert cli("checkpoint", input="x", cwd=b).exit_code == 11


def test_a_version_built_on_ours_is_no_conflict(cli, repo, remote, b):
    with freeze_time("2026-03-01T09:00:00Z"):
        cli("task", "start", "t1")
        cli("checkpoint", input="A works")
    cli("sync", "push")
    cli("sync", "pull", cwd=b)
    with freeze_time("2026-03-01T10:00:00Z"):
        assert cli("task", "resume", "t1", "--force", cwd=b).exit_code == 0
        cli("checkpoint", input="B took over", cwd=b)
    cli("sync", "push", cwd=b)
    result = cli("sync", "pull")
    assert "conflict" not in result.stdout and "task t1 is no longer active here" in result.stdout
    assert events(repo, "sync.conflict") == []
    assert _updated_at(repo) == "2026-03-01T10:00:00Z"


def test_a_stale_copy_on_an_idle_machine_never_wins(cli, repo, remote, b, tmp_path):
    with freeze_time("2026-03-01T09:00:00Z"):
        cli("task", "start", "t1")
    cli("sync", "push")
    idle = clone(tmp_path, remote, "idle")
    cli("sync", "pull", cwd=idle)
    with freeze_time("2026-03-01T09:30:00Z"):
        cli("task", "start", "other", cwd=idle)
    cli("sync", "push", cwd=idle)  # its ref now carries t1 as of 09:00, and keeps it
    with freeze_time("2026-03-01T12:00:00Z"):
        cli("checkpoint", input="A moves on")
    cli("sync", "push")
    assert b'"2026-03-01T09:00:00Z"' in read_remote(remote, machine_ref(idle), "tasks/t1.yaml")
    cli("sync", "pull", cwd=b)
    assert _updated_at(b) == "2026-03-01T12:00:00Z"
    cli("sync", "pull")
    assert _updated_at(repo) == "2026-03-01T12:00:00Z"
    assert events(repo, "sync.conflict") == [] and events(b, "sync.conflict") == []


def test_a_version_of_ours_kept_over_a_conflict_and_never_pushed_is_settled_on(cli, repo, remote, b):
    """A keeps checkpointing a task B took over; each pull keeps A's newer record (a conflict). The first
    such pull settles on a version A had pushed; from the second on, A's version is one no push carried,
    in no object store yet: the pull writes it, and never fails for an object it does not have."""
    with freeze_time("2026-03-01T09:00:00Z"):
        assert cli("task", "start", "s").exit_code == 0
        assert cli("checkpoint", input="a0").exit_code == 0
        assert cli("sync", "push", "--checkpoints").exit_code == 0
        assert cli("sync", "pull", cwd=b).exit_code == 0
        assert cli("task", "resume", "s", "--force", cwd=b).exit_code == 0
    for n in range(1, 4):
        with freeze_time(f"2026-03-01T09:0{n}:00Z"):
            assert cli("checkpoint", input=f"b{n}", cwd=b).exit_code == 0
            assert cli("sync", "push", "--checkpoints", cwd=b).exit_code == 0
        with freeze_time(f"2026-03-01T09:0{n}:30Z"):
            assert cli("checkpoint", input=f"a{n}").exit_code == 0
            pulled = cli("sync", "pull")
        assert pulled.exit_code == 0, (n, pulled.output)
        assert f"a{n}" in cli("checkpoint", "--show").stdout
    assert [e["kept"] for e in events(repo, "sync.conflict")] == ["local"] * 3
    settled = git(repo, "rev-parse", "refs/majordomus/synced:tasks/s.yaml")
    assert git(repo, "cat-file", "-t", settled) == "blob"
    # A works on a task whose record names B's claim as the live one: doctor says two workers hold it
    # (on B, which holds it by its claim, nothing is wrong)
    held = [f for f in json.loads(cli("doctor", "--json").stdout)["findings"] if f["code"] == "task.held-elsewhere"]
    assert len(held) == 1 and held[0]["level"] == "fail" and "`s`" in held[0]["message"]
    assert "task.held-elsewhere" not in cli("doctor", "--json", cwd=b).stdout
    assert cli("task", "release", "s").exit_code == 0
    assert "task.held-elsewhere" not in cli("doctor", "--json").stdout
