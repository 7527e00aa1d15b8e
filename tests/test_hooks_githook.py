"""Husky v9 (design §12): the post-commit line lives in `.husky/post-commit` (committed), survives `npx husky`
regenerating `.husky/_`, recovers from a stale chained file, and doctor warns `hooks.missing` when a hook its
receipt lists no longer runs majordomus. Husky is simulated as its 9.1.7 `husky` command writes its files."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from helpers import BIN, events_named, git, run, run_here, snapshot, start_task_at, state_dir
from helpers.husky import npx_husky


def commit(repo: Path, name: str) -> subprocess.CompletedProcess[bytes]:
    (repo / name).write_text(name)
    git(repo, "add", name)
    env = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}")
    return subprocess.run(["git", "commit", "-q", "-m", name], cwd=repo, env=env, capture_output=True, check=False)


def checkpoint_at(repo: Path) -> str | None:
    import yaml

    value = yaml.load((state_dir(repo) / "tasks" / "t1.yaml").read_text(), Loader=yaml.CSafeLoader).get("checkpoint_at")
    return value if isinstance(value, str) else None


def test_installs_into_husky_post_commit_committed_and_survives_regeneration(repo: Path) -> None:
    npx_husky(repo)
    (repo / ".husky" / "pre-commit").write_text("echo lint\n")
    out = run("hooks", "install", "--runtime", "git", cwd=repo)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(b"installed: .husky/post-commit")
    hook = repo / ".husky" / "post-commit"
    assert "majordomus check --checkpoint" in hook.read_text()
    assert not (repo / ".husky" / "_" / "post-commit.majordomus-chained").exists()
    assert ".husky/post-commit" in git(repo, "status", "--porcelain", "--untracked-files=all")  # to commit
    start_task_at(repo)
    assert commit(repo, "a").returncode == 0
    first = checkpoint_at(repo)
    assert first is not None
    # `npm install` again: husky rewrites .husky/_ — the checkpoint still moves on the next commit.
    npx_husky(repo)
    assert run_here("doctor", cwd=repo).stdout.count(b"hooks.missing") == 0
    (state_dir(repo) / "tasks" / "t1.yaml").write_text(
        (state_dir(repo) / "tasks" / "t1.yaml").read_text().replace(f"checkpoint_at: '{first}'", "checkpoint_at: null")
        .replace(f'checkpoint_at: "{first}"', "checkpoint_at: null"))
    assert checkpoint_at(repo) is None
    assert commit(repo, "b").returncode == 0
    assert checkpoint_at(repo) is not None
    # Install again: already; uninstall: the file it created goes, .husky/_ is Husky's as before.
    assert run_here("hooks", "install", "--runtime", "git", cwd=repo).stdout.startswith(b"already installed")
    gone = run_here("hooks", "uninstall", "--runtime", "git", cwd=repo)
    assert gone.returncode == 0 and gone.stdout.startswith(b"removed: .husky/post-commit"), gone
    assert not hook.exists() and (repo / ".husky" / "pre-commit").read_text() == "echo lint\n"


def test_husky_post_rewrite_records_an_amend_and_survives_regeneration(repo: Path) -> None:
    """design §21: `.husky/post-rewrite` gets the block beside post-commit's; Husky's `h` passes git's $1
    and stdin on, so an amend run by git through Husky appends its `git.rewrite` event."""
    npx_husky(repo)
    hook = repo / ".husky" / "post-rewrite"
    theirs = "cat > .git/theirs-saw  # the user's own post-rewrite reads git's list too\n"
    hook.write_text(theirs)
    out = run("hooks", "install", "--runtime", "git", cwd=repo)
    assert out.stdout.decode().splitlines() == ["installed: .husky/post-commit (post-commit)",
                                                "installed: .husky/post-rewrite (post-rewrite)"], out
    # Ours first (a user's `exit 0` cannot skip it), theirs after it, byte for byte.
    assert hook.read_text().startswith("# >>> majordomus post-rewrite hook") and hook.read_text().endswith(theirs)
    start_task_at(repo)
    assert commit(repo, "a").returncode == 0
    npx_husky(repo)  # `npm install` again: .husky/_ rewritten, .husky/post-rewrite is the user's, kept
    old = git(repo, "rev-parse", "HEAD")
    env = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}")
    done = subprocess.run(["git", "commit", "-q", "--amend", "-m", "a2"], cwd=repo, env=env, capture_output=True, check=False)
    assert (done.returncode, done.stderr) == (0, b"")
    [event] = events_named(repo, "git.rewrite")
    new = git(repo, "rev-parse", "HEAD")
    assert event["how"] == "amend" and event["map"] == {old: new}
    assert (repo / ".git" / "theirs-saw").read_text().split() == [old, new]  # git's stdin, handed on whole
    assert run_here("hooks", "uninstall", "--runtime", "git", cwd=repo).returncode == 0
    assert hook.read_text() == theirs and not (repo / ".husky" / "post-commit").exists()


def test_a_users_husky_post_commit_keeps_its_lines(repo: Path) -> None:
    npx_husky(repo)
    hook = repo / ".husky" / "post-commit"
    hook.write_text("echo theirs")  # no final newline
    assert run_here("hooks", "install", "--runtime", "git", cwd=repo).returncode == 0
    assert hook.read_text().startswith("# >>> majordomus post-commit hook") and hook.read_text().endswith("\necho theirs")
    assert run_here("hooks", "uninstall", "--runtime", "git", cwd=repo).returncode == 0
    assert hook.read_text() == "echo theirs"  # byte for byte


def test_a_users_husky_hook_with_a_byte_that_is_not_utf8_keeps_it_byte_for_byte(repo: Path) -> None:
    """A team's `.husky/post-commit` with a Latin-1 comment (`# café` in ISO-8859-1): the install keeps that
    byte, and the uninstall puts back the very bytes there were; the byte was U+FFFD after the round trip."""
    npx_husky(repo)
    hook = repo / ".husky" / "post-commit"
    theirs = b"# caf\xe9: the team's hook\necho theirs\n"
    hook.write_bytes(theirs)
    assert run_here("hooks", "install", "--runtime", "git", cwd=repo).returncode == 0
    assert hook.read_bytes().endswith(theirs) and b"\xef\xbf\xbd" not in hook.read_bytes()
    assert run_here("hooks", "uninstall", "--runtime", "git", cwd=repo).returncode == 0
    assert hook.read_bytes() == theirs


def test_a_husky_hook_that_exits_early_still_runs_ours_and_doctor_checks_the_block_is_reached(repo: Path) -> None:
    """Husky runs `.husky/post-commit` with `sh -e`: lines after a user's `exit 0` never run. Our block goes
    first; one an earlier version appended after such an exit is moved up by install, and doctor calls it
    missing until then."""
    from majordomus.hooks.gitfiles import POST_COMMIT
    from majordomus.hooks.husky import _husky_block_appended

    npx_husky(repo)
    hook = repo / ".husky" / "post-commit"
    hook.write_text("#!/bin/sh\necho user-post-commit\nexit 0\n")
    assert run_here("hooks", "install", "--runtime", "git", cwd=repo).returncode == 0
    assert hook.read_text().startswith("#!/bin/sh\n# >>> majordomus post-commit hook")
    start_task_at(repo)
    done = commit(repo, "a")
    assert done.returncode == 0 and checkpoint_at(repo) is not None
    assert b"hooks.missing" not in run_here("doctor", cwd=repo).stdout
    # What an earlier version left: the block appended after the user's exit (unreachable).
    hook.write_text("echo user-post-commit\nexit 0\n" + _husky_block_appended(POST_COMMIT))
    doctor = run_here("doctor", cwd=repo)
    assert b"hooks.missing" in doctor.stdout, doctor
    moved = run_here("hooks", "install", "--runtime", "git", cwd=repo)
    assert moved.returncode == 0 and moved.stdout.startswith(b"installed: .husky/post-commit"), moved
    assert hook.read_text().startswith("# >>> majordomus post-commit hook")
    assert hook.read_text().endswith("echo user-post-commit\nexit 0\n")
    assert b"hooks.missing" not in run_here("doctor", cwd=repo).stdout


def test_a_trimmed_husky_layout_gets_the_post_rewrite_stub_git_runs(repo: Path) -> None:
    """Without `.husky/_/post-rewrite` git never runs `.husky/post-rewrite`: install writes Husky's own
    stub there (what `husky` writes), and uninstall takes away only the one it wrote."""
    npx_husky(repo)
    stub = repo / ".husky" / "_" / "post-rewrite"
    stub.unlink()
    assert run_here("hooks", "install", "--runtime", "git", cwd=repo).returncode == 0
    assert stub.read_bytes() == b'#!/usr/bin/env sh\n. "$(dirname "$0")/h"' and os.access(stub, os.X_OK)
    start_task_at(repo)
    assert commit(repo, "a").returncode == 0
    env = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}")
    assert subprocess.run(["git", "commit", "-q", "--amend", "-m", "a2"], cwd=repo, env=env, check=False).returncode == 0
    assert len(events_named(repo, "git.rewrite")) == 1
    assert run_here("hooks", "uninstall", "--runtime", "git", cwd=repo).returncode == 0
    assert not stub.exists() and (repo / ".husky" / "_" / "post-commit").exists()  # Husky's own stays


def test_recovers_from_the_stale_chained_file_of_an_earlier_install(repo: Path) -> None:
    npx_husky(repo)
    underscore = repo / ".husky" / "_"
    # An earlier majordomus chained Husky's stub in .husky/_; `npx husky` then rewrote post-commit.
    (underscore / "post-commit").rename(underscore / "post-commit.majordomus-chained")
    npx_husky(repo)
    result = run_here("hooks", "install", "--runtime", "git", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert not (underscore / "post-commit.majordomus-chained").exists()
    assert "majordomus check --checkpoint" in (repo / ".husky" / "post-commit").read_text()
    # The same stale file at uninstall: removed too, and said.
    (underscore / "post-commit.majordomus-chained").write_text('#!/usr/bin/env sh\n. "$(dirname "$0")/h"')
    gone = run_here("hooks", "uninstall", "--runtime", "git", cwd=repo)
    assert gone.returncode == 0 and not (underscore / "post-commit.majordomus-chained").exists()
    assert not (repo / ".husky" / "post-commit").exists()


def test_an_edited_majordomus_block_is_refused(repo: Path) -> None:
    npx_husky(repo)
    assert run_here("hooks", "install", "--runtime", "git", cwd=repo).returncode == 0
    hook = repo / ".husky" / "post-commit"
    hook.write_text(hook.read_text().replace("|| :", "|| true # mine"))
    before = snapshot(repo)
    for action in ("install", "uninstall"):
        result = run_here("hooks", action, "--runtime", "git", cwd=repo)
        assert result.returncode == 10 and b"edited since it was installed" in result.stderr
    assert snapshot(repo) == before


def test_doctor_warns_when_an_installed_hook_no_longer_runs_majordomus(repo: Path) -> None:
    start_task_at(repo)
    # A plain .git/hooks install that a hook manager later overwrote.
    assert run_here("hooks", "install", "--runtime", "git", cwd=repo).returncode == 0
    assert run_here("hooks", "install", "--runtime", "claude", cwd=repo).returncode == 0
    clean = json.loads(run_here("doctor", "--json", cwd=repo).stdout)
    assert "hooks.missing" not in json.dumps(clean)
    (repo / ".git" / "hooks" / "post-commit").write_text('#!/usr/bin/env sh\n. "$(dirname "$0")/h"\n')
    (repo / ".claude" / "settings.json").write_text("{}\n")
    done = run("doctor", "--json", cwd=repo)
    findings = [f for f in json.loads(done.stdout)["findings"] if f["code"] == "hooks.missing"]
    assert sorted(Path(f["path"]).name for f in findings) == ["post-commit", "settings.json"]
    assert all(f["level"] == "warn" and "hooks install --runtime" in f["hint"] for f in findings)


def test_a_hooks_path_that_is_not_utf8_installs_and_uninstalls_and_is_shown_escaped(repo):
    """`core.hooksPath` may hold any byte git allows: the hooks go there, the receipt is keyed by its bytes
    (a UTF-8 encoding of the path failed with exit 70 after the hooks were written), and the path is printed
    with the byte shown `\\xff`. The uninstall removes exactly what the install wrote."""
    git(repo, "config", "core.hooksPath", "hk\udcff")
    before = snapshot(repo)
    done = run_here("hooks", "install", "--runtime", "git", cwd=repo)
    out = done.stdout.decode("utf-8", "surrogateescape")
    assert done.returncode == 0 and "installed: hk\\xff/post-commit" in out and "\udcff" not in out, done
    assert (repo / "hk\udcff" / "post-commit").is_file()
    undone = run_here("hooks", "uninstall", "--runtime", "git", cwd=repo)
    assert undone.returncode == 0 and "removed: hk\\xff/post-commit" in undone.stdout.decode("utf-8", "surrogateescape")
    assert not (repo / "hk\udcff" / "post-commit").exists()
    assert {k: v for k, v in snapshot(repo).items() if not k.startswith(".ai/")} == {
        k: v for k, v in before.items() if not k.startswith(".ai/")}


def test_a_hooks_directory_reached_through_a_link_in_the_work_tree_is_never_written_through(repo, tmp_path):
    """A committed `.husky` that is a symbolic link to a directory elsewhere (Husky's `_/h` there, and
    core.hooksPath `.husky/_`): install is exit 12 naming the link, and nothing is written there or here.
    One past the edge: core.hooksPath naming that same directory outside the work tree is the user's choice,
    and install writes there."""
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "_").mkdir(parents=True)
    (elsewhere / "_" / "h").write_text("#!/usr/bin/env sh\n")
    (repo / ".husky").symlink_to(elsewhere)
    git(repo, "config", "core.hooksPath", ".husky/_")
    before, outside = snapshot(repo), snapshot(elsewhere)
    done = run_here("hooks", "install", "--runtime", "git", cwd=repo, text=True)
    assert done.exit_code == 12 and "is a symbolic link" in done.stderr and "nothing was written" in done.stderr
    assert snapshot(repo) == before and snapshot(elsewhere) == outside
    git(repo, "config", "core.hooksPath", str(elsewhere / "_"))
    assert run_here("hooks", "install", "--runtime", "git", cwd=repo).returncode == 0
    assert snapshot(elsewhere) != outside


def test_an_empty_core_hooks_path_runs_no_hook_so_install_refuses_and_doctor_says_it(repo: Path) -> None:
    """`core.hooksPath` set to "" makes git run no hook at all, while `rev-parse --git-path hooks` answers
    `./`: the install wrote post-commit into the work tree, said "installed", and git never ran it. It is
    exit 12 naming the setting, nothing written; a hook installed before the setting is doctor's
    `hooks.missing`; one past the edge, unset, the install lands."""
    assert run_here("hooks", "install", "--runtime", "git", cwd=repo).returncode == 0
    git(repo, "config", "core.hooksPath", "")
    doctor = json.loads(run_here("doctor", "--json", cwd=repo).stdout)
    said = [f["message"] for f in doctor["findings"] if f["code"] == "hooks.missing"]
    assert len(said) == 2 and all(m.endswith(": core.hooksPath is set to the empty string, and git runs no hook then")
                                  for m in said), said
    before = snapshot(repo)
    for action in ("install", "uninstall"):
        done = run_here("hooks", action, "--runtime", "git", cwd=repo)
        assert done.returncode == 12, done.stderr
        assert b"core.hooksPath is set to the empty string, and git runs no hook then" in done.stderr
        assert b"git config --unset core.hooksPath" in done.stderr and snapshot(repo) == before
    assert not (repo / "post-commit").exists()
    git(repo, "config", "--unset", "core.hooksPath")
    assert run_here("hooks", "install", "--runtime", "git", cwd=repo).returncode == 0
    doctor = json.loads(run_here("doctor", "--json", cwd=repo).stdout)
    assert "hooks.missing" not in {f["code"] for f in doctor["findings"]}
