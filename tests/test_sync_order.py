"""Versions of a task are ordered by what happened, not by clocks (design §13): a pull never puts back a
version this machine replaced itself — its own older version, or one it imported and then changed — whatever
the timestamps say, and a pull with nothing new writes nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from freezegun import freeze_time
from helpers import git, state_dir
from helpers.sync import build_tree, clone, commit_tree, events, machine_ref, read_remote, tree_files, write_handoff

FUTURE = "2099-01-01T00:00:00Z"


def _task(cli: Any, repo: Path, task_id: str = "s1") -> dict[str, Any]:
    result = cli("task", "show", task_id, "--json", cwd=repo)
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout))


def _forge(remote: Path, ref: str, task_id: str, tmp: Path, *, built_on: bool = True) -> str:
    """Another machine's ref on the remote carrying `ref`'s version of the task with `updated_at` in 2099:
    a machine whose clock runs ahead (or anyone who can push); its commit descends from `ref`'s, or not
    (then the pull sees the task changed on two machines)."""
    files: dict[str, bytes | tuple[str, str]] = dict(tree_files(remote, ref))
    original = read_remote(remote, ref, f"tasks/{task_id}.yaml")
    forged = re.sub(rb"(?m)^updated_at: .*$", f'updated_at: "{FUTURE}"'.encode(), original)
    assert forged != original
    files[f"tasks/{task_id}.yaml"] = forged
    commit = commit_tree(remote, build_tree(remote, files, tmp), [git(remote, "rev-parse", ref)] if built_on else [],
                         "clock ahead")
    git(remote, "update-ref", "refs/majordomus/machines/evil-1", commit)
    return commit


def _state(repo: Path) -> dict[str, bytes]:
    """Every file of the state directory (the cache aside) and every majordomus ref: what a pull may write."""
    root = state_dir(repo)
    found = {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
             if p.is_file() and "cache" not in p.relative_to(root).parts}
    refs = git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/majordomus")
    return {**found, "refs": refs.encode()}


@pytest.mark.parametrize("built_on", [True, False], ids=["built-on-ours", "concurrent"])
def test_a_version_from_a_clock_ahead_never_comes_back_once_changed_here(cli, repo, remote, tmp_path, built_on):
    assert cli("task", "start", "s1", "--title", "sync one").exit_code == 0
    assert cli("checkpoint", input="A note 1").exit_code == 0
    assert cli("sync", "push").exit_code == 0
    _forge(remote, machine_ref(repo), "s1", tmp_path, built_on=built_on)

    first = cli("sync", "pull")
    assert first.exit_code == 0, first.output
    assert _task(cli, repo)["updated_at"] == FUTURE  # a version never seen here: the clocks decide, once
    assert ("kept the remote record" in first.stdout) is not built_on
    if not built_on:  # held elsewhere now, by the pull: taken back by hand
        assert cli("task", "resume", "s1", "--force").exit_code == 0
    after = cli("checkpoint", input="A note after")
    assert after.exit_code == 0, after.output
    mine = _task(cli, repo)

    for _ in range(2):
        again = cli("sync", "pull")
        assert again.exit_code == 0, again.output
        assert "conflict" not in again.stdout
        assert _task(cli, repo) == mine  # the pointer, `updated_at`: this machine's newer change stays
        shown = cli("checkpoint", "--show")
        assert "A note after" in shown.stdout and "A note 1" not in shown.stdout
    imports = [e for e in events(repo, "sync.import") if e["kind"] == "task"]
    assert len(imports) == 1 and imports[0]["updated_at"] == FUTURE
    assert len(events(repo, "sync.conflict")) == (0 if built_on else 1)


def test_a_later_change_elsewhere_still_comes_in_after_a_clock_ahead_was_superseded(cli, repo, remote, tmp_path):
    """The version from the future settled on here, then replaced: it is no floor that keeps out every real
    change made on another machine afterwards."""
    with freeze_time("2026-03-01T09:00:00Z"):
        assert cli("task", "start", "s1").exit_code == 0
        assert cli("checkpoint", input="A note 1").exit_code == 0
        assert cli("sync", "push").exit_code == 0
    _forge(remote, machine_ref(repo), "s1", tmp_path)
    b = clone(tmp_path, remote, "b")
    assert cli("sync", "pull").exit_code == 0
    assert cli("sync", "pull", cwd=b).exit_code == 0
    with freeze_time("2026-03-01T10:00:00Z"):
        assert cli("checkpoint", input="A note after").exit_code == 0
    with freeze_time("2026-03-01T11:00:00Z"):
        assert cli("task", "resume", "s1", "--force", cwd=b).exit_code == 0
        assert cli("checkpoint", input="B took over", cwd=b).exit_code == 0
    assert cli("sync", "push", cwd=b).exit_code == 0
    result = cli("sync", "pull")
    assert result.exit_code == 0, result.output
    taken = _task(cli, repo)
    assert taken["updated_at"] == "2026-03-01T11:00:00Z"
    assert taken["checkpoint"] == _task(cli, b)["checkpoint"]  # B's note, not the one from the future


def test_a_second_pull_writes_nothing(cli, repo, remote, tmp_path):
    assert cli("task", "start", "s1", "--title", "sync one").exit_code == 0
    assert cli("checkpoint", input="A note 1").exit_code == 0
    assert cli("sync", "push").exit_code == 0
    _forge(remote, machine_ref(repo), "s1", tmp_path)
    assert cli("sync", "pull").exit_code == 0
    assert cli("checkpoint", input="A note after").exit_code == 0
    assert cli("sync", "pull").exit_code == 0
    before = _state(repo)
    result = cli("sync", "pull")
    assert result.exit_code == 0, result.output
    assert _state(repo) == before


def test_a_same_second_change_here_is_not_undone_by_its_own_older_version(cli, repo, remote):
    with freeze_time("2026-03-01T10:00:00Z"):
        assert cli("task", "start", "s1").exit_code == 0
        assert cli("checkpoint", input="first").exit_code == 0
        assert cli("sync", "push").exit_code == 0
        pushed = read_remote(remote, machine_ref(repo), "tasks/s1.yaml")
        record = state_dir(repo) / "tasks" / "s1.yaml"
        # In the same second, until this machine's newer version sorts below the pushed one by its digest
        # (the order a timestamp-then-hash rule gets wrong); a version that does not is pushed in turn.
        for n in range(64):
            assert cli("checkpoint", input=f"second {n}").exit_code == 0
            if _sha(record.read_bytes()) < _sha(pushed):
                break
            assert cli("sync", "push").exit_code == 0
            pushed = read_remote(remote, machine_ref(repo), "tasks/s1.yaml")
        else:
            raise AssertionError("no version sorted below the pushed one")
        mine = record.read_bytes()
        assert re.search(rb'updated_at: "?2026-03-01T10:00:00Z', mine)
        result = cli("sync", "pull")
    assert result.exit_code == 0, result.output
    assert "newer record" not in result.stdout and "no longer active" not in result.stdout
    assert record.read_bytes() == mine
    assert events(repo, "sync.import") == [] and events(repo, "sync.conflict") == []
    assert f"second {n}" in cli("checkpoint", "--show").stdout


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def test_a_same_second_change_made_on_top_of_ours_elsewhere_is_taken(cli, repo, remote, tmp_path):
    """The other direction: machine B took A's version and changed it in the same second; A's version sorts
    after B's by its digest, and A still settles on B's (B held A's version first): both machines agree."""
    with freeze_time("2026-03-01T10:00:00Z"):
        # A's version is fixed once written, and its digest depends on this run's paths: one of B's sorts below
        # it with probability digest(A) / 2**256 a try. Up to 64 tries for one version of A, then a new task
        # (and a new clone for B): each round misses with probability 1/65, so six miss about once in 10**11.
        for attempt in range(6):
            task, b = f"s{attempt}", clone(tmp_path, remote, f"b{attempt}")
            assert cli("task", "start", task).exit_code == 0
            write_handoff(repo)
            assert cli("sync", "push").exit_code == 0
            assert cli("sync", "pull", cwd=b).exit_code == 0
            assert cli("sync", "push", cwd=b).exit_code == 0  # B's ref holds A's version first
            ours = (state_dir(repo) / "tasks" / f"{task}.yaml").read_bytes()
            assert cli("task", "resume", task, cwd=b).exit_code == 0
            for n in range(64):
                theirs = (state_dir(b) / "tasks" / f"{task}.yaml").read_bytes()
                if _sha(theirs) < _sha(ours):
                    break
                assert cli("checkpoint", input=f"B {n}", cwd=b).exit_code == 0
            else:
                continue
            break
        else:
            raise AssertionError("no version sorted below A's")
        assert cli("sync", "push", cwd=b).exit_code == 0
        result = cli("sync", "pull")
    assert result.exit_code == 0, result.output
    assert (state_dir(repo) / "tasks" / f"{task}.yaml").read_bytes() == theirs
    assert events(repo, "sync.conflict") == []
    assert cli("sync", "pull", cwd=b).exit_code == 0
    assert (state_dir(b) / "tasks" / f"{task}.yaml").read_bytes() == theirs



@pytest.mark.parametrize("saw_ours", [True, False], ids=["taken-over-after-seeing-ours", "changed-concurrently"])
def test_a_takeover_made_after_seeing_a_clock_ahead_version_replaces_it_there(cli, repo, remote, tmp_path, saw_ours):
    """B's clock runs an hour ahead. B takes the task over and pushes; A pulls B's version, takes it back and
    pushes. A's version is stamped earlier, but A wrote it having seen B's: on B's next pull it replaces B's,
    and B lets go of the task (one worker holds it, as on A). Past the edge, A changed the task without having
    pulled B's version: that is a change on two machines, a `sync.conflict`, and the clocks decide."""
    b = clone(tmp_path, remote, "b")
    with freeze_time("2026-03-01T09:00:00Z"):
        assert cli("task", "start", "s1").exit_code == 0
        assert cli("checkpoint", input="A first").exit_code == 0
        assert cli("sync", "push", "--checkpoints").exit_code == 0
        assert cli("sync", "pull", cwd=b).exit_code == 0
    with freeze_time("2026-03-01T10:01:00Z"):  # B's clock: real time 09:01
        assert cli("task", "resume", "s1", "--force", cwd=b).exit_code == 0
        assert cli("checkpoint", input="B ahead", cwd=b).exit_code == 0
        assert cli("sync", "push", "--checkpoints", cwd=b).exit_code == 0
    with freeze_time("2026-03-01T09:02:00Z"):
        if saw_ours:
            assert cli("sync", "pull").exit_code == 0
            assert cli("task", "resume", "s1", "--force").exit_code == 0
        assert cli("checkpoint", input="A after B").exit_code == 0
        assert cli("sync", "push", "--checkpoints").exit_code == 0
    with freeze_time("2026-03-01T10:03:00Z"):
        result = cli("sync", "pull", cwd=b)
        assert result.exit_code == 0, result.output
        shown = cli("checkpoint", "--show", cwd=b)
        doctor = json.loads(cli("doctor", "--json", cwd=b).stdout)
    double = [f for f in doctor["findings"] if f["code"] in ("task.double-claim", "active.not-active")]
    if saw_ours:
        assert _task(cli, b)["checkpoint"] == _task(cli, repo)["checkpoint"]  # A's note, the later one
        assert "no longer active here" in result.stdout
        assert shown.exit_code == 11  # not active here any more
        assert events(b, "sync.conflict") == [] and double == []
    else:
        assert [e["kept"] for e in events(b, "sync.conflict")] == ["local"]
        assert shown.exit_code == 0 and "B ahead" in shown.stdout


@pytest.mark.parametrize("ahead", ["2026-03-02T09:00:01Z", "2099-01-01T00:00:00Z"], ids=["a-second", "years"])
def test_a_version_from_a_clock_ahead_loses_to_a_change_made_after_it_elsewhere_on_a_third_machine(
        cli, repo, remote, tmp_path, ahead):
    """A (clock ahead) hands off; B, on the true clock, pulls it, resumes and checkpoints (a later change, with
    an earlier `updated_at`); C, which held neither, pulls both: it settles on B's, as A does, because B's
    machine had seen the push that carried A's, whether A's clock was a second or years ahead."""
    b, c = clone(tmp_path, remote, "b"), clone(tmp_path, remote, "c")
    with freeze_time(ahead):
        assert cli("task", "start", "t1").exit_code == 0
        write_handoff(repo)
        assert cli("sync", "push").exit_code == 0
    with freeze_time("2026-03-02T09:00:00Z"):
        assert cli("sync", "pull", cwd=b).exit_code == 0
        assert cli("task", "resume", "t1", cwd=b).exit_code == 0
        assert cli("checkpoint", input="b's later note", cwd=b).exit_code == 0
        assert cli("sync", "push", "--checkpoints", cwd=b).exit_code == 0
        later = (state_dir(b) / "tasks" / "t1.yaml").read_bytes()
    with freeze_time("2026-03-02T09:05:00Z"):
        for where in (c, repo):
            result = cli("sync", "pull", cwd=where)
            assert result.exit_code == 0, result.output
            assert (state_dir(where) / "tasks" / "t1.yaml").read_bytes() == later, where
            assert "b's later note" in cli("brief", "t1", cwd=where).stdout


@pytest.mark.parametrize("notes", [("first: the old state", "second: the NEW state"),
                                   ("second: the NEW state", "first: the old state")])
def test_two_checkpoints_of_one_second_arrive_elsewhere_newest_last(cli, repo, remote, tmp_path, notes):
    """Two checkpoints written in the same second are named by their digests, which cannot say which came
    last; the task record can (its pointer). On the machine that pulls them, the one it points at is the
    newest — the briefing's first and its `last record`, the log's first, `checkpoint --list`'s first —
    in either order of the digests (the two orders of the notes)."""
    assert cli("task", "start", "s1").exit_code == 0
    assert cli("sync", "push").exit_code == 0
    b = clone(tmp_path, remote, "b")
    assert cli("sync", "pull", cwd=b).exit_code == 0
    import datetime

    later = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0) + datetime.timedelta(seconds=2)
    with freeze_time(later):  # one second for both, after the start (versions are ordered by time too)
        for note in notes:
            assert cli("checkpoint", input=note + "\n").exit_code == 0
    assert cli("sync", "push", "--checkpoints").exit_code == 0
    pulled = cli("sync", "pull", cwd=b)
    assert pulled.exit_code == 0, pulled.output
    newest = _task(cli, b)["checkpoint"]
    brief = cli("brief", "s1", cwd=b).stdout
    assert brief.index(f"> {notes[1]}") < brief.index(f"> {notes[0]}"), brief
    assert "last record: checkpoint" in brief and newest in brief.split("last record:")[1].splitlines()[0]
    listed = cli("checkpoint", "--list", cwd=b).stdout.splitlines()
    assert newest.split("/")[-1] in listed[0], listed


def test_checkpoints_of_several_seconds_arrive_elsewhere_in_the_order_of_their_seconds(cli, repo, remote, tmp_path):
    """The remote's trees hold records by digest: a pull brings them in by the seconds their names carry,
    oldest first, so the briefing on the other machine lists them newest first, the task's newest on top."""
    import datetime

    assert cli("task", "start", "s1").exit_code == 0
    assert cli("sync", "push").exit_code == 0
    b = clone(tmp_path, remote, "b")
    later = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0) + datetime.timedelta(seconds=2)
    with freeze_time(later) as clock:
        for second in range(3):
            for n in range(3):
                assert cli("checkpoint", input=f"s{second} n{n}\n").exit_code == 0
            clock.tick(1)
    assert cli("sync", "push", "--checkpoints").exit_code == 0
    assert cli("sync", "pull", cwd=b).exit_code == 0
    shown = [line[2:] for line in cli("brief", "s1", cwd=b).stdout.splitlines() if line.startswith("> s")]
    assert shown[0] == "s2 n2" and [s[:2] for s in shown] == ["s2"] * 3 + ["s1"] * 3 + ["s0"] * 3, shown
