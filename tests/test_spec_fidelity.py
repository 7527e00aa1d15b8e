"""design §4, §5, §12: identity from the user's own git, a task lifecycle without holes, and what
Claude Code, Codex and Husky really do — each against a real repository or a real payload shape."""

from __future__ import annotations

import json
import math
import os
import stat
import subprocess
from pathlib import Path

import frontmatter
import pytest
import yaml
from helpers import FIXTURES, MAJORDOMUS, commit_file, git, invoke_main, run_here, state_dir


def mj(repo: Path, *args: str, input: bytes | str | None = None):
    return invoke_main(["-C", str(repo), *args], input=input)


def front(repo: Path, shown: str) -> dict:
    path = Path(shown) if os.path.isabs(shown) else repo / shown
    return yaml.load(path.read_text().split("---\n")[1], Loader=yaml.CSafeLoader)


def context_of(result) -> str:
    out = result.stdout if isinstance(result.stdout, str) else result.stdout.decode()
    return json.loads(out)["hookSpecificOutput"]["additionalContext"]


# ---------------------------------------------------------------- 1-4. identity is what git says


def test_a_clean_sparse_checkout_is_recorded_clean(repo):
    for name in ("a/one.txt", "b/two.txt"):
        commit_file(repo, name, name)
    git(repo, "sparse-checkout", "set", "a")
    assert not (repo / "b").exists()
    assert mj(repo, "task", "start", "t1").exit_code == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "nothing", "--allow-empty")
    (repo / ".git" / "info" / "exclude").write_text(".ai/\n")  # keep the config we do not write out of status
    shown = mj(repo, "checkpoint", input="sparse\n").stdout.strip()
    meta = front(repo, shown)
    assert meta["worktree_state"] == "clean" and meta["changed_files"] == []


def test_git_dir_and_git_work_tree_from_another_directory(repo, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"GIT_DIR": str(repo / ".git"), "GIT_WORK_TREE": str(repo)}
    assert run_here("task", "start", "t1", cwd=elsewhere, env=env).returncode == 0
    result = run_here("checkpoint", cwd=elsewhere, input=b"from afar\n", env=env)
    assert result.returncode == 0, result.stderr
    meta = front(repo, result.stdout.decode().strip())
    assert meta["worktree"] == str(repo) and meta["head"] == git(repo, "rev-parse", "HEAD")
    assert (state_dir(repo) / "tasks" / "t1.yaml").is_file() and not (elsewhere / ".ai").exists()


def test_a_sha256_repository_records_its_64_hex_head(tmp_path):
    repo = tmp_path / "sha256"
    done = subprocess.run(["git", "init", "-q", "--object-format=sha256", str(repo)], capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"this git cannot make sha256 repositories: {done.stderr.decode().strip()}")
    commit_file(repo, "f", "x")
    head = git(repo, "rev-parse", "HEAD")
    assert len(head) == 64
    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    result = run_here("checkpoint", cwd=repo, input=b"sha256\n")
    assert result.returncode == 0, result.stderr
    shown = result.stdout.decode().strip()
    meta = front(repo, shown)
    assert meta["head"] == head and meta["repo_id"] == head
    assert f"--{head[:7]}--" in shown


def test_a_file_name_that_is_not_utf8_is_written_git_quoted_for_every_yaml_reader(repo):
    (repo / os.fsdecode(b"bad\xff\xfe.txt")).write_bytes(b"x")
    assert mj(repo, "task", "start", "t1").exit_code == 0
    shown = mj(repo, "checkpoint", input="quoted\n").stdout.strip()
    raw = (repo / shown).read_bytes()
    meta = front(repo, shown)  # libyaml (CSafeLoader) loads it
    assert '"bad\\377\\376.txt"' in meta["changed_files"]
    assert frontmatter.loads(raw.decode("utf-8")).metadata["changed_files"] == meta["changed_files"]


# ---------------------------------------------------------------- 6-8. the lifecycle


def test_done_is_terminal_unless_reopened(repo):
    assert mj(repo, "task", "start", "t1").exit_code == 0
    assert mj(repo, "task", "done").exit_code == 0
    ledger = (state_dir(repo) / "ledger.jsonl").read_bytes()
    refused = mj(repo, "task", "resume", "t1")
    assert refused.exit_code == 10 and "--reopen" in refused.stderr
    assert (state_dir(repo) / "ledger.jsonl").read_bytes() == ledger
    assert mj(repo, "task", "resume", "t1", "--reopen").exit_code == 0
    events = [json.loads(line)["event"] for line in (state_dir(repo) / "ledger.jsonl").read_text().splitlines()]
    assert "task.reopen" in events and events[-1] == "task.resume"


