"""Git operations under a task (design §5): a rebase in progress, a renamed or deleted branch, and how
`task list` names a detached HEAD."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers import commit_file, events_named, git, run_here, snapshot, start_task, state_dir


def _meta(repo: Path, printed: str) -> dict:
    import yaml

    return yaml.load((repo / printed).read_text().split("---\n")[1], Loader=yaml.CSafeLoader)


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


# ---------------------------------------------------------------- a change that fails part way (design §10)

def _status(repo: Path, task: str) -> str:
    return str(json.loads(run_here("task", "show", task, "--json", cwd=repo).stdout)["status"])


def _not_ok(repo: Path) -> list[str]:
    report = json.loads(run_here("doctor", "--strict", "--json", cwd=repo).stdout)
    return [f["code"] for f in report["findings"] if f["level"] != "ok"]


def _fail_once(repo: Path, op: str, only: str, *argv: str) -> bytes:
    from majordomus.store.fault import Faults

    with Faults(repo, op, 1, only=only).active() as faults:
        failed = run_here(*argv, cwd=repo)
    assert faults.fired and failed.returncode == 12, failed.stderr
    assert failed.stderr.startswith(b"majordomus: ") and b"\nhint: " in failed.stderr
    return failed.stderr


@pytest.mark.parametrize("step", ["index", "pause"])
@pytest.mark.parametrize("argv, new, old", [(("task", "start", "t2"), "t2", "t1"),
                                            (("task", "resume", "t1"), "t1", "t2")])
def test_a_task_change_failing_part_way_is_flagged_by_doctor_and_its_rerun_completes_it(repo, argv, new, old, step):
    """The new task's record has landed. Failing at the index (the replaced task already paused in its
    record, the index still naming it): every command here says no task is active, and doctor flags the
    index entry. Failing one step earlier, at the replaced task's pause (it is still the active one here):
    doctor flags the new task, active by its record and this machine's claim but named by no index entry.
    Either way the same command again makes `new` active and logs the pause once."""
    for task in ("t1", "t2") if new == "t1" else ("t1",):
        assert run_here("task", "start", task, cwd=repo).returncode == 0
    pauses = len(events_named(repo, "task.pause"))
    _fail_once(repo, "rename", "active.json" if step == "index" else f"tasks/{old}.yaml", *argv)
    assert _status(repo, new) == "active"
    if step == "index":
        assert _status(repo, old) == "paused"
        assert run_here("checkpoint", cwd=repo, input="x\n").returncode == 11
        assert _not_ok(repo) == ["active.not-active", "active.not-active"]  # the index's entry, and `new`
    else:
        assert _status(repo, old) == "active"
        report = json.loads(run_here("doctor", "--json", cwd=repo).stdout)
        [found] = [f for f in report["findings"] if f["level"] != "ok"]
        assert found["code"] == "active.not-active" and f"task `{new}`" in found["message"]
        assert found["path"].endswith(f"tasks/{new}.yaml")
    again = run_here(*argv, cwd=repo)
    assert again.returncode == 0, again.stderr
    assert _status(repo, new) == "active" and _status(repo, old) == "paused"
    assert [e["task"] for e in events_named(repo, "task.pause")][pauses:] == [old]
    assert _not_ok(repo) == []


@pytest.mark.parametrize("argv, new, old", [(("task", "start", "t2"), "t2", "t1"),
                                            (("task", "resume", "t1"), "t1", "t2")])
def test_a_task_change_whose_events_fail_writes_the_pause_of_the_replaced_task_on_the_rerun(repo, argv, new, old):
    """Everything landed but the one append of the change's events (the pause of the replaced task among
    them): the rerun finds the paused task, though the index no longer names it, and writes it once."""
    for task in ("t1", "t2") if new == "t1" else ("t1",):
        assert run_here("task", "start", task, cwd=repo).returncode == 0
    pauses = len(events_named(repo, "task.pause"))
    err = _fail_once(repo, "write", "ledger.jsonl", *argv)
    assert b"the event was not written" in err
    assert [e["task"] for e in events_named(repo, "task.pause")][pauses:] == []
    again = run_here(*argv, cwd=repo)
    assert again.returncode == 0, again.stderr
    assert [e["task"] for e in events_named(repo, "task.pause")][pauses:] == [old]
    assert len([e for e in events_named(repo, f"task.{argv[1]}") if e["task"] == new]) == 1
    third = run_here(*argv, cwd=repo)  # past the edge: nothing left to complete, nothing written twice
    assert [e["task"] for e in events_named(repo, "task.pause")][pauses:] == [old]
    assert third.returncode == (0 if argv[1] == "resume" else 10)
    assert _not_ok(repo) == []


@pytest.mark.parametrize("argv", [("task", "release"), ("task", "done")])
def test_a_change_whose_last_directory_fsync_fails_says_it_landed(repo, tmp_path, argv):
    """The last step (the index without the slot) is in place and only its directory fsync failed: exit
    12, and the message says it landed rather than asking for a rerun that would find no task (exit 11).
    One fsync earlier the slot is not left yet: the message asks for the rerun, which completes it."""
    import shutil

    from majordomus.store.fault import Faults

    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    pristine = tmp_path / "pristine"
    shutil.copytree(repo / ".ai", pristine, symlinks=True)

    def restore() -> None:
        shutil.rmtree(repo / ".ai")
        shutil.copytree(pristine, repo / ".ai", symlinks=True)

    with Faults(repo).active() as counting:  # how many fsyncs a clean run makes: the last is the one
        assert run_here(*argv, cwd=repo).returncode == 0
    last = counting.counts["fsync"]
    restore()
    with Faults(repo, "fsync", last, "EIO").active() as faults:
        failed = run_here(*argv, cwd=repo)
    err = failed.stderr.decode()
    assert faults.fired and failed.returncode == 12, err
    assert "every step of it landed" in err and "needs no rerun" in err and "run the same command" not in err
    assert run_here(*argv, cwd=repo).returncode == 11  # what the message said: nothing was left to do
    assert _not_ok(repo) == []
    restore()
    with Faults(repo, "fsync", last - 1, "EIO").active() as faults:
        failed = run_here(*argv, cwd=repo)
    assert faults.fired and failed.returncode == 12 and b"landed" not in failed.stderr
    assert run_here(*argv, cwd=repo).returncode == 0
    assert len(events_named(repo, f"task.{argv[1]}")) == 1 and _not_ok(repo) == []


@pytest.mark.parametrize("status", ["paused", "missing", "elsewhere"])
def test_doctor_flags_an_index_entry_whose_task_is_not_active_there(repo, status):
    """Past the edge: the index names a task that is paused, that has no record, or whose record says it
    is active in another worktree. At the edge (the index and the record agree) doctor is clean."""
    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    assert _not_ok(repo) == []
    record = state_dir(repo) / "tasks" / "t1.yaml"
    if status == "missing":
        record.unlink()
    else:
        text = record.read_text()
        text = (text.replace('status: "active"', 'status: "paused"') if status == "paused"
                else text.replace(f'worktree: "{repo}"', 'worktree: "/elsewhere"'))
        assert text != record.read_text()
        record.write_text(text)
    report = json.loads(run_here("doctor", "--json", cwd=repo).stdout)
    [found] = [f for f in report["findings"] if f["code"] == "active.not-active"]
    assert found["level"] == "fail" and "`t1`" in found["message"] and found["path"].endswith("active.json")


@pytest.mark.parametrize("argv", [("task", "start", "t2"), ("task", "resume", "t1")])
def test_doctor_flags_a_task_active_here_whose_change_has_no_event(repo, argv):
    """Everything but the one append of the change's events landed: the new task works, and doctor says
    its events are missing (task.no-event, naming the command); the same command again writes them and
    doctor is clean. At the edge, the change whose events landed: nothing to say."""
    for task in ("t1", "t2") if argv[1] == "resume" else ("t1",):
        assert run_here("task", "start", task, cwd=repo).returncode == 0
    assert _not_ok(repo) == []
    _fail_once(repo, "write", "ledger.jsonl", *argv)
    report = json.loads(run_here("doctor", "--json", cwd=repo).stdout)
    [found] = [f for f in report["findings"] if f["level"] != "ok"]
    assert found["code"] == "task.no-event" and f"majordomus {argv[0]} {argv[1]} {argv[2]}" in found["hint"]
    assert run_here(*argv, cwd=repo).returncode == 0
    assert _not_ok(repo) == []


def test_a_file_in_tasks_whose_name_is_no_task_id_is_left_out_of_the_list(cli, repo):
    """`tasks/Bad.yaml` copied in by hand is no task: `task list` lists the others and names it on stderr
    (exit 0, not a usage error), and completion still offers the real ids."""
    assert cli("task", "start", "t1").exit_code == 0
    tasks_dir = state_dir(repo) / "tasks"
    (tasks_dir / "Bad.yaml").write_bytes((tasks_dir / "t1.yaml").read_bytes())
    listed = cli("task", "list")
    assert listed.exit_code == 0 and "t1" in listed.stdout and "Bad" not in listed.stdout
    assert "tasks/Bad.yaml is left out: its name is no task id" in listed.stderr
    assert [t["id"] for t in json.loads(cli("task", "list", "--json").stdout)] == ["t1"]


def test_the_worktree_a_task_was_taken_from_neither_writes_to_it_nor_pauses_it(repo, tmp_path):
    """A takeover whose index write did not land leaves the index naming the task in the worktree it was
    taken from, while its record says it is active in the new one. There, a checkpoint is exit 11 naming
    where the task is now (nothing written), and starting another task there leaves it alone (the walk of
    test_spec_write_faults has the retry that removes the entry). One past the edge: the worktree that took
    it writes to it."""
    other = tmp_path / "other"
    git(repo, "worktree", "add", "-q", "-b", "other", str(other))
    assert run_here("task", "start", "t2", cwd=other).returncode == 0
    assert run_here("task", "resume", "t2", "--force", cwd=repo).returncode == 0
    index_file = state_dir(repo) / "active.json"
    index = json.loads(index_file.read_text())
    index[json.dumps([str(other), "other"])] = "t2"  # what the failed index write left
    index_file.write_text(json.dumps(index))
    before = snapshot(repo)
    there = run_here("checkpoint", cwd=other, input="from where it was taken\n")
    assert there.returncode == 11, there.stderr
    assert f"task `t2` was taken over and is active in worktree {repo} on branch main".encode() in there.stderr
    assert b"task resume t2 --force" in there.stderr and snapshot(repo) == before
    assert run_here("task", "start", "t3", cwd=other).returncode == 0
    assert _status(repo, "t2") == "active" and not [e for e in events_named(repo, "task.pause") if e["task"] == "t2"]
    assert run_here("task", "resume", "t2", "--force", cwd=repo).returncode == 0
    assert sorted(json.loads(index_file.read_text()).items()) == sorted(
        {json.dumps([str(repo), "main"]): "t2", json.dumps([str(other), "other"]): "t3"}.items())
    assert run_here("checkpoint", cwd=repo, input="here, where it was taken\n").returncode == 0
    assert _not_ok(repo) == []


def test_a_start_that_failed_part_way_is_listed_as_not_finished_here_never_as_another_machines(cli, repo, tmp_path):
    """A `task start` failing after the new task's record (a full disk) leaves it active by its record and
    this machine's claim, the index not naming it (design §10; doctor's `active.not-active`): `task list`
    says to run it again, never that another machine holds it. Each write of the start failed in turn."""
    import shutil

    from majordomus.store.fault import Faults

    start_task(cli, "t1")
    saved = tmp_path / "saved"
    shutil.copytree(repo / ".ai", saved, symlinks=True)
    unfinished = 0
    for nth in range(1, 16):
        shutil.rmtree(repo / ".ai")
        shutil.copytree(saved, repo / ".ai", symlinks=True)
        with Faults(repo, "write", nth, "ENOSPC").active() as faults:
            failed = run_here("task", "start", "s", cwd=repo)
        if not faults.fired:
            break  # past the last write
        if failed.returncode == 0:
            continue  # a best-effort write (a cache): the start landed
        assert failed.returncode == 12, failed.stderr
        listed = run_here("task", "list", cwd=repo).stdout.decode()
        row = next((line for line in listed.splitlines() if line.startswith("s ")), "")
        assert "another machine" not in row, (nth, listed)
        if row.split()[1:2] == ["active"] and "main" not in row.split()[2:3]:
            unfinished += 1
            assert "not finished" in row and "run its `task start` or `resume` again" in row, (nth, row)
        assert run_here("task", "start", "s", cwd=repo).returncode == 0  # the rerun completes
    assert unfinished >= 1 and nth > 3  # the walk reached the state it is about
