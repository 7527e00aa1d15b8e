"""The state is real or it is not touched: hooks, task reads, refusals, profile names and config minimums.

Each rule is tested at its edge (what passes) and one past it (what is refused, with nothing written).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import assert_refused, run_here, snapshot, state_dir

START = b'{"session_id":"s1","source":"startup"}'
STOP = b'{"session_id":"s1","last_assistant_message":"done"}'


def _started(repo: Path) -> None:
    assert run_here("task", "start", "t1", "--title", "t", cwd=repo).returncode == 0
    assert run_here("checkpoint", cwd=repo, input="a note\n").returncode == 0


def _hooks(repo: Path) -> None:
    for name, payload in (("session-start", START), ("stop", STOP)):
        result = run_here("hook", name, cwd=repo, input=payload)
        assert result.returncode == 0, result.stderr  # hooks fail open


# ---------------------------------------------------------------- the hooks write only into a real state


def test_hooks_record_in_a_real_state(repo):
    _started(repo)
    ledger = state_dir(repo) / "ledger.jsonl"
    before = ledger.read_bytes()
    _hooks(repo)
    added = ledger.read_bytes()[len(before):].decode()
    assert '"session.start"' in added and '"session.stop"' in added
    assert (state_dir(repo) / "cache" / "conversations.json").is_file()


@pytest.mark.parametrize("linked", [".ai", ".ai/local", ".ai/local/state", ".ai/local/state/cache"])
def test_hooks_write_nothing_through_a_link(repo, tmp_path, linked):
    _started(repo)
    assert run_here("hook", "session-start", cwd=repo, input=START).returncode == 0  # the memory exists
    outside = tmp_path / "outside"
    os.rename(repo / linked, outside)
    os.symlink(outside, repo / linked)
    before_outside, before_repo = snapshot(outside), snapshot(repo)
    for name, payload in (("session-start", START), ("stop", STOP)):
        result = run_here("hook", name, cwd=repo, input=payload, text=True)
        assert result.returncode == 0, result.stderr
        if linked != ".ai/local/state/cache":  # the ledger is not reached through the cache
            assert "symbolic link" in result.stderr + result.stdout, (result.stdout, result.stderr)
    assert snapshot(outside) == before_outside
    if linked != ".ai/local/state/cache":
        assert snapshot(repo) == before_repo


# ---------------------------------------------------------------- task reads refuse a linked tasks/


TASK_READERS = [("brief",), ("task", "show"), ("task", "show", "t1"), ("task", "list"),
                ("context", "pin", "decision", "--", "a pin"), ("checkpoint",)]


@pytest.mark.parametrize("args", TASK_READERS)
def test_task_reads_in_a_real_tasks_directory(cli, repo, args):
    _started(repo)
    result = cli(*args, input="another note\n")
    assert result.exit_code == 0, result


@pytest.mark.parametrize("args", TASK_READERS)
def test_task_reads_refuse_a_linked_tasks_directory(cli, repo, tmp_path, args):
    _started(repo)
    outside = tmp_path / "outside-tasks"
    os.rename(state_dir(repo) / "tasks", outside)
    os.symlink(outside, state_dir(repo) / "tasks")
    before = snapshot(outside)
    assert_refused(cli, repo, args, 12, f"{state_dir(repo) / 'tasks'} is a symbolic link", input="another note\n")
    assert snapshot(outside) == before


# ---------------------------------------------------------------- a refused task change writes nothing


@pytest.mark.parametrize("args", [("task", "resume", "nope"), ("task", "done", "nope"),
                                  ("task", "release", "nope"), ("task", "start", "t2", "--from", "nope")])
def test_an_unknown_task_is_refused_before_the_state_exists(cli, repo, args):
    assert not (repo / ".ai").exists()
    assert_refused(cli, repo, args, 2, "no task `nope`")
    assert not (repo / ".ai").exists()


@pytest.mark.parametrize("args", [("task", "done"), ("task", "release")])
def test_no_task_here_is_refused_before_the_state_exists(cli, repo, args):
    assert_refused(cli, repo, args, 11, "no active task")
    assert not (repo / ".ai").exists()


def test_a_known_task_changes_at_the_edge(cli, repo):
    assert cli("task", "start", "t1").exit_code == 0
    assert cli("task", "start", "t2", "--from", "t1").exit_code == 0
    assert cli("task", "resume", "t1").exit_code == 0
    assert cli("task", "release", "t1").exit_code == 0
    assert cli("task", "done", "t1").exit_code == 0
    assert cli("task", "show", "t1").stdout.count("status: done") == 1


def test_an_unknown_task_is_refused_in_an_existing_state(cli, repo):
    assert cli("task", "start", "t1").exit_code == 0
    for args in (("task", "resume", "nope"), ("task", "done", "nope")):
        assert_refused(cli, repo, args, 2, "no task `nope`")
