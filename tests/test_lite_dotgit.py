"""majordomus/lite/dotgit.py: where a command stands, read from `.git` without git (design §5)."""

from __future__ import annotations


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
