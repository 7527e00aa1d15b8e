"""`majordomus init`: idempotent, never overwrites a user's file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import assert_refused


def test_init_creates_and_keeps(cli, repo):
    first = cli("init")
    assert first.exit_code == 0 and first.stdout.count("created") == 2
    cfg = repo / ".ai" / "config.yaml"
    cfg.write_text("checkpoint:\n  max_body_lines: 3\n")
    second = cli("init")
    assert second.exit_code == 0 and "created" not in second.stdout
    assert cfg.read_text() == "checkpoint:\n  max_body_lines: 3\n"
    assert (repo / ".ai" / "local" / ".gitignore").read_text() == "*\n"


def test_init_in_a_linked_worktree_writes_to_the_main_one(cli, repo, tmp_path):
    from helpers import git

    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt), "-b", "side")
    assert cli("init", cwd=wt).exit_code == 0
    assert (repo / ".ai" / "config.yaml").is_file() and not (wt / ".ai").exists()


@pytest.mark.parametrize("kind", ["dangling", "to a file", "directory"])
def test_init_refuses_a_template_path_that_is_a_link_or_not_a_file(cli: Any, repo: Path, tmp_path: Path,
                                                                    kind: str) -> None:
    profiles = repo / ".ai" / "profiles"
    profiles.mkdir(parents=True)
    target = profiles / "default.md"
    if kind == "directory":
        target.mkdir()
    else:
        outside = tmp_path / "outside.md"
        if kind == "to a file":
            outside.write_text("# injected\n")
        target.symlink_to(outside)
    what = "is not a regular file" if kind == "directory" else "is a symbolic link"
    result = assert_refused(cli, repo, ("init",), 12, f"{target} {what}", "nothing was written")
    assert "kept" not in result.stderr and not (repo / ".ai" / "config.yaml").exists()


def test_one_past_init_keeps_a_regular_profile_and_says_so(cli: Any, repo: Path) -> None:
    profiles = repo / ".ai" / "profiles"
    profiles.mkdir(parents=True)
    (profiles / "default.md").write_text("# mine\n")
    result = cli("init")
    assert result.exit_code == 0 and f"kept: {profiles / 'default.md'}" in result.stdout, result
    assert (profiles / "default.md").read_text() == "# mine\n"
