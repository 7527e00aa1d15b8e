"""The one git boundary (design §4): one runner for every git subprocess, honouring the place's
environment, and object ids that cannot be wrong once built."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import commit_file, git, run_here, snapshot, start_task, state_dir

from majordomus.errors import EnvironmentProblem
from majordomus.git import run, status
from majordomus.git.oid import Oid
from majordomus.identity import cached_root
from majordomus.lite import dotgit

PACKAGE = Path(__file__).resolve().parent.parent / "majordomus"
SHA1, SHA256 = "a" * 40, "b" * 64


@pytest.mark.parametrize("value", [SHA1, SHA256])
def test_an_oid_is_a_full_id(value):
    assert Oid(value) == value and Oid(value).short == value[:7]


@pytest.mark.parametrize("value", ["a" * 39, "a" * 41, "a" * 63, "a" * 65, "A" * 40, "g" * 40, "", "a" * 20,
                                   "a" * 39 + "\n"])
def test_an_oid_refuses_anything_else(value):
    with pytest.raises(ValueError, match="not a full object id"):
        Oid(value)
    assert Oid.parse(value) is None
    assert Oid.parse(None) is None


def test_only_the_runner_starts_git():
    """No `subprocess` call with a literal "git" anywhere but git/run.py."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "git/run.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.List) and node.elts and isinstance(node.elts[0], ast.Constant) \
                    and node.elts[0].value == "git":
                found.append(f"{rel}:{node.lineno}")
    assert found == []


def test_the_runner_says_what_git_said_with_one_hint(repo):
    place = dotgit.locate(str(repo))
    assert place is not None
    with pytest.raises(EnvironmentProblem) as caught:
        run.git(place, "rev-parse", "--verify", "no-such-ref")
    assert "fatal:" in caught.value.message and caught.value.hint == run.hint(("rev-parse", "--verify"), str(repo))
    done = run.run(place, "rev-parse", "--verify", "no-such-ref")
    assert done.returncode == 128 and done.reason().startswith("fatal:")


def test_named_questions(repo):
    place = dotgit.locate(str(repo))
    assert place is not None
    assert status.is_tracked(place, "README") and not status.is_tracked(place, "nothing-here")
    assert status.remotes(place) == []
    git(repo, "remote", "add", "origin", str(repo))
    assert status.remotes(place) == ["origin"]
    assert status.hooks_dir(place) == str(repo / ".git" / "hooks")
    git(repo, "config", "core.hooksPath", "my-hooks")
    assert status.hooks_dir(place) == str(repo / "my-hooks")


def test_sync_push_honours_git_dir(repo, remote, tmp_path):
    """With the repository found through GIT_DIR/GIT_WORK_TREE only, sync talks to the remote through the
    same environment (it used to run git without it, in a directory that is not a repository)."""
    shutil.move(str(repo / ".git"), str(tmp_path / "elsewhere.git"))
    (repo / "sub").mkdir()
    # relative, as a user types them: against the current directory, which is not the worktree's top
    env = {"GIT_DIR": "../../elsewhere.git", "GIT_WORK_TREE": ".."}
    assert run_here("task", "start", "t1", cwd=repo / "sub", env=env).returncode == 0
    pushed = run_here("sync", "push", "origin", cwd=repo / "sub", env=env)
    assert pushed.returncode == 0, pushed.stderr
    assert "refs/majordomus/machines/" in git(remote, "for-each-ref", "--format=%(refname)")


# ---------------------------------------------------------------- the root-commit cache (design §2a)


def test_the_cache_line_as_written_is_used():
    assert cached_root(f"{SHA1} {'c' * 40}\n".encode(), SHA1) == "c" * 40
    assert cached_root(f"{SHA256} {'c' * 64}\n".encode(), SHA256) == "c" * 64


