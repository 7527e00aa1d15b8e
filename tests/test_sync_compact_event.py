"""`sync compact` whose ledger event did not land (design §10): the remote has the fold, the next compact
writes the event and says so, and the one after folds nothing and writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import events_named, git, run_here, snapshot, state_dir
from helpers.sync import clone, machine_id, machine_ref, remote_refs

from majordomus.store.fault import Faults

STATE = "refs/majordomus/state"


def _machines(cli, repo: Path, remote: Path, tmp_path: Path) -> tuple[Path, Path]:
    b = clone(tmp_path, remote, "b")
    for where, name in ((repo, "ta"), (b, "tb")):
        assert cli("task", "start", name, cwd=where).exit_code == 0
        assert cli("sync", "push", cwd=where).exit_code == 0
    return repo, b


@pytest.mark.parametrize("earlier", [False, True], ids=["first-fold", "onto-a-state"])
def test_a_compact_whose_event_did_not_land_is_completed_by_the_next_one(cli, repo, remote, tmp_path, earlier):
    a, b = _machines(cli, repo, remote, tmp_path)
    if earlier:  # the state exists already: the fold that failed is its child
        c = clone(tmp_path, remote, "c")
        assert cli("task", "start", "tc", cwd=c).exit_code == 0 and cli("sync", "push", cwd=c).exit_code == 0
        assert cli("sync", "compact", "--machine", machine_id(c), cwd=a).exit_code == 0
    gone = machine_id(b)
    with Faults(a, "write", 1, only="ledger.jsonl").active() as faults:
        failed = run_here("-C", str(a), "sync", "compact", "--machine", gone, text=True)
    assert faults.fired and failed.returncode == 12, failed
    assert len(events_named(a, "sync.compact")) == int(earlier)
    assert remote_refs(remote) == sorted(["refs/heads/main", STATE, machine_ref(a)])  # it did land there
    folded = git(remote, "rev-parse", STATE)

    again = run_here("-C", str(a), "sync", "compact", "--machine", gone, text=True)
    assert again.returncode == 0, again
    assert "stopped before writing its ledger event; the event is written now" in again.stderr
    assert again.stdout == f"folded 1 machine into refs/majordomus/state on origin ({folded[:7]}): {gone}\n"
    event = events_named(a, "sync.compact")[-1]
    assert event["commit"] == folded and event["folded"] == [gone] and event["remote"] == "origin"
    assert machine_ref(b) not in git(a, "for-each-ref", "--format=%(refname)")  # its tracking ref went
    assert remote_refs(remote) == sorted(["refs/heads/main", STATE, machine_ref(a)])

    # Completed: the same command now says what is true of the remote, and writes nothing.
    before = snapshot(a)
    third = cli("sync", "compact", "--machine", gone, cwd=a)
    assert third.exit_code == 2 and f"no machine `{gone}` on origin" in third.stderr
    assert snapshot(a) == before and len(events_named(a, "sync.compact")) == 1 + int(earlier)
    assert run_here("-C", str(a), "ledger", "--verify").returncode == 0


def test_a_compact_folded_elsewhere_is_not_taken_for_ours(cli, repo, remote, tmp_path):
    a, b = _machines(cli, repo, remote, tmp_path)
    c = clone(tmp_path, remote, "c")
    assert cli("sync", "pull", cwd=a).exit_code == 0  # A has seen B's ref
    assert cli("sync", "compact", "--machine", machine_id(b), cwd=c).exit_code == 0
    before = (state_dir(a) / "ledger.jsonl").read_bytes()
    result = cli("sync", "compact", "--machine", machine_id(b), cwd=a)
    assert result.exit_code == 2 and "no machine" in result.stderr
    assert (state_dir(a) / "ledger.jsonl").read_bytes() == before


def test_a_compact_logged_whose_fetch_failed_is_not_logged_twice(cli, repo, remote, tmp_path):
    a, b = _machines(cli, repo, remote, tmp_path)
    gone = machine_id(b)
    assert cli("sync", "compact", "--machine", gone, cwd=a).exit_code == 0
    tracking = "refs/majordomus/remotes/origin/state"
    git(a, "update-ref", "-d", tracking)  # as if the fetch after the event had not moved it
    result = cli("sync", "compact", "--machine", gone, cwd=a)
    assert result.exit_code == 2 and f"no machine `{gone}` on origin" in result.stderr
    assert len(events_named(a, "sync.compact")) == 1
    assert git(a, "rev-parse", tracking) == git(remote, "rev-parse", STATE)
