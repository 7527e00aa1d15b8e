"""Tasks (design §5): one active task per (worktree, branch), pauses, takeovers, and their refusals."""

from __future__ import annotations

import json

import pytest
from helpers import git, ledger_events, snapshot, state_dir


def test_start_show_list_done(cli, repo):
    result = cli("task", "start", "fix-login", "--title", "Fix login", "--objective", "Make it work",
                 "--owner", "ann@example.com")
    assert result.exit_code == 0 and "fix-login" in result.stdout
    shown = json.loads(cli("task", "show", "--json").stdout)
    assert shown["id"] == "fix-login" and shown["title"] == "Fix login" and shown["objective"] == "Make it work"
    assert shown["owner"] == "ann@example.com" and shown["status"] == "active"
    assert shown["worktree"] == str(repo) and shown["branch"] == "main"
    assert "status: active" in cli("task", "show").stdout
    listed = json.loads(cli("task", "list", "--json").stdout)
    assert [t["id"] for t in listed] == ["fix-login"]
    assert cli("task", "done").exit_code == 0
    assert json.loads(cli("task", "show", "fix-login", "--json").stdout)["status"] == "done"
    assert cli("task", "show").exit_code == 11
    assert [e["event"] for e in ledger_events(repo)] == ["task.start", "task.done"]


def test_owner_from_environment(cli, repo, monkeypatch):
    monkeypatch.setenv("MAJORDOMUS_OWNER", "agent-7")
    cli("task", "start", "t1")
    assert json.loads(cli("task", "show", "--json").stdout)["owner"] == "agent-7"


def test_starting_another_pauses_the_previous(cli, repo):
    cli("task", "start", "a")
    cli("task", "start", "b")
    tasks = {t["id"]: t["status"] for t in json.loads(cli("task", "list", "--json").stdout)}
    assert tasks == {"a": "paused", "b": "active"}
    assert [e["event"] for e in ledger_events(repo)] == ["task.start", "task.pause", "task.start"]
    assert cli("task", "resume", "a").exit_code == 0
    tasks = {t["id"]: t["status"] for t in json.loads(cli("task", "list", "--json").stdout)}
    assert tasks == {"a": "active", "b": "paused"}


def test_one_active_task_per_branch(cli, repo):
    cli("task", "start", "a")
    git(repo, "checkout", "-q", "-b", "other")
    cli("task", "start", "b")
    tasks = {t["id"]: t["status"] for t in json.loads(cli("task", "list", "--json").stdout)}
    assert tasks == {"a": "active", "b": "active"}


def test_resume_active_elsewhere_refused_then_forced(cli, repo, tmp_path):
    cli("task", "start", "a")
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt), "-b", "side")
    before = snapshot(repo)
    refused = cli("task", "resume", "a", cwd=wt)
    assert refused.exit_code == 10
    assert f"active in worktree {repo} on branch main" in refused.stderr and "--force" in refused.stderr
    assert snapshot(repo) == before
    assert cli("task", "resume", "a", "--force", cwd=wt).exit_code == 0
    last = ledger_events(repo)[-1]
    assert last["event"] == "task.resume" and last["takeover"] is True
    assert last["previous"] == {"worktree": str(repo), "branch": "main", "status": "active"}
    assert last["worktree"] == str(wt) and last["branch"] == "side"
    assert cli("task", "show").exit_code == 11  # no longer active in the main worktree
    assert json.loads(cli("task", "show", "--json", cwd=wt).stdout)["id"] == "a"


def test_invalid_and_duplicate_ids(cli, repo):
    bad = cli("task", "start", "Bad ID")
    assert bad.exit_code == 2 and "not a valid task id" in bad.stderr
    assert not (repo / ".ai").exists()
    cli("task", "start", "a")
    before = snapshot(repo)
    dup = cli("task", "start", "a")
    assert dup.exit_code == 10 and "already exists" in dup.stderr and "task resume a" in dup.stderr
    assert snapshot(repo) == before
    missing = cli("task", "resume", "nope")
    assert missing.exit_code == 2 and "no task `nope`" in missing.stderr
    assert snapshot(repo) == before


def test_task_ids_at_the_edges(cli, repo):
    assert cli("task", "start", "a" * 64).exit_code == 0
    assert cli("task", "start", "b" * 65).exit_code == 2
    assert cli("task", "start", "-x").exit_code == 2
    assert cli("task", "start", "0.a_b-c").exit_code == 0


def test_hand_broken_task_record_is_a_clear_error(cli, repo):
    cli("task", "start", "a")
    (state_dir(repo) / "tasks" / "a.yaml").write_text("id: [unclosed\n")
    result = cli("task", "show")
    assert result.exit_code == 12
    assert "Traceback" not in result.stderr
    assert "unreadable" in result.stderr and "majordomus doctor" in result.stderr


@pytest.mark.parametrize("args", [("brief", ""), ("task", "show", ""), ("log", ""), ("task", "done", ""),
                                  ("task", "release", ""), ("search", "x", "--task", "")])
def test_an_empty_task_name_is_no_task_id_never_the_active_task(cli, repo, args):
    """A TASK given as the empty string is a name given, and no task id: exit 2, nothing written — never the
    active task in its place (`brief ''` briefed the active task, `task done ''` would have ended it)."""
    assert cli("task", "start", "t1").exit_code == 0
    before = snapshot(repo)
    result = cli(*args)
    assert result.exit_code == 2 and "`` is not a valid task id" in result.stderr, (args, result.output)
    assert snapshot(repo) == before
