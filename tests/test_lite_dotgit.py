"""majordomus/lite/dotgit.py: where a command stands, read from `.git` without git (design §5)."""

from __future__ import annotations

import json

import pytest
from helpers import git, run_here

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
