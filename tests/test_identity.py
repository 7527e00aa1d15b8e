"""Identity from git (design §4) and where state lives (§2), on the repository shapes users have."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import commit_file, git, state_dir

from majordomus import lifecycle
from majordomus.git import status as git_status
from majordomus.workspace import Workspace


def meta_of(repo_or_wt: Path, rel: str) -> dict:
    import yaml

    path = Path(rel) if rel.startswith("/") else repo_or_wt / rel
    return yaml.load(path.read_text().split("---\n")[1], Loader=yaml.CSafeLoader)


def test_linked_worktree_shares_state_with_main(cli, repo, tmp_path):
    wt = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(wt), "-b", "feature")
    assert cli("task", "start", "t1", cwd=wt).exit_code == 0
    result = cli("checkpoint", input="from the linked worktree\n", cwd=wt)
    rel = result.stdout.strip()
    assert rel.startswith(str(state_dir(repo)))  # outside this worktree: printed absolute
    meta = meta_of(wt, rel)
    assert meta["worktree"] == str(wt) and meta["branch"] == "feature"
    assert not (wt / ".ai").exists()
    assert json.loads(cli("task", "list", "--json").stdout)[0]["worktree"] == str(wt)
    # the main worktree sees the record, but --show is scoped to its own worktree and branch
    assert cli("checkpoint", "--show").exit_code == 11
    assert len(json.loads(cli("checkpoint", "--list", "--json").stdout)) == 1


def test_bare_main_worktree_keeps_state_in_common_dir(tmp_path):
    src = tmp_path / "src"
    git(tmp_path, "init", "-q", str(src))
    commit_file(src, "a", "a")
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(src), str(bare))
    wt = tmp_path / "wt"
    git(bare, "worktree", "add", "-q", str(wt), "main")
    ws = Workspace.open(str(wt))
    assert ws.repo.main_worktree is None
    assert ws.paths.root == str(bare / "majordomus" / "local" / "state")
    import io

    from majordomus import checkpoint

    lifecycle.start(ws, "t1")
    written = checkpoint.write(ws, io.BytesIO(b"bare main\n"))
    assert written.path.startswith(str(bare / "majordomus" / "local" / "state" / "checkpoints"))
    assert (bare / "majordomus" / "local" / ".gitignore").read_text() == "*\n"


@pytest.mark.parametrize("branch,slug", [
    ("feature/login", "feature-login"),
    ("fix+more", "fix-more"),
    ("zkouška-větev", "zkou-ka-v-tev"),
    ("a" * 80, "a" * 64),
])
def test_branch_names_and_slugs(cli, repo, branch, slug):
    git(repo, "checkout", "-q", "-b", branch)
    cli("task", "start", "t1")
    rel = cli("checkpoint", input="x\n").stdout.strip()
    assert f"--{slug}--" in rel
    assert meta_of(repo, rel)["branch"] == branch


def test_repository_inside_a_submodule(repo, tmp_path):
    sup = tmp_path / "super"
    git(tmp_path, "init", "-q", str(sup))
    commit_file(sup, "top", "top")
    git(sup, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(repo), "sub")
    git(sup, "commit", "-q", "-m", "add sub")
    sub = sup / "sub"
    ws = Workspace.open(str(sub))
    assert ws.worktree == str(sub)
    assert ws.paths.root == str(sub / ".ai" / "local" / "state")
    from majordomus import identity

    head = git_status.status(ws.place).head
    assert head == git(sub, "rev-parse", "HEAD")
    assert identity.repo_id(ws, head) == git(repo, "rev-list", "--max-parents=0", "HEAD")
    # and the superproject's identity is its own
    top = Workspace.open(str(sup))
    assert top.paths.root == str(sup / ".ai" / "local" / "state")


def test_not_a_git_work_tree(tmp_path, cli):
    plain = tmp_path / "plain"
    plain.mkdir()
    result = cli("task", "list", cwd=plain)
    assert result.exit_code == 12 and "not inside a git work tree" in result.stderr
    assert list(plain.iterdir()) == []


def test_bare_repository_itself_is_refused(tmp_path, cli, repo):
    bare = tmp_path / "b.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    result = cli("task", "start", "t1", cwd=bare)
    assert result.exit_code == 12 and "bare" in result.stderr