@pytest.mark.parametrize("data", [
    f"{SHA1} {'c' * 20}\n", f"{SHA1} {'c' * 39}\n", f"{SHA1} {'c' * 40}", f"{SHA1} {'c' * 41}\n",
    f"{SHA1} {'c' * 64}\n", f"{SHA1} {'C' * 40}\n", f"{'d' * 40} {'c' * 40}\n", f"{SHA1}  {'c' * 40}\n",
    f"{SHA1} {'c' * 40}\n{SHA1} {'c' * 40}\n", "",
])
def test_a_cache_line_that_is_not_exactly_as_written_is_ignored(data):
    assert cached_root(data.encode(), SHA1) is None


def test_a_truncated_root_commit_cache_never_reaches_a_record(cli, repo):
    root = git(repo, "rev-list", "--max-parents=0", "HEAD")
    start_task(cli)
    assert cli("checkpoint", input="first\n").exit_code == 0
    cache = state_dir(repo) / "cache" / "root-commit"
    head = git(repo, "rev-parse", "HEAD")
    for bad in (f"{head} {root[:20]}", f"{head} {root[:39]}\n", f"{head} {root}"):
        cache.write_text(bad)  # truncated: the id, or only its newline
        out = cli("checkpoint", input=f"after {len(bad)}\n")
        assert out.exit_code == 0, out
        text = (repo / out.stdout.strip()).read_text()
        assert f'repo_id: "{root}"' in text
        assert cache.read_text() == f"{head} {root}\n"  # rebuilt
    commit_file(repo, "x.txt", "x")
    assert f'repo_id: "{root}"' in (repo / cli("checkpoint", input="moved\n").stdout.strip()).read_text()


def test_looking_never_takes_a_lock_the_users_git_needs(cli, repo, tmp_path):
    """`git status` refreshing a stale index takes `.git/index.lock`, and a `git add` the user runs at that
    moment fails ("Unable to create index.lock: File exists"). Every git command majordomus runs passes
    `--no-optional-locks`: a checkpoint, a brief and a hook over a stale index open no lock of git's."""
    from helpers import MAJORDOMUS, require_tool

    strace = require_tool("strace")
    start_task(cli, "t1")
    readme = repo / "README"
    for args, stdin in ((("checkpoint",), b"looking only\n"), (("brief",), b""), (("hook", "session-start"), b"{}")):
        stamp = readme.stat()
        os.utime(readme, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000_000))  # the index is stale now
        trace = tmp_path / "trace"
        done = subprocess.run([strace, "-f", "-qq", "-e", "trace=openat,open,rename", "-o", str(trace),
                               str(MAJORDOMUS), *args], cwd=repo, input=stdin, capture_output=True, check=False)
        assert done.returncode == 0, (args, done.stderr)
        locks = [line for line in trace.read_text().splitlines() if "index.lock" in line]
        assert locks == [], (args, locks)
    stamp = readme.stat()
    os.utime(readme, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000_000))
    looked = subprocess.run([strace, "-f", "-qq", "-e", "trace=openat", "-o", str(trace), "git", "status"],
                            cwd=repo, capture_output=True, check=False)
    assert looked.returncode == 0 and "index.lock" in trace.read_text()  # git's own status does take it


@pytest.mark.parametrize("raised, words", [(FileNotFoundError(2, "No such file or directory"), "install git"),
                                           (OSError(24, "Too many open files"), "ulimit -n")])
def test_git_that_cannot_start_says_why_in_its_words(repo, monkeypatch, raised, words):
    """Not on PATH: install it. No descriptor or process left: not "install git", which would mislead."""
    from majordomus.lite import spawn

    def refused(*args, **kwargs):
        raise raised

    monkeypatch.setattr(spawn, "run", refused)
    with pytest.raises(EnvironmentProblem) as caught:
        run.git(dotgit.locate(str(repo)), "status")
    assert "cannot run git" in caught.value.message and words in caught.value.hint