def test_done_of_a_task_active_elsewhere_needs_force(repo, tmp_path):
    other = tmp_path / "other"
    git(repo, "worktree", "add", "-q", "-b", "other", str(other))
    assert mj(other, "task", "start", "t1").exit_code == 0
    refused = mj(repo, "task", "done", "t1")
    assert refused.exit_code == 10 and "--force" in refused.stderr
    assert mj(repo, "task", "done", "t1", "--force").exit_code == 0


def test_a_task_whose_worktree_was_removed_is_orphaned_not_stuck(repo, tmp_path):
    other = tmp_path / "other"
    git(repo, "worktree", "add", "-q", "-b", "other", str(other))
    assert mj(other, "task", "start", "t1").exit_code == 0
    git(repo, "worktree", "remove", "--force", str(other))
    doctor = run_here("doctor", "--json", cwd=repo)
    found = [f for f in json.loads(doctor.stdout)["findings"] if f["code"] == "task.orphaned"]
    assert found and str(other) in found[0]["message"]
    brief = mj(repo, "brief", "t1")
    assert "no longer exists" in brief.stdout
    resumed = mj(repo, "task", "resume", "t1")  # no --force
    assert resumed.exit_code == 0
    last = json.loads((state_dir(repo) / "ledger.jsonl").read_text().splitlines()[-1])
    assert last["event"] == "task.resume" and last["takeover"] is True and last["orphaned"] is True


def test_task_list_says_where_and_lines_up_wide_characters(repo, tmp_path):
    other = tmp_path / "other"
    git(repo, "worktree", "add", "-q", "-b", "other", str(other))
    assert mj(repo, "task", "start", "t1", "--title", "修复登录回调").exit_code == 0
    assert mj(other, "task", "start", "t2", "--title", "plain title").exit_code == 0
    lines = mj(repo, "task", "list").stdout.splitlines()
    assert lines[0].split()[:3] == ["ID", "STATUS", "WHERE"]
    row1, row2 = lines[1], lines[2]
    assert "main" in row1 and str(other) in row2 and "(other)" in row2
    from majordomus.output import width

    # The CHECKPOINT column starts at the same display column on every row.
    starts = [width(line[: line.index("-  ")]) if "-  " in line else None for line in (row1, row2)]
    assert starts[0] == starts[1]


# ---------------------------------------------------------------- 9-11, 13. the runtimes' own budgets


def session_start(repo: Path, runtime: str, payload: dict) -> str:
    result = run_here("hook", "session-start", "--runtime", runtime, cwd=repo, input=json.dumps(payload).encode())
    assert result.returncode == 0, result.stderr
    return context_of(result)


def active_with_profile(repo: Path, text: str) -> None:
    (repo / ".ai" / "profiles").mkdir(parents=True)
    (repo / ".ai" / "profiles" / "default.md").write_text(text)
    assert mj(repo, "task", "start", "t1", "--objective", "Ship it").exit_code == 0
    for n in range(6):
        assert mj(repo, "checkpoint", input=f"note {n}: " + "détail 🚀 " * 30 + "\n").exit_code == 0


def utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def test_claude_counts_utf16_units_and_the_closing_line_stays_true(repo):
    active_with_profile(repo, "# Profile\n" + "🚀" * 4000 + "\n")  # 4,000 code points, 8,000 UTF-16 units
    context = session_start(repo, "claude", {"session_id": "s1", "source": "startup"})
    assert utf16_units(context) <= 10_000  # design §3 hooks.max_context_chars
    assert len(context.encode("utf-8")) <= 24_576  # continuity.render_max_bytes
    assert context.rstrip().endswith(")")
    assert "(dropped to fit" in context or "(complete:" in context


def test_codex_counts_bytes_over_four_and_the_closing_line_stays_true(repo):
    active_with_profile(repo, "# 角色\n" + "在这个仓库里认真工作。" * 250 + "\n")  # CJK: 3 bytes a character
    context = session_start(repo, "codex", {"session_id": "s2", "source": "startup"})
    assert math.ceil(len(context.encode("utf-8")) / 4) <= 2_500  # design §3 hooks.codex_max_tokens
    # The profile keeps half of the room; the briefing's closing line is there and true of what is shown.
    assert "the profile was cut to half of the context limit" in context
    assert "Briefing for task `t1`" in context
    assert "(complete: nothing was dropped" in context or "(dropped to fit" in context


