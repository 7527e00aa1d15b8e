"""design §5's lifecycle rules that had no test: `done` is terminal, `done` elsewhere needs `--force`, an orphaned
task is taken over without it, and a write re-checks under the lock that its task is still the active one."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Callable

import pytest
from helpers import (
    MAJORDOMUS,
    assert_refused,
    events_named,
    git,
    ledger_events,
    reading_stdin,
    records_in,
    run_here,
    snapshot,
    start_task,
    start_task_at,
)


def test_done_is_terminal_unless_reopened(cli, repo):
    start_task(cli)
    assert cli("task", "done").exit_code == 0
    assert_refused(cli, repo, ["task", "resume", "t1"], 10, "`t1` is done", "--reopen")
    result = cli("task", "resume", "t1", "--reopen")
    assert result.exit_code == 0, result
    assert [e["task"] for e in events_named(repo, "task.reopen")] == ["t1"]
    assert json.loads(cli("task", "show", "--json").stdout)["status"] == "active"


def test_done_of_a_task_active_elsewhere_needs_force(cli, repo, tmp_path):
    start_task(cli)
    other = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "other", str(other))
    assert_refused(cli, repo, ["task", "done", "t1"], 10, f"active in worktree {repo}", "--force", cwd=other)
    assert cli("task", "done", "t1", "--force", cwd=other).exit_code == 0
    assert json.loads(cli("task", "show", "t1", "--json").stdout)["status"] == "done"


def test_an_orphaned_task_is_reported_and_taken_over_without_force(cli, repo, tmp_path):
    gone = tmp_path / "gone"
    git(repo, "worktree", "add", "-q", "-b", "gone", str(gone))
    start_task(cli, "t1", cwd=gone)
    git(repo, "worktree", "remove", "--force", str(gone))
    report = json.loads(cli("doctor", "--json").stdout)
    orphaned = [f for f in report["findings"] if f["code"] == "task.orphaned"]
    assert len(orphaned) == 1 and orphaned[0]["level"] == "warn" and str(gone) in orphaned[0]["message"]
    assert "no longer exists" in cli("brief", "t1").stdout
    row = next(line for line in cli("task", "list").stdout.splitlines() if line.startswith("t1 "))
    assert f"gone worktree: {gone} (gone)" in row and "another machine" not in row, row  # this machine's
    assert cli("task", "resume", "t1").exit_code == 0  # no --force needed
    [resume] = events_named(repo, "task.resume")
    assert resume["takeover"] is True and resume["previous"]["worktree"] == str(gone)


def test_task_list_says_where_an_active_task_is_active(cli, repo, tmp_path):
    start_task(cli, "t1", "--title", "漢字のタイトル")
    other = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "other", str(other))
    start_task(cli, "t2", cwd=other)
    listing = cli("task", "list")
    assert listing.exit_code == 0
    row = next(line for line in listing.stdout.splitlines() if line.startswith("t2 "))
    assert str(other) in row and "other" in row
    listed = {t["id"]: t for t in json.loads(cli("task", "list", "--json").stdout)}
    assert (listed["t2"]["worktree"], listed["t2"]["branch"]) == (str(other), "other")


def race(repo: Path, command: str, meanwhile: Callable[[], None]) -> tuple[int, bytes, bytes]:
    """Run COMMAND for the active task; once it waits for its body, run `meanwhile`; then give it the body."""
    proc = subprocess.Popen([MAJORDOMUS, command], cwd=repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        assert reading_stdin(proc.pid), proc.stderr.read() if proc.poll() is not None and proc.stderr else b""
        meanwhile()
        out, err = proc.communicate(b"## State\ns\n## Decisions\nd\n## Open items\no\n## Next actions\nn\n",
                                    timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err


needs_proc = pytest.mark.skipif(not Path("/proc/self/syscall").exists(), reason="needs Linux /proc/PID/syscall")


@needs_proc
@pytest.mark.parametrize("command", ["checkpoint", "handoff"])
def test_a_write_whose_task_changed_while_it_read_stdin_is_refused(repo, command):
    """§5: under the lock and after reading stdin, the task must still be the active one here: exit 11, no
    record, no event after the takeover, t1's record untouched."""
    start_task_at(repo)
    code, out, err = race(repo, command, lambda: start_task_at(repo, "t2"))
    assert code == 11, err
    assert b"t1" in err and out == b""
    assert records_in(repo, f"{command}s") == []
    assert ledger_events(repo)[-1]["event"] == "task.start"  # t2's start is the last event: nothing after it
    shown = json.loads(run_here("task", "show", "t1", "--json", cwd=repo).stdout)
    assert shown["status"] == "paused" and shown["checkpoint"] is None and shown["handoff"] is None


@needs_proc
@pytest.mark.parametrize("command", ["checkpoint", "handoff"])
def test_the_refused_race_writes_nothing_at_all(repo, command):
    start_task_at(repo)
    seen: list[dict[str, tuple[int, str]]] = []

    def takeover() -> None:
        start_task_at(repo, "t2")
        seen.append(snapshot(repo))

    code, _, _ = race(repo, command, takeover)
    assert code == 11
    assert snapshot(repo) == seen[0]
