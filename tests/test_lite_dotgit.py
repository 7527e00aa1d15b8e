"""majordomus/lite/dotgit.py: where a command stands, read from `.git` without git (design §5)."""

from __future__ import annotations

import json

import pytest
from helpers import git, run_here, snapshot

from majordomus.lite import dotgit


def test_an_unreadable_head_is_exit_12_naming_it_never_a_detached_head(repo, monkeypatch):
    """An I/O error reading HEAD is not a detached HEAD (which would make every command say no task is
    active, and an agent start a second one): exit 12 naming the file; a hook says so and advises nothing."""
    import errno
    import json
    import os

    from helpers import FIXTURES, run_here

    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    head = str(repo / ".git" / "HEAD")
    real = os.open

    def failing(path, flags, *args, **kw):
        if os.fsdecode(path) == head:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real(path, flags, *args, **kw)

    monkeypatch.setattr(os, "open", failing)
    done = run_here("checkpoint", cwd=repo, input="a note\n")
    err = done.stderr.decode()
    assert done.returncode == 12 and f"cannot read {head}: Input/output error" in err and "\nhint: " in err, err
    hook = run_here("hook", "session-start", cwd=repo,
                    input=(FIXTURES / "payloads" / "claude-session-start-startup.json").read_bytes())
    assert hook.returncode == 0
    context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"] if hook.stdout.strip() else ""
    assert "detached" not in context and "task start" not in context, context
    monkeypatch.undo()
    assert run_here("checkpoint", cwd=repo, input="a note\n").returncode == 0  # one past: readable again


@pytest.mark.parametrize("head", ["ref:refs/heads/main\n", "ref:\trefs/heads/main\n", "ref:  refs/heads/main  \n"])
def test_head_is_read_as_git_reads_it_whatever_space_follows_ref(repo, head):
    """git reads `ref:` then any whitespace then the ref: HEAD written `ref:refs/heads/main` is branch main for
    git (`git status`: On branch main), so it is for every record and every task too, never a detached HEAD.
    One past the edge: a HEAD naming no branch (`ref: refs/heads/`) is detached."""
    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    (repo / ".git" / "HEAD").write_text(head)
    assert git(repo, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    done = run_here("checkpoint", cwd=repo, input="a note\n", text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(run_here("task", "show", "--json", cwd=repo).stdout)["branch"] == "main"
    assert dotgit.locate(str(repo)).branch == "main"
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/\n")
    assert dotgit.locate(str(repo)).branch is None


def test_a_head_that_is_a_link_naming_a_ref_is_that_branch_and_one_naming_anything_else_is_refused(repo):
    """Under `core.preferSymlinkRefs` git writes HEAD as a symbolic link to `refs/heads/BRANCH` and reads it
    as that branch: so does majordomus, without following it. One past the edge: a link to anything else
    is exit 12 naming it, and the hint never says to move HEAD away (the repository would break)."""
    import os

    git(repo, "config", "core.preferSymlinkRefs", "true")
    git(repo, "checkout", "-q", "-b", "other")
    head = repo / ".git" / "HEAD"
    assert head.is_symlink() and os.readlink(head) == "refs/heads/other"
    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    assert run_here("checkpoint", cwd=repo, input="a note\n").returncode == 0
    assert json.loads(run_here("task", "show", "--json", cwd=repo).stdout)["branch"] == "other"
    head.unlink()
    head.symlink_to("/etc/hostname")
    before = snapshot(repo)
    done = run_here("checkpoint", cwd=repo, input="a note\n", text=True)
    assert done.returncode == 12 and "is a symbolic link to /etc/hostname, which names no ref" in done.stderr
    assert "mv " not in done.stderr and "git symbolic-ref HEAD" in done.stderr
    assert snapshot(repo) == before


def test_git_dir_naming_a_linked_worktrees_git_file_is_followed_as_git_follows_it(repo, tmp_path, monkeypatch):
    """`GIT_DIR=../wt/.git`, where that `.git` is the file a linked worktree has (`gitdir: …`): git reads
    the worktree's own git directory, so the commands stand in that worktree's branch."""
    git(repo, "worktree", "add", "-q", "-b", "wtb", str(tmp_path / "wt"))
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "wt" / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(tmp_path / "wt"))
    place = dotgit.locate(str(repo))
    assert place is not None and place.branch == "wtb" and place.worktree == str(tmp_path / "wt")
    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    assert json.loads(run_here("task", "show", "--json", cwd=repo).stdout)["branch"] == "wtb"
