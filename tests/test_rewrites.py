"""History across rewrites (design §21): git's post-rewrite hook, installed by `hooks install --runtime git`
and run by git itself, appends one `git.rewrite` event per amend or rebase; brief, run evidence and doctor
follow a recorded head through the mapping, and say plainly when a head left the branch's history."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers import (
    BIN,
    MAJORDOMUS,
    commit_file,
    events_named,
    git,
    import_probe,
    ledger_bytes,
    run,
    run_here,
    start_task_at,
    state_dir,
)

from majordomus import rewrites

GIT_ENV = {"PATH": f"{BIN}:{os.environ['PATH']}"}  # the hook finds the console script by name, as a user's does


def gitp(repo: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """git itself, with majordomus on PATH: the hooks it runs are the subject."""
    return subprocess.run(["git", *args], cwd=repo, env=dict(os.environ, **GIT_ENV), input=input,
                          capture_output=True, text=True, check=False)


def installed(repo: Path) -> Path:
    start_task_at(repo)
    out = run("hooks", "install", "--runtime", "git", cwd=repo)
    assert out.returncode == 0, out.stderr
    assert out.stdout.decode().splitlines() == ["installed: .git/hooks/post-commit (post-commit)",
                                                "installed: .git/hooks/post-rewrite (post-rewrite)"]
    return repo


def head(repo: Path, rev: str = "HEAD") -> str:
    return git(repo, "rev-parse", rev)


def brief(repo: Path) -> str:
    return run_here("brief", cwd=repo).stdout.decode()


# ---------------------------------------------------------------- the hook, run by git


def test_an_amend_appends_one_rewrite_event_and_brief_follows_it(repo: Path) -> None:
    installed(repo)
    commit_file(repo, "a.txt", "a\n", "first try")
    assert run_here("checkpoint", cwd=repo, input="at the first try\n").returncode == 0
    assert run_here("run", "--label", "tests", "--", "true", cwd=repo).returncode == 0
    old = head(repo)
    done = gitp(repo, "commit", "-q", "--amend", "-m", "a better message")
    assert (done.returncode, done.stderr) == (0, "")
    new = head(repo)
    [event] = events_named(repo, "git.rewrite")
    assert (event["how"], event["map"], event["head"], event["rewritten"]) == ("amend", {old: new}, new, 1)
    assert event["task"] == "t1"
    text = brief(repo)
    assert f"- HEAD: now {new[:7]}, rewritten from the recorded {old[:7]} by an amend (the same files" in text
    assert f"- `tests` passed at {new[:7]}, rewritten from {old[:7]} (" in text
    assert "nothing moved since" in text
    assert "commit since" not in text and "another line of work" not in text
    findings = json.loads(run_here("doctor", "--json", cwd=repo).stdout)["findings"]
    assert "record.head-unreachable" not in [f["code"] for f in findings]


def test_an_amend_that_changes_files_says_so(repo: Path) -> None:
    installed(repo)
    commit_file(repo, "a.txt", "a\n", "a")
    assert run_here("run", "--label", "tests", "--", "true", cwd=repo).returncode == 0
    old = head(repo)
    (repo / "a.txt").write_text("fixed\n")
    assert gitp(repo, "commit", "-q", "-a", "--amend", "--no-edit").returncode == 0
    text = brief(repo)
    assert f"- `tests` passed at {head(repo)[:7]}, rewritten from {old[:7]} (the rewrite changed files)" in text


def test_a_rebase_appends_one_event_with_every_pair(repo: Path) -> None:
    installed(repo)
    base = head(repo)
    for name in ("a", "b", "c"):
        commit_file(repo, f"{name}.txt", name, name)
    olds = git(repo, "rev-list", "--reverse", f"{base}..HEAD").split()
    git(repo, "checkout", "-q", "-b", "upstream", base)
    commit_file(repo, "u.txt", "u", "upstream work")
    git(repo, "checkout", "-q", "main")
    done = gitp(repo, "rebase", "-q", "upstream")
    assert done.returncode == 0, done.stderr
    news = git(repo, "rev-list", "--reverse", "upstream..HEAD").split()
    [event] = events_named(repo, "git.rewrite")
    assert event["how"] == "rebase" and event["rewritten"] == 3
    assert event["map"] == dict(zip(olds, news)) and event["head"] == news[-1]
    # the log shows the rewrite as one line, never the mapping
    log = run_here("log", cwd=repo).stdout.decode()
    assert f"rewrite     {news[-1][:7]}  rebase: 3 commits rewritten, now at {news[-1][:7]}" in log


def test_a_record_before_a_rebase_counts_from_where_its_head_went(repo: Path) -> None:
    installed(repo)
    base = head(repo)
    commit_file(repo, "a.txt", "a", "a")
    assert run_here("checkpoint", cwd=repo, input="after a\n").returncode == 0
    recorded = head(repo)
    commit_file(repo, "b.txt", "b", "b")
    git(repo, "checkout", "-q", "-b", "upstream", base)
    commit_file(repo, "u.txt", "u", "upstream")
    git(repo, "checkout", "-q", "main")
    assert gitp(repo, "rebase", "-q", "upstream").returncode == 0
    moved = head(repo, "HEAD~1")
    text = brief(repo)
    assert (f"- HEAD: now {head(repo)[:7]}, 1 commit since {moved[:7]} (the recorded {recorded[:7]}, "
            "rewritten by a rebase)") in text
    assert "  - " + head(repo)[:7] + " b" in text
    assert "not in HEAD" not in text


def test_a_squash_follows_both_commits_to_the_one_they_became(repo: Path) -> None:
    installed(repo)
    commit_file(repo, "a.txt", "a", "a")
    assert run_here("checkpoint", cwd=repo, input="at a\n").returncode == 0
    first = head(repo)
    commit_file(repo, "b.txt", "b", "b")
    second = head(repo)
    env = dict(os.environ, **GIT_ENV, GIT_SEQUENCE_EDITOR="sed -i 2s/^pick/squash/", GIT_EDITOR="true")
    done = subprocess.run(["git", "rebase", "-q", "-i", "HEAD~2"], cwd=repo, env=env, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    squashed = head(repo)
    assert git(repo, "rev-list", "--count", "HEAD") == "2"
    *during, event = events_named(repo, "git.rewrite")
    assert event["map"] == {first: squashed, second: squashed} and event["how"] == "rebase"
    # git 2.39's sequencer makes the squash by an amend, and runs post-rewrite for it too: the same mapping
    assert all(e["how"] == "amend" and e["map"] == {first: squashed} for e in during)
    assert f"- HEAD: now {squashed[:7]}, rewritten from the recorded {first[:7]} by a rebase\n" in brief(repo)


def test_an_amend_then_a_rebase_is_followed_through_the_chain(repo: Path) -> None:
    installed(repo)
    base = head(repo)
    commit_file(repo, "a.txt", "a", "a")
    assert run_here("checkpoint", cwd=repo, input="at a\n").returncode == 0
    recorded = head(repo)
    assert gitp(repo, "commit", "-q", "--amend", "-m", "a2").returncode == 0
    git(repo, "checkout", "-q", "-b", "upstream", base)
    commit_file(repo, "u.txt", "u", "upstream")
    git(repo, "checkout", "-q", "main")
    assert gitp(repo, "rebase", "-q", "upstream").returncode == 0
    assert len(events_named(repo, "git.rewrite")) == 2
    text = brief(repo)
    assert (f"- HEAD: now {head(repo)[:7]}, rewritten from the recorded {recorded[:7]} by an amend, then a "
            "rebase") in text


def test_a_rewritten_head_that_left_the_branch_is_said_with_its_mapping(repo: Path) -> None:
    installed(repo)
    commit_file(repo, "a.txt", "a", "a")
    assert run_here("checkpoint", cwd=repo, input="at a\n").returncode == 0
    old = head(repo)
    assert gitp(repo, "commit", "-q", "--amend", "-m", "a2").returncode == 0
    new = head(repo)
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    text = brief(repo)
    assert (f"moved back: 1 commit up to {new[:7]} (the recorded {old[:7]}, rewritten by an amend) is not in "
            "HEAD") in text
    assert gitp(repo, "commit", "-q", "--allow-empty", "-m", "other work").returncode == 0
    text = brief(repo)
    assert (f"the record was written at {old[:7]} (rewritten as {new[:7]} by an amend), no longer in this "
            "branch's history") in text
    [finding] = [f for f in json.loads(run_here("doctor", "--json", cwd=repo).stdout)["findings"]
                 if f["code"] == "record.head-unreachable"]
    assert f"written at {old[:7]} (rewritten as {new[:7]} by an amend), no longer in the history of branch main" \
        in finding["message"] and finding["path"].endswith(".md") and "checkpoints" in finding["path"]


# ---------------------------------------------------------------- without the hook: what git can tell


def test_without_the_hook_an_amended_head_is_said_plainly_never_counted(repo: Path) -> None:
    start_task_at(repo)
    commit_file(repo, "a.txt", "a\n", "a")
    assert run_here("checkpoint", cwd=repo, input="at a\n").returncode == 0
    assert run_here("run", "--label", "tests", "--", "true", cwd=repo).returncode == 0
    old = head(repo)
    assert gitp(repo, "commit", "-q", "--amend", "-m", "a, amended").returncode == 0
    assert events_named(repo, "git.rewrite") == []
    text = brief(repo)
    assert f"the record was written at {old[:7]}, no longer in this branch's history" in text
    assert f"- `tests` passed at {old[:7]} (" in text and "its head is no longer in this branch's history" in text
    assert "commit since" not in text and "commits since" not in text
    done = run("doctor", "--json", cwd=repo)
    found = [f for f in json.loads(done.stdout)["findings"] if f["code"] == "record.head-unreachable"]
    assert len(found) == 2 and all(f["level"] == "warn" for f in found)
    assert {Path(f["path"]).parent.name for f in found} == {"checkpoints", "runs"}
    assert all(f"written at {old[:7]}, no longer in the history of branch main" in f["message"]
               and "task `t1`" in f["message"] for f in found)
    assert done.returncode == 0  # a warning: doctor fails only with --strict
    assert run_here("doctor", "--strict", cwd=repo).returncode == 1


def test_a_head_moved_back_is_not_counted_as_new_work(repo: Path) -> None:
    start_task_at(repo)
    commit_file(repo, "a.txt", "a\n", "a")
    assert run_here("checkpoint", cwd=repo, input="at a\n").returncode == 0
    recorded = head(repo)
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    text = brief(repo)
    assert f"moved back: 1 commit up to the recorded {recorded[:7]} is not in HEAD" in text
    assert "commit since" not in text


def test_a_head_from_another_clone_is_not_in_this_repository(repo: Path) -> None:
    from majordomus.workspace import Workspace

    ws = Workspace.open(str(repo))
    rel = rewrites.relate(ws, "1" * 40, head(repo), rewrites.Rewrites({}))
    assert rel.kind == "foreign" and rel.mapped is None


# ---------------------------------------------------------------- chaining, uninstall, refusals


def test_an_existing_post_rewrite_hook_is_chained_with_the_same_stdin_and_restored(repo: Path, tmp_path: Path) -> None:
    hooks = repo / ".git" / "hooks"
    theirs = hooks / "post-rewrite"
    theirs.write_text(f"#!/bin/sh\necho \"$0 $1\" >> {tmp_path}/log\ncat >> {tmp_path}/log\nexit 4\n")
    theirs.chmod(0o750)
    data, mode = theirs.read_bytes(), theirs.stat().st_mode
    start_task_at(repo)
    out = run("hooks", "install", "--runtime", "git", cwd=repo).stdout.decode()
    assert "installed: .git/hooks/post-rewrite (the existing hook runs first, from post-rewrite.majordomus-chained)" in out
    commit_file(repo, "a.txt", "a", "a")
    old = head(repo)
    done = gitp(repo, "commit", "-q", "--amend", "-m", "a2")
    assert done.returncode == 0
    logged = (tmp_path / "log").read_text()
    assert logged == f".git/hooks/post-rewrite amend\n{old} {head(repo)}\n", logged  # git's own $0
    assert events_named(repo, "git.rewrite")[0]["map"] == {old: head(repo)}  # both read the one stdin
    gone = run("hooks", "uninstall", "--runtime", "git", cwd=repo).stdout.decode().splitlines()
    assert gone == ["removed: .git/hooks/post-commit (post-commit)",
                    "restored: .git/hooks/post-rewrite (as it was before `hooks install`)"]
    assert theirs.read_bytes() == data and theirs.stat().st_mode == mode
    assert sorted(p.name for p in hooks.iterdir()) == ["post-rewrite"]


def test_install_adds_post_rewrite_to_an_earlier_post_commit_only_install(repo: Path) -> None:
    from majordomus.hooks import githook

    hooks = repo / ".git" / "hooks"
    (hooks / "post-commit").write_bytes(githook.SCRIPT)  # what an install before post-rewrite wrote
    (hooks / "post-commit").chmod(0o755)
    out = run_here("hooks", "install", "--runtime", "git", cwd=repo).stdout.decode().splitlines()
    assert out == ["already installed: .git/hooks/post-commit", "installed: .git/hooks/post-rewrite (post-rewrite)"]


@pytest.mark.parametrize("action", ["install", "uninstall"])
def test_an_edited_post_rewrite_hook_is_refused_and_nothing_is_written(repo: Path, action: str) -> None:
    hooks = repo / ".git" / "hooks"
    assert run_here("hooks", "install", "--runtime", "git", cwd=repo).returncode == 0
    hook = hooks / "post-rewrite"
    hook.write_text(hook.read_text() + "echo mine\n")
    before = sorted((p.name, p.read_bytes()) for p in hooks.iterdir())
    receipts = sorted(os.listdir(state_dir(repo) / "receipts")) if (state_dir(repo) / "receipts").exists() else None
    result = run_here("hooks", action, "--runtime", "git", cwd=repo)
    assert result.returncode == 10 and b"post-rewrite is a majordomus hook edited since" in result.stderr
    assert b"nothing was written" in result.stderr and result.stdout == b""
    assert sorted((p.name, p.read_bytes()) for p in hooks.iterdir()) == before  # post-commit untouched too
    after = sorted(os.listdir(state_dir(repo) / "receipts")) if (state_dir(repo) / "receipts").exists() else None
    assert after == receipts


def test_a_parked_post_rewrite_refuses_before_post_commit_is_written(repo: Path) -> None:
    hooks = repo / ".git" / "hooks"
    (hooks / "post-rewrite").write_text("#!/bin/sh\n")
    (hooks / "post-rewrite.majordomus-chained").write_text("#!/bin/sh\necho old\n")
    before = sorted((p.name, p.read_bytes()) for p in hooks.iterdir())
    ledger = ledger_bytes(repo)
    result = run_here("hooks", "install", "--runtime", "git", cwd=repo)
    assert result.returncode == 10 and b"post-rewrite.majordomus-chained already exists" in result.stderr
    assert b"nothing was written" in result.stderr
    assert sorted((p.name, p.read_bytes()) for p in hooks.iterdir()) == before
    assert not (hooks / "post-commit").exists() and ledger_bytes(repo) == ledger


# ---------------------------------------------------------------- `hook rewrite`: bounded and fail-open


def pairs(n: int, start: int = 0) -> list[tuple[str, str]]:
    return [(f"{i:08x}" + "0" * 32, f"{i + 1_000_000:08x}" + "1" * 32) for i in range(start, start + n)]


def mapping_text(items: list[tuple[str, str]]) -> str:
    return "".join(f"{old} {new}\n" for old, new in items)


def test_hook_rewrite_keeps_git_s_mapping_bounded(repo: Path) -> None:
    start_task_at(repo)
    many = pairs(rewrites.STDIN_MAX_LINES + 5)
    result = run_here("hook", "rewrite", "rebase", cwd=repo, input=mapping_text(many) + "not a pair\n")
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    [event] = events_named(repo, "git.rewrite")
    read = many[:rewrites.STDIN_MAX_LINES]  # the first 10,000 lines
    # the count is of every line git gave (one a commit), those past the bound counted though not read: never
    # the bound itself, which said "10000 commits rewritten" of a rebase of 200,000
    assert event["rewritten"] == len(many) + 1 and event["head"] == git(repo, "rev-parse", "HEAD").strip()
    assert list(event["map"].items()) == read[-rewrites.MAP_MAX:]  # the newest pairs are kept
    assert event["omitted"] == len(many) + 1 - rewrites.MAP_MAX

    # the most one event keeps, with sha256 ids: far below a ledger line's bound
    wide = [(f"{i:064x}", f"{i + 1_000_000:064x}") for i in range(rewrites.MAP_MAX)]
    assert run_here("hook", "rewrite", "rebase", cwd=repo, input=mapping_text(wide)).returncode == 0
    line = (state_dir(repo) / "ledger.jsonl").read_bytes().splitlines()[-1]
    assert b'"git.rewrite"' in line and 1 << 18 < len(line) < 1 << 19


def test_hook_rewrite_reads_at_most_a_mebibyte(repo: Path) -> None:
    start_task_at(repo)
    lines = mapping_text(pairs(20_000))
    result = run("hook", "rewrite", "rebase", cwd=repo, input=lines)
    assert (result.returncode, result.stderr) == (0, b"")
    [event] = events_named(repo, "git.rewrite")
    assert event["rewritten"] == 20_000  # all of them, though not every pair was read
    assert event["omitted"] == 20_000 - rewrites.MAP_MAX
    assert len(event["map"]) == rewrites.MAP_MAX  # of the first MiB, all that was read
    assert event["head"] == git(repo, "rev-parse", "HEAD").strip()  # the tip, never the last pair read


def test_hook_rewrite_skips_lines_that_are_not_pairs(repo: Path) -> None:
    start_task_at(repo)
    [(old, new)] = pairs(1)
    text = f"{old} {new} extra words\n{old[:7]} {new}\n\n\x1b[31m junk\n{old} {'f' * 64}\n"
    assert run_here("hook", "rewrite", "amend", cwd=repo, input=text).returncode == 0
    [event] = events_named(repo, "git.rewrite")
    assert event["map"] == {old: new} and event["skipped"] == 3 and "omitted" not in event


@pytest.mark.parametrize("args", [(), ("squash",), ("amend", "extra")])
def test_hook_rewrite_with_a_wrong_argument_records_nothing_and_exits_0(repo: Path, args: tuple[str, ...]) -> None:
    start_task_at(repo)
    before = ledger_bytes(repo)
    result = run_here("hook", "rewrite", *args, cwd=repo, input=mapping_text(pairs(1)))
    assert result.returncode == 0 and b"expected amend or rebase" in result.stderr and b"nothing was recorded" in result.stderr
    assert ledger_bytes(repo) == before


def test_hook_rewrite_never_creates_the_state_directory(repo: Path) -> None:
    result = run_here("hook", "rewrite", "amend", cwd=repo, input=mapping_text(pairs(1)))
    assert (result.returncode, result.stderr) == (0, b"")
    assert not (repo / ".ai").exists()


def test_hook_rewrite_outside_a_repository_is_silent(tmp_path: Path) -> None:
    result = run("hook", "rewrite", "amend", cwd=tmp_path, input=mapping_text(pairs(1)))
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")


def test_hook_rewrite_with_an_unreadable_ledger_stays_fail_open(repo: Path) -> None:
    start_task_at(repo)
    ledger = state_dir(repo) / "ledger.jsonl"
    ledger.unlink()
    ledger.mkdir()  # a directory where the ledger belongs: the append fails, the rebase goes on
    result = run("hook", "rewrite", "amend", cwd=repo, input=mapping_text(pairs(1)))
    assert result.returncode == 0 and b"the session goes on" in result.stderr


def test_hook_rewrite_imports_nothing_heavy(repo: Path) -> None:
    start_task_at(repo)
    got = import_probe(repo, "hook", "rewrite", "amend", input=mapping_text(pairs(2)).encode())
    assert got == {"code": 0, "heavy": []}
    assert len(events_named(repo, "git.rewrite")) == 1  # it did the work


def test_hook_rewrite_help(repo: Path) -> None:
    assert MAJORDOMUS
    result = run("hook", "rewrite", "--help", cwd=repo)
    assert result.returncode == 0 and b"usage: majordomus hook rewrite amend|rebase" in result.stdout


# ---------------------------------------------------------------- reading the mapping


def test_follow_walks_the_chain_and_stops_on_a_cycle() -> None:
    a, b, c = "a" * 40, "b" * 40, "c" * 40
    chain = rewrites.Rewrites({a: (b, "amend"), b: (c, "rebase")})
    assert chain.follow(a) == (c, ["amend", "rebase"]) and chain.follow(c) == (c, [])
    loop = rewrites.Rewrites({a: (b, "amend"), b: (a, "amend")})
    assert loop.follow(a) == (b, ["amend"])


def test_load_reads_the_ledger_once_while_it_is_unchanged_and_newest_wins(repo: Path) -> None:
    from majordomus.workspace import Workspace

    start_task_at(repo)
    [(old, new)] = pairs(1)
    run_here("hook", "rewrite", "amend", cwd=repo, input=f"{old} {new}\n")
    run_here("hook", "rewrite", "rebase", cwd=repo, input=f"{old} {'e' * 40}\n")
    ws = Workspace.open(str(repo))
    first = rewrites.load(ws)
    assert first.follow(old) == ("e" * 40, ["rebase"]) and first.complete
    assert rewrites.load(ws) is first  # one read per state of the ledger, however many records ask
    run_here("checkpoint", cwd=repo, input="later\n")
    assert rewrites.load(ws) is not first


def test_load_is_capped_from_the_tail(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from majordomus.workspace import Workspace

    start_task_at(repo)
    [(old, new)] = pairs(1)
    run_here("hook", "rewrite", "amend", cwd=repo, input=f"{old} {new}\n")
    for i in range(5):
        run_here("checkpoint", cwd=repo, input=f"note {i}\n")
    monkeypatch.setattr(rewrites, "LOOKBACK_BYTES", 600)  # the last checkpoints only
    found = rewrites.load(Workspace.open(str(repo)))
    assert found.follow(old) == (old, []) and not found.complete


def test_ledger_and_watch_show_a_rewrite_as_one_short_line(repo: Path) -> None:
    start_task_at(repo)
    run_here("hook", "rewrite", "rebase", cwd=repo, input=mapping_text(pairs(50)))
    text = run_here("ledger", cwd=repo).stdout.decode().splitlines()[-1]
    assert text.endswith(f"git.rewrite      t1  rebase: 50 commits rewritten, now at {pairs(50)[-1][1][:7]}")
    full = json.loads(run_here("ledger", "--json", cwd=repo).stdout)["events"][-1]
    assert len(full["map"]) == 50  # the mapping is all there for machines
    from majordomus.doctor import watch

    assert watch._describe(full) == f"t1 rebase: 50 commits rewritten, now at {pairs(50)[-1][1][:7]}"


def test_hook_rewrite_reads_under_the_hooks_stdin_deadline_and_never_holds_git(repo: Path) -> None:
    """Design §2a: the hook's stdin is read with a deadline. Side by side (one wait for the suite): a writer
    that sends its mapping and then keeps the pipe open (the edge: what arrived is recorded), one that never
    writes, and an endless stream of NULs (past it: nothing recorded) — each hook is done within the 2 s."""
    import time

    from majordomus.lite import stdin

    start_task_at(repo)
    assert MAJORDOMUS
    mapping = mapping_text(pairs(3))
    began = time.monotonic()
    held = subprocess.Popen([MAJORDOMUS, "hook", "rewrite", "amend"], cwd=repo, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    silent = subprocess.Popen([MAJORDOMUS, "hook", "rewrite", "amend"], cwd=repo, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with open("/dev/zero", "rb") as zeros:
        endless = subprocess.Popen([MAJORDOMUS, "hook", "rewrite", "rebase"], cwd=repo, stdin=zeros,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert held.stdin is not None
    held.stdin.write(mapping.encode())
    held.stdin.flush()  # and the pipe stays open, as a hook manager that never closes it leaves it
    try:
        codes = [proc.wait(timeout=stdin.TOTAL_S + 3) for proc in (held, silent, endless)]
    finally:
        for proc in (held, silent, endless):
            if proc.stdin is not None:
                proc.stdin.close()
            if proc.poll() is None:
                proc.kill()
    took = time.monotonic() - began
    assert codes == [0, 0, 0] and took < stdin.TOTAL_S + 2.5, (codes, took)
    [event] = events_named(repo, "git.rewrite")  # the held writer's mapping; the other two had none
    assert event["how"] == "amend" and event["rewritten"] == 3 and event["head"] == pairs(3)[-1][1]


def test_read_head_keeps_the_first_bytes_and_counts_the_lines_past_them(tmp_path: Path) -> None:
    from majordomus.lite import stdin

    data = b"".join(b"%d\n" % i for i in range(100))
    source = tmp_path / "m"
    source.write_bytes(data)
    with open(source, "rb") as stream:
        assert stdin.read_head(stream, len(data)) == (data, 0)  # the edge: all of it fits
    with open(source, "rb") as stream:
        head, past = stdin.read_head(stream, 9)  # one past: 10 bytes kept, the rest counted
    assert head == data[:10] and past == data[10:].count(b"\n")