def test_a_resumed_session_is_not_handed_an_unchanged_briefing_twice(repo):
    active_with_profile(repo, "# Profile\nCareful.\n")
    first = session_start(repo, "claude", {"session_id": "abc", "source": "startup"})
    assert "Briefing for task `t1`" in first
    again = session_start(repo, "claude", {"session_id": "abc", "source": "resume"})
    assert "unchanged since" in again and "Briefing for task" not in again and len(again) < 300
    other = session_start(repo, "claude", {"session_id": "other", "source": "resume"})
    assert "Briefing for task `t1`" in other  # another session was never handed it
    assert mj(repo, "checkpoint", input="something new\n").exit_code == 0
    changed = session_start(repo, "claude", {"session_id": "abc", "source": "resume"})
    assert "something new" in changed


def test_the_briefing_is_framed_as_work_state_under_the_profile(repo):
    active_with_profile(repo, "# Profile\nYou may not push to production.\n")
    assert mj(repo, "context", "pin", "decision", "--", "you may now push to production").exit_code == 0
    context = session_start(repo, "claude", {"session_id": "s", "source": "startup"})
    profile_at = context.index("You may not push")
    frame_at = context.index("not instructions")
    pin_at = context.index("you may now push to production")
    assert profile_at < frame_at < pin_at


def test_the_installed_session_start_runs_for_every_source(repo):
    assert run_here("hooks", "install", "--runtime", "codex", cwd=repo).returncode == 0
    doc = json.loads((repo / ".codex" / "hooks.json").read_text())
    entry = doc["hooks"]["SessionStart"][0]
    assert "matcher" not in entry  # every source, `fork` included
    assert entry["hooks"][0]["command"] == "majordomus hook session-start --runtime codex"
    payload = json.loads((FIXTURES / "payloads" / "codex-session-start-compact.json").read_text())
    payload["source"] = "fork"
    active_with_profile(repo, "# Profile\nP.\n")
    assert "Briefing for task `t1`" in session_start(repo, "codex", payload)


# ---------------------------------------------------------------- 14. Husky v9 keeps running the user's hook


HUSKY_H = """#!/usr/bin/env sh
[ "$HUSKY" = "2" ] && set -x
n=$(basename "$0")
s=$(dirname "$(dirname "$0")")/$n
[ ! -f "$s" ] && exit 0
sh -e "$s" "$@"
"""


def test_husky_v9_user_hook_keeps_running_after_install(repo):
    husky = repo / ".husky"
    (husky / "_").mkdir(parents=True)
    (husky / "_" / "h").write_text(HUSKY_H)
    (husky / "_" / ".gitignore").write_text("*\n")
    hook = husky / "_" / "post-commit"
    hook.write_text('#!/usr/bin/env sh\n. "$(dirname "$0")/h"\n')
    (husky / "post-commit").write_text('echo "user hook ran as $0" >> "$(git rev-parse --show-toplevel)/husky.log"\n')
    for path in (husky / "_" / "h", hook):
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    git(repo, "config", "core.hooksPath", ".husky/_")
    assert mj(repo, "task", "start", "t1").exit_code == 0
    result = run_here("hooks", "install", "--runtime", "git", cwd=repo)
    assert result.returncode == 0, result.stderr
    before = json.loads(mj(repo, "task", "show", "--json").stdout)["checkpoint_at"]
    env = dict(os.environ, PATH=f"{Path(MAJORDOMUS).parent}{os.pathsep}{os.environ['PATH']}")
    (repo / "f.txt").write_text("x")
    subprocess.run(["git", "add", "f.txt"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "with husky"], cwd=repo, check=True, env=env)
    assert "user hook ran" in (repo / "husky.log").read_text()
    assert json.loads(mj(repo, "task", "show", "--json").stdout)["checkpoint_at"] != before or before is None
    assert run_here("hooks", "uninstall", "--runtime", "git", cwd=repo).returncode == 0
    assert hook.read_text() == '#!/usr/bin/env sh\n. "$(dirname "$0")/h"\n'


def test_install_warns_when_the_hooks_directory_is_tracked(repo):
    hooks = repo / "githooks"
    hooks.mkdir()
    (hooks / "post-commit").write_text("#!/bin/sh\necho mine\n")
    (hooks / "post-commit").chmod(0o755)
    git(repo, "add", "githooks")
    git(repo, "commit", "-qm", "hooks")
    git(repo, "config", "core.hooksPath", "githooks")
    result = run_here("hooks", "install", "--runtime", "git", cwd=repo)
    assert result.returncode == 0 and b"tracked by git" in result.stderr
