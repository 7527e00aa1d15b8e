"""Git operations under a task (design §5): a rebase in progress, a renamed or deleted branch, and how
`task list` names a detached HEAD."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers import commit_file, events_named, git, start_task


def _meta(repo: Path, printed: str) -> dict:
    import yaml

    return yaml.safe_load((repo / printed).read_text().split("---\n")[1])


@pytest.fixture
def mid_rebase(cli, repo):
    """`feature` (task `feat` active on it) stopped mid-rebase onto `main` by a conflict, after a task
    `loose` was made active on a detached HEAD of the same worktree."""

    def make(backend: str) -> Path:
        git(repo, "checkout", "-q", "--detach")
        start_task(cli, "loose")
        git(repo, "checkout", "-q", "-b", "feature", "main")
        start_task(cli, "feat")
        commit_file(repo, "README", "feature side\n")
        git(repo, "checkout", "-q", "main")
        commit_file(repo, "README", "main side\n")
        git(repo, "checkout", "-q", "feature")
        done = subprocess.run(["git", "rebase", f"--{backend}", "main"], cwd=repo, capture_output=True, check=False)
        assert done.returncode != 0  # stopped on the conflict
        state = "rebase-merge" if backend == "merge" else "rebase-apply"
        assert (repo / ".git" / state).is_dir()
        assert git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "HEAD"  # detached
        return repo

    return make


@pytest.mark.parametrize("backend", ["merge", "apply"])
def test_during_a_rebase_records_go_to_the_branch_being_rebased(cli, mid_rebase, backend):
    repo = mid_rebase(backend)
    result = cli("checkpoint", input="resolving the conflict\n")
    assert result.exit_code == 0, result
    meta = _meta(repo, result.stdout.strip())
    assert meta["task"] == "feat" and meta["branch"] == "feature"
    assert cli("checkpoint", "--show").stdout.count("resolving the conflict") == 1
    assert json.loads(cli("task", "show", "--json").stdout)["id"] == "feat"


def test_after_the_rebase_a_detached_head_is_its_own_place_again(cli, mid_rebase):
    """Past the edge: with no rebase in progress, a detached HEAD is the detached HEAD's task."""
    repo = mid_rebase("merge")
    git(repo, "rebase", "--abort")
    git(repo, "checkout", "-q", "--detach")
    result = cli("checkpoint", input="on the detached head\n")
    assert result.exit_code == 0, result
    meta = _meta(repo, result.stdout.strip())
    assert meta["task"] == "loose" and meta["branch"] is None


def test_task_list_never_shows_double_parentheses(cli, repo, tmp_path):
    git(repo, "checkout", "-q", "--detach")
    start_task(cli, "here-detached")
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "--detach", str(linked))
    start_task(cli, "there-detached", cwd=linked)
    out = cli("task", "list").stdout
    assert "((" not in out and "))" not in out
    rows = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert f"{linked} (detached HEAD)" in rows["there-detached"]
    assert "detached HEAD" in rows["here-detached"]


# ---------------------------------------------------------------- renamed or deleted branches


def _doctor_codes(cli) -> dict[str, dict]:
    doc = json.loads(cli("doctor", "--json").stdout)
    return {f["code"]: f for f in doc["findings"]}


def test_a_renamed_branch_strands_its_task_until_resumed_there(cli, repo):
    git(repo, "checkout", "-q", "-b", "old-name")
    start_task(cli, "t1")
    assert "task.branch-missing" not in _doctor_codes(cli)  # the edge: the branch is there
    git(repo, "branch", "-m", "old-name", "new-name")
    found = _doctor_codes(cli)["task.branch-missing"]
    assert found["level"] == "warn"
    assert "`t1`" in found["message"] and "`old-name`" in found["message"]
    result = cli("task", "resume", "t1")  # no --force
    assert result.exit_code == 0, result
    shown = json.loads(cli("task", "show", "t1", "--json").stdout)
    assert shown["branch"] == "new-name" and shown["status"] == "active"
    resumed = events_named(repo, "task.resume")[-1]
    assert resumed["takeover"] is True and resumed["branch_missing"] is True
    assert resumed["previous"]["branch"] == "old-name"
    assert "task.branch-missing" not in _doctor_codes(cli)
    assert cli("checkpoint", input="after the rename\n").exit_code == 0


def test_a_deleted_branch_is_a_finding_too(cli, repo):
    git(repo, "checkout", "-q", "-b", "doomed")
    start_task(cli, "t1")
    git(repo, "checkout", "-q", "main")
    git(repo, "branch", "-D", "doomed")
    assert "`doomed`" in _doctor_codes(cli)["task.branch-missing"]["message"]


def test_a_task_on_a_branch_that_still_exists_still_needs_force(cli, repo):
    """Past the edge: another branch that exists holds its task; resuming it elsewhere needs --force."""
    git(repo, "checkout", "-q", "-b", "other")
    start_task(cli, "t1")
    git(repo, "checkout", "-q", "main")
    result = cli("task", "resume", "t1")
    assert result.exit_code == 10 and "--force" in result.stderr
    assert "task.branch-missing" not in _doctor_codes(cli)


def test_an_unborn_branch_is_not_missing(cli, unborn_repo):
    assert cli("task", "start", "t1", cwd=unborn_repo).exit_code == 0
    doc = json.loads(cli("doctor", "--json", cwd=unborn_repo).stdout)
    assert "task.branch-missing" not in {f["code"] for f in doc["findings"]}
