"""`majordomus.api` (design §20): the read-only Python API returns tasks, records as `frontmatter.Post`, and
the ledger, newest records first; it never writes, and it reads the state as the CLI does (design §2a)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import frontmatter
import pytest
from helpers import HANDOFF_BODY, git, snapshot, state_dir

from majordomus import api
from majordomus.errors import MajordomusError

# design §4: the identity keys, in order.
IDENTITY = ["schema_version", "kind", "timestamp", "task", "profile", "owner", "repo_id", "worktree", "branch",
            "head", "worktree_state", "changed_files"]


@pytest.fixture
def worked(cli: Any, repo: Path) -> Path:
    """t1: two checkpoints and a handoff; t2: active here, one checkpoint."""
    assert cli("task", "start", "t1", "--title", "Fix login").exit_code == 0
    assert cli("checkpoint", input="first note\n").exit_code == 0
    assert cli("checkpoint", input="second note\nline two\n").exit_code == 0
    assert cli("handoff", input=HANDOFF_BODY).exit_code == 0
    assert cli("task", "start", "t2").exit_code == 0
    assert cli("checkpoint", input="t2 note\n").exit_code == 0
    return repo


def every_call(ws: api.Workspace) -> list[Any]:
    return [ws.tasks(), ws.active_task(), ws.checkpoints(), ws.checkpoints(task="t1"), ws.handoffs(),
            ws.handoffs(task="t1"), ws.runs(), ws.runs(task="t1"), ws.ledger(), ws.ledger(task="t1")]


def test_records_are_frontmatter_posts_newest_first(worked: Path) -> None:
    ws = api.open(str(worked))
    posts = ws.checkpoints()
    assert [p.content for p in posts] == ["t2 note", "second note\nline two", "first note"]
    for post in posts:
        assert isinstance(post, frontmatter.Post)
        data = Path(post.path).read_bytes()
        # what python-frontmatter itself reads from the file is what the API returns
        assert post.metadata == frontmatter.loads(data.decode()).metadata
        assert list(post.metadata)[:len(IDENTITY)] == IDENTITY
        assert post["kind"] == "checkpoint" and post["head"] == git(worked, "rev-parse", "HEAD")
        assert post.sha256 == hashlib.sha256(data).hexdigest()
        assert Path(post.path).parent == state_dir(worked) / "checkpoints" and post.name == Path(post.path).name
    assert [p.content for p in ws.checkpoints(task="t1")] == ["second note\nline two", "first note"]
    assert [p["task"] for p in ws.checkpoints(task="t2")] == ["t2"]
    assert ws.checkpoints(task="nobody") == []
    (handoff,) = ws.handoffs()
    assert handoff["kind"] == "handoff" and handoff.content == HANDOFF_BODY.rstrip("\n")
    assert handoff["checkpoints"] == [os.path.relpath(p.path, state_dir(worked)) for p in reversed(posts[1:])]
    assert ws.handoffs(task="t2") == []
    assert frontmatter.dumps(handoff).endswith(HANDOFF_BODY.rstrip("\n"))  # the library writes it back out


def test_tasks_active_task_and_ledger(worked: Path) -> None:
    ws = api.open(worked)  # a path object works too
    tasks = ws.tasks()
    assert [(t["id"], t["status"], t["title"]) for t in tasks] == [("t1", "handed-off", "Fix login"),
                                                                   ("t2", "active", "t2")]
    assert ws.active_task()["id"] == "t2" and ws.active_task()["worktree"] == str(worked)
    events = ws.ledger()
    assert [e["event"] for e in events] == ["task.start", "task.checkpoint", "task.checkpoint", "task.handoff",
                                            "task.start", "task.checkpoint"]
    assert [e["seq"] for e in events] == [1, 2, 3, 4, 5, 6]
    assert [e["event"] for e in ws.ledger(task="t2")] == ["task.start", "task.checkpoint"]
    assert ws.worktree == str(worked) and ws.branch == "main"
    assert ws.state_dir == str(state_dir(worked))


def test_active_task_is_of_this_worktree_and_branch(worked: Path, tmp_path: Path) -> None:
    git(worked, "checkout", "-q", "-b", "other")
    ws = api.open(worked)
    assert ws.active_task() is None
    assert len(ws.tasks()) == 2 and len(ws.checkpoints()) == 3
    linked = tmp_path / "linked"
    git(worked, "worktree", "add", "-q", str(linked), "main")
    (linked / "sub").mkdir()
    from_linked = api.open(linked / "sub")
    assert from_linked.active_task() is None  # t2 is active in the main worktree, not in this one
    assert [p.content for p in from_linked.checkpoints()] == [p.content for p in ws.checkpoints()]


def test_nothing_is_ever_written(worked: Path) -> None:
    before = snapshot(worked)
    every_call(api.open(worked))
    assert snapshot(worked) == before


def test_a_repository_without_state_reads_as_empty_and_stays_so(repo: Path) -> None:
    before = snapshot(repo)
    assert every_call(api.open(repo)) == [[], None, [], [], [], [], [], [], [], []]
    assert snapshot(repo) == before and not (repo / ".ai").exists()


def test_runs_are_read_from_runs_when_there_are_some(worked: Path) -> None:
    runs = state_dir(worked) / "runs"
    runs.mkdir(mode=0o700)
    text = ('---\nschema_version: 1\nkind: "run"\ntimestamp: "2026-09-03T19:45:00Z"\ntask: "t2"\n'
            'argv:\n- "pytest"\nexit_status: 0\n---\n3 passed\n')
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]  # a name made from its bytes, as every record's
    (runs / f"20260903T194500Z--main--0000000--{digest}.md").write_text(text)
    ws = api.open(worked)
    (run,) = ws.runs()
    assert isinstance(run, frontmatter.Post)
    assert run["kind"] == "run" and run["argv"] == ["pytest"] and run["exit_status"] == 0 and run.content == "3 passed"
    assert [r.path for r in ws.runs(task="t2")] == [run.path]
    assert ws.runs(task="t1") == []


def test_outside_a_repository_is_an_environment_error(tmp_path: Path) -> None:
    bare = tmp_path / "not-a-repo"
    bare.mkdir()
    with pytest.raises(MajordomusError) as caught:
        api.open(bare)
    assert caught.value.code == 12 and "not inside a git work tree" in caught.value.message
    assert list(bare.iterdir()) == []


@pytest.mark.parametrize("call", ["checkpoints", "handoffs", "runs", "ledger"])
def test_a_bad_task_id_is_a_usage_error(worked: Path, call: str) -> None:
    before = snapshot(worked)
    with pytest.raises(MajordomusError) as caught:
        getattr(api.open(worked), call)(task="../t1")
    assert caught.value.code == 2 and "is not a valid task id" in caught.value.message
    assert snapshot(worked) == before


def test_a_symlinked_record_is_refused_not_followed(worked: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("---\nkind: \"checkpoint\"\ntask: \"t1\"\n---\nnot a record of ours\n")
    link = state_dir(worked) / "checkpoints" / "20991231T000000Z--main--0000000--0000000000000000.md"
    link.symlink_to(secret)
    before = snapshot(worked)
    with pytest.raises(MajordomusError) as caught:
        api.open(worked).checkpoints()
    assert caught.value.code == 12 and "is a symbolic link" in caught.value.message and link.name in caught.value.message
    assert snapshot(worked) == before


def test_a_symlinked_directory_is_refused_not_listed(worked: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    (state_dir(worked) / "handoffs").rename(elsewhere)
    (state_dir(worked) / "handoffs").symlink_to(elsewhere)
    before = snapshot(worked)
    with pytest.raises(MajordomusError) as caught:
        api.open(worked).handoffs()
    assert caught.value.code == 12 and "handoffs is a symbolic link" in caught.value.message
    assert snapshot(worked) == before


def test_a_fifo_record_is_refused_without_waiting(worked: Path) -> None:
    fifo = state_dir(worked) / "checkpoints" / "20991231T000000Z--main--0000000--0000000000000000.md"
    os.mkfifo(fifo)
    with pytest.raises(MajordomusError) as caught:
        api.open(worked).checkpoints()
    assert caught.value.code == 12 and "is a FIFO" in caught.value.message


def test_a_record_without_front_matter_is_named(worked: Path) -> None:
    broken = state_dir(worked) / "handoffs" / "20991231T000000Z--main--0000000--0000000000000000.md"
    broken.write_text("no front matter here\n")
    before = snapshot(worked)
    with pytest.raises(MajordomusError) as caught:
        api.open(worked).handoffs()
    assert caught.value.code == 12 and broken.name in caught.value.message and "majordomus doctor" in caught.value.hint
    assert snapshot(worked) == before


@pytest.mark.parametrize("call", [lambda: api.open("a\0b"), lambda: api.open(b"."),  # type: ignore[arg-type]
                                  lambda: api.open(".").checkpoints(5), lambda: api.open(".").ledger(b"t1"),  # type: ignore[arg-type]
                                  lambda: api.open(".").runs(["t1"]), lambda: api.open(".").handoffs({"t": 1})])  # type: ignore[arg-type]
def test_an_argument_of_the_wrong_shape_is_a_majordomus_error_never_another_exception(cli, repo, monkeypatch, call):
    """The API says what went wrong as the CLI does: a path holding NUL or given as bytes, a task id that is
    a number, bytes or a list, are `MajordomusError` (code 2), not ValueError, TypeError or AttributeError."""
    assert cli("task", "start", "t1").exit_code == 0
    monkeypatch.chdir(repo)
    before = snapshot(repo)
    with pytest.raises(MajordomusError) as caught:
        call()
    assert caught.value.code == 2 and snapshot(repo) == before
