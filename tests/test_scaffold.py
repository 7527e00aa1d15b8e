"""`majordomus init`: idempotent, never overwrites a user's file."""

from __future__ import annotations


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
