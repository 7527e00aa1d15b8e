"""End to end across two clones: a handoff written on A, pushed, pulled on B, resumed and briefed there."""

from __future__ import annotations

import json

import pytest
from freezegun import freeze_time
from helpers import state_dir
from helpers.sync import clone, events, git_view, machine_ref, remote_refs

HANDOFF = """## State
The callback is normalised before the comparison; tests pass locally.

## Decisions
Keep the trailing-slash rule in normalise(), not in the router.

## Open items
The IdP sandbox rejects our redirect URI.

## Next actions
Register the redirect URI with the IdP, then run the end-to-end login test.
"""


def test_handoff_pushed_from_a_is_resumed_and_briefed_on_b(cli, repo, remote, tmp_path):
    b = clone(tmp_path, remote, "b")
    with freeze_time("2026-03-02T09:00:00Z"):
        assert cli("task", "start", "fix-login", "--objective", "Login callbacks are compared correctly").exit_code == 0
        assert cli("checkpoint", input="A: reproduced the mismatch with the fixture").exit_code == 0
    with freeze_time("2026-03-02T09:30:00Z"):
        assert cli("checkpoint", input="A: the cause is normalisation, not comparison").exit_code == 0
    with freeze_time("2026-03-02T10:00:00Z"):
        handed = cli("handoff", input=HANDOFF)
        assert handed.exit_code == 0, handed.output
    a_checkpoints = sorted(p.name for p in (state_dir(repo) / "checkpoints").iterdir())
    [a_handoff] = [p.name for p in (state_dir(repo) / "handoffs").iterdir()]
    before_a, before_b = git_view(repo), git_view(b)

    assert cli("sync", "push", "--checkpoints").exit_code == 0
    pulled = cli("sync", "pull", cwd=b)
    assert pulled.exit_code == 0 and "imported from origin: 1 task, 1 handoff, 2 checkpoints" in pulled.stdout
    assert {e["path"] for e in events(b, "sync.import")} == (
        {"tasks/fix-login.yaml", f"handoffs/{a_handoff}"} | {f"checkpoints/{n}" for n in a_checkpoints})

    # B resumes the handed-off task and is briefed from A's records.
    with freeze_time("2026-03-02T11:00:00Z"):
        assert cli("task", "resume", "fix-login", cwd=b).exit_code == 0
        brief = cli("brief", cwd=b)
    assert brief.exit_code == 0, brief.output
    assert "Register the redirect URI with the IdP" in brief.stdout  # A's handoff body
    assert "Keep the trailing-slash rule in normalise()" in brief.stdout
    shown = cli("handoff", "--show", "fix-login", cwd=b)
    assert shown.exit_code == 0 and "The IdP sandbox rejects our redirect URI." in shown.stdout
    listed = json.loads(cli("checkpoint", "--list", "--json", cwd=b).stdout)
    assert sorted(item["name"] for item in listed) == a_checkpoints
    assert all(item["worktree"] == str(repo) for item in listed)  # written on A, and they say so

    # B carries on; its checkpoint is in its brief, after A's handoff.
    with freeze_time("2026-03-02T11:30:00Z"):
        assert cli("checkpoint", input="B: redirect URI registered; e2e test next", cwd=b).exit_code == 0
        again = cli("brief", cwd=b)
    assert "B: redirect URI registered" in again.stdout and "Register the redirect URI" in again.stdout

    # And back: A sees B's work after a pull, and neither clone's git state moved.
    assert cli("sync", "push", "--checkpoints", cwd=b).exit_code == 0
    assert "imported from origin: 1 task, 0 handoffs, 1 checkpoint" in cli("sync", "pull").stdout
    task = json.loads(cli("task", "show", "fix-login", "--json").stdout)
    assert task["status"] == "active" and task["worktree"] == str(b)
    assert cli("checkpoint", input="A: not mine any more").exit_code == 11
    assert git_view(repo) == before_a and git_view(b) == before_b
    assert remote_refs(remote) == sorted(["refs/heads/main", machine_ref(repo), machine_ref(b)])
    # The handoff was written on A and resumed on B: no conflict, whoever changed the task last.
    assert events(repo, "sync.conflict") == [] and events(b, "sync.conflict") == []


def test_handoff_without_shared_checkpoints_still_briefs(cli, repo, remote, tmp_path):
    b = clone(tmp_path, remote, "b")
    cli("task", "start", "fix-login")
    cli("checkpoint", input="kept on A only")
    assert cli("handoff", input=HANDOFF).exit_code == 0
    assert cli("sync", "push").exit_code == 0  # without --checkpoints: the handoff names records B lacks
    assert cli("sync", "pull", cwd=b).exit_code == 0
    assert cli("task", "resume", "fix-login", cwd=b).exit_code == 0
    brief = cli("brief", cwd=b)
    assert brief.exit_code == 0 and "Register the redirect URI with the IdP" in brief.stdout
    assert "kept on A only" not in brief.stdout
    assert cli("checkpoint", "--show", cwd=b).stdout == ""


@pytest.mark.parametrize("wrote", ["handoff", "checkpoint"])
def test_a_handoff_from_a_version_that_lost_a_conflict_is_still_briefed(cli, repo, remote, tmp_path, wrote):
    """B takes the task over and hands it off; A, not having seen that, checkpoints a minute later and
    pulls: the task changed on two machines and A's record (newer) is kept. B's handoff is part of what
    happened: A's record now points at it, and the briefing shows it and A's later checkpoint. At the edge,
    B only checkpointed: A's record names no handoff, as before."""
    b = clone(tmp_path, remote, "b")
    with freeze_time("2026-03-02T09:00:00Z"):
        assert cli("task", "start", "s").exit_code == 0
        assert cli("checkpoint", input="c1 by A").exit_code == 0
        assert cli("sync", "push").exit_code == 0
        assert cli("sync", "pull", cwd=b).exit_code == 0
    with freeze_time("2026-03-02T09:01:00Z"):
        assert cli("task", "resume", "s", "--force", cwd=b).exit_code == 0
        body = HANDOFF.replace("tests pass locally", "HANDOFF-BY-B")
        written = cli("handoff", input=body, cwd=b) if wrote == "handoff" else cli("checkpoint", input="by B", cwd=b)
        assert written.exit_code == 0, written.output
        assert cli("sync", "push", "--checkpoints", cwd=b).exit_code == 0
    with freeze_time("2026-03-02T09:02:00Z"):
        assert cli("checkpoint", input="c2 by A").exit_code == 0
        pulled = cli("sync", "pull")
        assert pulled.exit_code == 0, pulled.output
        brief = cli("brief").stdout
    assert [e["kept"] for e in events(repo, "sync.conflict")] == ["local"]
    task = json.loads(cli("task", "show", "s", "--json").stdout)
    assert task["status"] == "active" and "c2 by A" in brief
    if wrote == "handoff":
        assert task["handoff"] == json.loads(cli("task", "show", "s", "--json", cwd=b).stdout)["handoff"]
        assert "HANDOFF-BY-B" in brief
        assert "HANDOFF-BY-B" in cli("handoff", "--show", "s").stdout
    else:
        assert task["handoff"] is None and "HANDOFF-BY-B" not in brief
