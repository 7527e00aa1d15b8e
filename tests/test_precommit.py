"""The real `pre-commit` runs `.pre-commit-hooks.yaml` from a local clone, offline (`pre-commit try-repo`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import BIN, git, run_here, state_dir

HOOKS_FILE = Path(__file__).resolve().parent.parent / ".pre-commit-hooks.yaml"
PRE_COMMIT = shutil.which("pre-commit", path=str(BIN)) or shutil.which("pre-commit")


@pytest.fixture
def hook_repo(tmp_path: Path) -> Path:
    """A git repository that holds exactly this project's .pre-commit-hooks.yaml, committed."""
    path = tmp_path / "hook-repo"
    git(tmp_path, "init", "-q", str(path))
    shutil.copy(HOOKS_FILE, path / ".pre-commit-hooks.yaml")
    git(path, "add", ".pre-commit-hooks.yaml")
    git(path, "commit", "-q", "-m", "hooks")
    return path


def try_repo(hook_repo: Path, repo: Path, hook_id: str, *extra: str) -> subprocess.CompletedProcess:
    assert PRE_COMMIT, "pre-commit is in the test extra"
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", PRE_COMMIT_HOME=str(repo.parent / "pc"))
    return subprocess.run([PRE_COMMIT, "try-repo", str(hook_repo), hook_id, "--verbose", *extra], cwd=repo,
                          capture_output=True, text=True, env=env, timeout=300, check=False)


def checkpoint_at(repo: Path) -> str | None:
    text = (state_dir(repo) / "tasks" / "t1.yaml").read_text()
    return json.loads(text.split("checkpoint_at: ", 1)[1].split("\n", 1)[0])


def test_the_hook_file_names_both_hooks():
    import yaml

    hooks = {h["id"]: h for h in yaml.load(HOOKS_FILE.read_text(), Loader=yaml.CSafeLoader)}
    assert set(hooks) == {"majordomus-doctor", "majordomus-checkpoint"}
    assert hooks["majordomus-doctor"]["entry"] == "majordomus doctor"
    assert "majordomus check --checkpoint" in hooks["majordomus-checkpoint"]["entry"]


def test_checkpoint_hook_moves_the_checkpoint_time(hook_repo, repo):
    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    assert checkpoint_at(repo) is None
    result = try_repo(hook_repo, repo, "majordomus-checkpoint", "--hook-stage", "post-commit")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Passed" in result.stdout
    assert checkpoint_at(repo) is not None


def test_checkpoint_hook_passes_quietly_without_an_active_task(hook_repo, repo):
    result = try_repo(hook_repo, repo, "majordomus-checkpoint", "--hook-stage", "post-commit")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Passed" in result.stdout


def test_checkpoint_hook_shows_a_real_error(hook_repo, repo):
    (repo / ".ai").mkdir()
    (repo / ".ai" / "config.yaml").write_text("checkpoint: [broken\n")
    result = try_repo(hook_repo, repo, "majordomus-checkpoint", "--hook-stage", "post-commit")
    assert result.returncode == 1 and "Failed" in result.stdout and "not valid YAML" in result.stdout


def test_doctor_hook_passes_on_a_healthy_repository(hook_repo, repo):
    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    assert run_here("doctor", cwd=repo).returncode == 0
    result = try_repo(hook_repo, repo, "majordomus-doctor")
    assert result.returncode == 0 and "Passed" in result.stdout, result.stdout + result.stderr


def test_doctor_hook_fails_on_a_real_finding(hook_repo, repo):
    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    git(repo, "add", "-f", ".ai/local/state/tasks/t1.yaml")  # state must never be staged: a doctor failure
    assert run_here("doctor", cwd=repo).returncode == 1
    result = try_repo(hook_repo, repo, "majordomus-doctor")
    assert result.returncode == 1 and "Failed" in result.stdout, result.stdout + result.stderr
