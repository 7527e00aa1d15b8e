"""`majordomus handoff` (design §7): sections, identity, the task's release, and every refusal."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from freezegun import freeze_time
from helpers import HANDOFF_BODY, git, ledger_bytes, ledger_events, run_here, snapshot, state_dir

from majordomus.store import records

BODY = HANDOFF_BODY
IDENTITY = ["schema_version", "kind", "timestamp", "task", "profile", "owner", "repo_id", "worktree", "branch",
            "head", "worktree_state", "changed_files"]


events = ledger_events


def front_matter(path: Path) -> dict[str, Any]:
    return records.split(path.read_bytes())[0]


def test_handoff_writes_a_record_and_releases_the_task(cli: Any, repo: Path) -> None:
    cli("task", "start", "t1", "--objective", "Fix login")
    with freeze_time("2026-09-03T19:45:00Z"):
        result = cli("handoff", input=BODY)
    assert result.exit_code == 0, result.output
    rel = result.stdout.strip()
    assert rel.startswith(".ai/local/state/handoffs/20260903T194500Z--main--")
    assert "continue it anywhere with `majordomus task resume t1`" in result.stderr
    path = repo / rel
    assert os.stat(path).st_mode & 0o777 == 0o600
    data = path.read_bytes()
    meta, body = records.split(data)
    assert list(meta) == IDENTITY + ["previous_handoff", "checkpoints"]
    assert meta["kind"] == "handoff" and meta["task"] == "t1" and meta["timestamp"] == "2026-09-03T19:45:00Z"
    assert meta["head"] == git(repo, "rev-parse", "HEAD") and meta["worktree"] == str(repo)
    assert meta["previous_handoff"] is None and meta["checkpoints"] == []
    assert body == BODY.rstrip("\n")
    assert path.name.split("--")[-1] == records.sha256(data)[:16] + ".md"
    task = json.loads(cli("task", "show", "t1", "--json").stdout)
    assert task["status"] == "handed-off" and task["handoff"] == os.path.relpath(path, state_dir(repo))
    last = events(repo)[-1]
    assert last["event"] == "task.handoff" and last["path"] == task["handoff"]
    assert last["sha256"] == records.sha256(data) and last["checkpoints"] == 0
    # The task left this worktree: nothing is active here any more.
    assert cli("checkpoint", input="x\n").exit_code == 11
    assert cli("ledger", "--verify").exit_code == 0


def test_front_matter_lists_previous_handoff_and_checkpoints_since(cli: Any, repo: Path) -> None:
    with freeze_time("2026-09-03T10:00:00Z"):
        cli("task", "start", "t1")
    with freeze_time("2026-09-03T10:01:00Z"):
        first = cli("checkpoint", input="first\n").stdout.strip()
    with freeze_time("2026-09-03T10:02:00Z"):
        second = cli("checkpoint", input="second\n").stdout.strip()
        cli("task", "start", "other")  # another task's checkpoint is not listed
        cli("checkpoint", input="elsewhere\n")
        cli("task", "resume", "t1")
    with freeze_time("2026-09-03T10:03:00Z"):
        handoff_one = cli("handoff", input=BODY).stdout.strip()
    meta = front_matter(repo / handoff_one)
    strip = len(".ai/local/state/")
    assert meta["checkpoints"] == [first[strip:], second[strip:]]
    assert meta["previous_handoff"] is None
    with freeze_time("2026-09-03T10:03:00Z"):  # same second as the handoff: still counted, once
        cli("task", "resume", "t1")
        third = cli("checkpoint", input="third\n").stdout.strip()
    with freeze_time("2026-09-03T10:05:00Z"):
        handoff_two = cli("handoff", input=BODY.replace("half done", "done")).stdout.strip()
    meta = front_matter(repo / handoff_two)
    assert meta["previous_handoff"] == handoff_one[strip:]
    assert meta["checkpoints"] == [third[strip:]]
    assert events(repo)[-1]["previous_handoff"] == handoff_one[strip:]


def test_sections_are_case_insensitive_and_may_carry_more(cli: Any, repo: Path) -> None:
    cli("task", "start", "t1")
    body = ("# Handoff of t1\nintro\n\n## state\nok\n### detail\nmore\n## DECISIONS ##\n- one\n"
            "## Open items:\n  none left\n## Next actions\n1. ship\n## Notes\nextra\n")
    assert cli("handoff", input=body).exit_code == 0


# ---------------------------------------------------------------- refusals


def _refused(cli: Any, repo: Path, body: str | bytes, code: int, *words: str) -> None:
    before, ledger = snapshot(repo), ledger_bytes(repo)
    result = cli("handoff", input=body)
    assert result.exit_code == code, result.output
    for word in words:
        assert word in result.stderr, result.stderr
    assert result.stderr.startswith("majordomus: ") and "\nhint: " in result.stderr
    assert snapshot(repo) == before and ledger_bytes(repo) == ledger


def test_missing_and_empty_sections_are_all_named_in_one_refusal(cli: Any, repo: Path) -> None:
    cli("task", "start", "t1")
    body = "## State\nhalf done\n## Decisions\n\n   \n## Next actions\n### only a subheading\n"
    _refused(cli, repo, body, 10, "missing `## Open items`", "empty `## Decisions`, `## Next actions`",
             "nothing was written")
    _refused(cli, repo, "", 10, "missing `## State`, `## Decisions`, `## Open items`, `## Next actions`")
    fenced = BODY.replace("## Open items\nDoes", "```\n## Open items\n```\nDoes")
    _refused(cli, repo, fenced, 10, "missing `## Open items`")
    _refused(cli, repo, BODY.replace("## State", "# State"), 10, "missing `## State`")


def test_custom_required_sections_come_from_config(cli: Any, repo: Path) -> None:
    (repo / ".ai").mkdir()
    (repo / ".ai" / "config.yaml").write_text("handoff:\n  required_sections: [Summary]\n")
    cli("task", "start", "t1")
    _refused(cli, repo, BODY, 10, "missing `## Summary`")
    assert cli("handoff", input="## Summary\nall done\n").exit_code == 0


def test_body_rules_are_those_of_checkpoints(cli: Any, repo: Path) -> None:
    cli("task", "start", "t1")
    _refused(cli, repo, BODY.encode() + b"\xff\xfe", 10, "not valid UTF-8")
    _refused(cli, repo, BODY + "bell\x07\n", 10, "control character U+0007 on line 12")
    _refused(cli, repo, BODY + "Repo ID: forged\n", 10, "identity field `repo_id` on line 12")
    _refused(cli, repo, "---\ntask: x\n---\n" + BODY, 10, "starts with `---`")


def test_over_max_bytes_is_refused(cli: Any, repo: Path) -> None:
    cli("task", "start", "t1")
    big = BODY + ("filler line\n" * 6000)
    assert len(big.encode()) > 65536
    _refused(cli, repo, big, 10, f"is {len(big.encode())} bytes; the limit is 65536")  # the real size
    # Lines are not capped for a handoff: a long one under the byte limit passes.
    assert cli("handoff", input=BODY + "line\n" * 200).exit_code == 0


def test_handoff_needs_an_active_task(cli: Any, repo: Path) -> None:
    _refused(cli, repo, BODY, 11, "no active task")
    cli("task", "start", "t1")
    cli("handoff", input=BODY)
    _refused(cli, repo, BODY, 11, "no active task")


def test_crlf_body_is_stored_with_lf(cli: Any, repo: Path) -> None:
    cli("task", "start", "t1")
    rel = cli("handoff", input=BODY.replace("\n", "\r\n")).stdout.strip()
    assert b"\r" not in (repo / rel).read_bytes()


# ---------------------------------------------------------------- --show and --list


def test_show_and_list(cli: Any, repo: Path) -> None:
    cli("task", "start", "t1")
    assert cli("handoff", "--show").stdout == ""
    assert cli("handoff", "--show", "--json").stdout == "null\n"
    with freeze_time("2026-09-03T19:45:00Z"):
        rel = cli("handoff", input=BODY).stdout.strip()
    result = cli("handoff", "--show")
    assert result.exit_code == 11 and "majordomus handoff --show TASK" in result.stderr
    assert cli("handoff", "--show", "t1").stdout.encode() == (repo / rel).read_bytes()
    shown = json.loads(cli("handoff", "--show", "t1", "--json").stdout)
    assert shown["path"] == rel and shown["kind"] == "handoff" and shown["task"] == "t1"
    cli("task", "start", "t2")
    with freeze_time("2026-09-03T19:50:00Z"):
        rel2 = cli("handoff", input=BODY).stdout.strip()
    listed = cli("handoff", "--list").stdout.splitlines()
    assert [line.split()[-1] for line in listed] == [rel2, rel]
    as_json = json.loads(cli("handoff", "--list", "--json").stdout)
    assert [d["path"] for d in as_json] == [rel2, rel] and as_json[0]["task"] == "t2"
    assert {"path", "timestamp", "task", "branch", "head", "worktree", "lines", "sha256"} <= set(as_json[0])


@pytest.mark.parametrize("args", [("--show", "--list"), ("t1",), ("--list", "t1"), ("t1", "--json")])
def test_usage_errors(cli: Any, repo: Path, args: tuple[str, ...]) -> None:
    cli("task", "start", "t1")
    before = snapshot(repo)
    result = cli("handoff", *args, input=BODY)
    assert result.exit_code == 2 and result.stderr.startswith("majordomus: ")
    assert snapshot(repo) == before


def test_show_of_an_unknown_task_is_a_usage_error(repo: Path) -> None:
    result = run_here("handoff", "--show", "nope", cwd=repo)
    assert result.returncode == 2 and b"no task `nope`" in result.stderr


# ---------------------------------------------------------------- taking over in another worktree


def test_resume_in_a_linked_worktree_names_who_took_it(cli: Any, repo: Path, tmp_path: Path) -> None:
    cli("task", "start", "t1", "--objective", "Fix login")
    cli("handoff", input=BODY)
    other = tmp_path / "wt2"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(other))
    result = run_here("task", "resume", "t1", cwd=other, env={"MAJORDOMUS_OWNER": "bob@example.com"})
    assert result.returncode == 0, result.stderr
    resume = events(repo)[-1]
    assert resume["event"] == "task.resume" and resume["by"] == "bob@example.com"
    assert resume["worktree"] == str(other) and resume["branch"] == "feature"
    assert resume["previous"] == {"worktree": str(repo), "branch": "main", "status": "handed-off"}
    task = json.loads(cli("task", "show", "t1", "--json").stdout)
    assert task["status"] == "active" and task["worktree"] == str(other)


def test_resume_works_after_the_context_directory_is_removed(cli: Any, repo: Path) -> None:
    cli("task", "start", "t1", "--objective", "Fix login")
    cli("context", "pin", "decision", "--", "Keep it.")
    cli("handoff", input=BODY)
    import shutil

    shutil.rmtree(state_dir(repo) / "context" / "t1")
    result = run_here("task", "resume", "t1", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert run_here("checkpoint", cwd=repo, input="resumed without pins\n").returncode == 0


@pytest.mark.parametrize("as_json", [(), ("--json",)])
def test_show_refuses_a_handoff_whose_content_was_replaced(cli: Any, repo: Path, as_json: tuple[str, ...]) -> None:
    cli("task", "start", "t1")
    path = repo / cli("handoff", input=BODY).stdout.strip()
    assert cli("handoff", "--show", "t1", *as_json).exit_code == 0  # the edge: as written, it is shown
    path.write_text(path.read_text().replace("## State\n", "## State\nREPLACED\n"))
    before, ledger = snapshot(repo), ledger_bytes(repo)
    result = cli("handoff", "--show", "t1", *as_json)
    assert result.exit_code == 12 and result.stdout == "", result
    assert result.stderr.startswith("majordomus: ") and path.name in result.stderr
    assert "no longer matches the digest in its name" in result.stderr and "\nhint: " in result.stderr
    assert snapshot(repo) == before and ledger_bytes(repo) == ledger


def test_a_checkpoint_that_lands_while_the_handoff_waits_for_the_lock_is_listed_in_it(repo: Path) -> None:
    """The handoff's `checkpoints:` tells of the task as it is when the handoff lands: a checkpoint written
    while the handoff waited for the lock (its flock held back by strace) is listed, not left out."""
    import subprocess
    import time

    from helpers import MAJORDOMUS, require_tool, start_task_at

    strace = require_tool("strace")
    start_task_at(repo)
    assert run_here("checkpoint", cwd=repo, input="before the handoff\n").returncode == 0
    given = repo.parent / "handoff-body"
    given.write_text(HANDOFF_BODY)
    with open(given, "rb") as body:
        proc = subprocess.Popen([strace, "-f", "-qq", "-o", os.devnull, "-e", "trace=flock", "-e",
                                 "inject=flock:delay_enter=1500000:when=1", str(MAJORDOMUS), "handoff"], cwd=repo,
                                stdin=body, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        end = time.monotonic() + 20  # until the handoff sits at its lock, held back
        while not _in_flock(proc.pid) and time.monotonic() < end and proc.poll() is None:
            time.sleep(0.005)
        assert _in_flock(proc.pid), "the handoff never reached its lock"
        landed = run_here("checkpoint", cwd=repo, input="landed while the handoff waited\n")
        assert landed.returncode == 0, landed.stderr
        out, err = proc.communicate(timeout=30)
    finally:  # a failure here leaves no traced handoff behind
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    meta = front_matter(repo / out.decode().strip())
    listed = [p.split("/", 1)[1] for p in meta["checkpoints"]]
    names = sorted(p.name for p in (state_dir(repo) / "checkpoints").iterdir())
    assert sorted(listed) == names, (listed, names)  # both, whatever the order within one second


def _in_flock(pid: int) -> bool:
    """Whether strace's child (majordomus) sits in the flock strace holds back (syscall 73 on x86_64)."""
    number = {"x86_64": "73", "aarch64": "32"}[os.uname().machine]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return False
    for child in children:
        try:
            if Path(f"/proc/{child}/syscall").read_text().split()[0] == number:
                return True
        except (OSError, IndexError):
            continue
    return False


def test_a_handoff_whose_task_keeps_changing_under_it_gives_up_busy_writing_nothing(repo: Path, monkeypatch) -> None:
    """Made again each time its task record changed before the lock (up to STALE_TRIES): one that changes
    every time — here the re-check under the lock always finds a newer version — is exit 75, nothing written."""
    from helpers import start_task_at

    from majordomus import handoff
    from majordomus.store import commit, taskfile

    start_task_at(repo)
    assert run_here("checkpoint", cwd=repo, input="a note\n").returncode == 0
    before = snapshot(repo)
    real = taskfile.read_active

    def always_newer(*args: Any, **kwargs: Any) -> Any:
        kwargs["held"] = None  # read afresh, as when another write of the task landed meanwhile
        return real(*args, **kwargs)

    monkeypatch.setattr(commit.taskfile, "read_active", always_newer)
    busy = run_here("handoff", cwd=repo, input=HANDOFF_BODY)
    assert busy.returncode == 75, busy.stderr
    assert f"kept changing while the handoff was being written ({handoff.STALE_TRIES} times); nothing was written" \
        in busy.stderr.decode()
    assert snapshot(repo) == before