@pytest.mark.parametrize("deadline", [None, 5.0])
def test_a_program_started_in_another_directory_is_bounded_as_one_started_here(tmp_path, monkeypatch, deadline):
    """posix_spawn takes no working directory, so a program for another one starts through subprocess: what
    it prints is bounded all the same (stopped past MAX_OUTPUT), and with a deadline it is stopped with what
    it started. The edge: output under the bound is read whole, its exit code kept."""
    from majordomus.lite import spawn

    monkeypatch.setattr(spawn, "MAX_OUTPUT", 1 << 20)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with pytest.raises(spawn.TooMuch):
        spawn.run(["sh", "-c", "yes"], str(elsewhere), timeout=deadline)
    code, out, _err = spawn.run(["sh", "-c", "pwd; head -c 1000 /dev/zero; exit 3"], str(elsewhere), timeout=deadline)
    assert code == 3 and out.startswith(f"{elsewhere}\n".encode()) and len(out) == len(f"{elsewhere}\n") + 1000
    if deadline is not None:
        mark = f"34.{os.getpid()}"
        with pytest.raises(TimeoutError):
            spawn.run(["sh", "-c", f"sleep {mark}1 & exec sleep {mark}2"], str(elsewhere), timeout=0.5)
        from helpers import gone

        assert gone(mark) == []


@pytest.mark.parametrize("command, stdin", [(("checkpoint",), "a note\n"), (("run", "--", "true"), "")])
def test_a_history_with_no_root_commit_is_exit_12_with_nothing_written(repo, command, stdin):
    """A replace (or graft) that makes the first-parent history a cycle leaves no root commit, so no
    repository id to record: exit 12 saying so, never 70, and nothing written. One past the edge: with the
    replacement gone, the same command writes."""
    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    first = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    second = git(repo, "rev-parse", "HEAD").strip()
    (state_dir(repo) / "cache" / "root-commit").unlink(missing_ok=True)  # asked of git, not of the cache
    git(repo, "replace", "--graft", first, second)
    files = lambda: {k: v for k, v in snapshot(repo).items() if not k.endswith("/")}  # noqa: E731 (`run` makes runs/)
    before = files()
    done = run_here(*command, cwd=repo, input=stdin)
    assert done.returncode == 12 and b"no root commit" in done.stderr and b"git replace -l" in done.stderr, done
    assert files() == before
    git(repo, "replace", "-d", first)
    assert run_here(*command, cwd=repo, input=stdin).returncode == 0


@pytest.mark.parametrize("fifo", [".gitignore", ".ai/.gitignore", "deep/er/.gitignore", ".git/info/exclude"])
def test_a_fifo_where_git_reads_an_ignore_file_ends_within_the_bound_never_a_hang(cli, repo, monkeypatch, fifo):
    """git opens every ignore file it reads and waits there for ever on a FIFO (its own `git status` does):
    each local git command ends within `run.LOCAL_SECONDS`, then exit 12 naming the command and the likely
    cause, nothing written. One past: a regular file there, the same command lands."""
    start_task(cli, "t1")
    assert run_here("checkpoint", cwd=repo, input="first\n").returncode == 0
    monkeypatch.setattr(run, "LOCAL_SECONDS", 0.3)
    path = repo / fifo
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    before = snapshot(repo)
    for args, stdin in ((("checkpoint",), "a note\n"), (("doctor",), None), (("brief",), None)):
        done = run_here(*args, cwd=repo, input=stdin, timeout=10)  # what waits longer fails the test here
        err = done.stderr.decode()
        assert done.returncode in ((12,) if args == ("checkpoint",) else (0, 1, 12)), (args, err)
        if done.returncode == 12:  # it asked git something that reads the ignore files (git status)
            assert "did not answer within 0.3 s; it was stopped" in err and "a FIFO where git reads a file" in err
        assert snapshot(repo) == before
    path.unlink()
    path.write_text("")
    assert run_here("checkpoint", cwd=repo, input="a note\n").returncode == 0
