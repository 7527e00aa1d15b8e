"""Durability made observable: a crash at each durable step, and every fsync the write discipline needs.

design §6 step 6 (temp file 0600 → fsync → link to the final name → remove the temp → fsync the directory),
§10 (the ledger: one write and an fsync under the lock) and STYLE 4 (mutable files: temp + fsync + replace).

`MAJORDOMUS_FAULT=STEP` (majordomus/store/fault.py, test-only, as SQLite's fault injection) makes the real
process SIGKILL itself at STEP; each test below shows what survives that crash and that the store is still
consistent: no partial record under a final name, a ledger that verifies, a task record that loads, and
`doctor` saying exactly what the crash left. fsync calls are counted by tracing the real process with
`strace` — never by patching `os.fsync`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers import (
    HANDOFF_BODY,
    MAJORDOMUS,
    events_named,
    git,
    ledger_bytes,
    ledger_events,
    records_in,
    run,
    run_here,
    snapshot,
    start_task,
    start_task_at,
    state_dir,
    under_ci,
)

STEPS = ("after-temp-write", "after-fsync", "after-link", "after-ledger-write")
KINDS = {  # command, record directory, a body it accepts
    "checkpoint": ("checkpoints", "The crash note.\n"),
    "handoff": ("handoffs", HANDOFF_BODY),
}


def crash(repo: Path, step: str, command: str, body: str) -> None:
    """Run COMMAND in the real console script, killed by SIGKILL at STEP."""
    result = run(command, cwd=repo, input=body, env={"MAJORDOMUS_FAULT": step})
    assert result.returncode == -signal.SIGKILL, (result.returncode, result.stderr)
    assert result.stdout == b""  # it died before it could say anything


def temp_files(repo: Path) -> list[Path]:
    return sorted(p for p in state_dir(repo).rglob(".tmp-*"))


def task_record(repo: Path) -> bytes:
    return (state_dir(repo) / "tasks" / "t1.yaml").read_bytes()


def doctor(repo: Path) -> tuple[int, list[dict[str, Any]]]:
    result = run_here("doctor", "--json", cwd=repo)
    report = json.loads(result.stdout)
    return result.returncode, [f for f in report["findings"] if f["level"] != "ok"]


def assert_consistent(repo: Path) -> None:
    """What a crash may never cost: every stored record matches its name, the ledger verifies, every event's
    record exists with its digest, and the task record loads."""
    for kind in ("checkpoints", "handoffs"):
        for name in records_in(repo, kind):
            data = (state_dir(repo) / kind / name).read_bytes()
            assert name.split("--")[-1] == hashlib.sha256(data).hexdigest()[:16] + ".md", f"partial record {name}"
    verify = run_here("ledger", "--verify", "--json", cwd=repo)
    assert verify.returncode == 0 and json.loads(verify.stdout)["ok"], verify.stdout
    for event in events_named(repo, "task.checkpoint") + events_named(repo, "task.handoff"):
        data = (state_dir(repo) / event["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == event["sha256"]
    assert run_here("task", "show", "t1", "--json", cwd=repo).returncode == 0


@pytest.fixture
def prepared(repo: Path) -> Path:
    """A task with one checkpoint already stored: a crash must leave that one as it was."""
    start_task_at(repo)
    assert run_here("checkpoint", cwd=repo, input="before the crash\n").returncode == 0
    return repo


# ---------------------------------------------------------------- a crash at each step


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("step", ["after-temp-write", "after-fsync"])
def test_killed_before_the_link_leaves_no_record_only_a_temp_file(prepared, kind, step):
    repo = prepared
    directory, body = KINDS[kind]
    records, ledger, task = records_in(repo, directory), ledger_bytes(repo), task_record(repo)
    crash(repo, step, kind, body)
    assert records_in(repo, directory) == records  # nothing under a final name
    [temp] = temp_files(repo)  # at most one temporary file, in the record's directory, private
    assert temp.parent.name == directory and temp.stat().st_mode & 0o777 == 0o600
    assert ledger_bytes(repo) == ledger and task_record(repo) == task
    code, findings = doctor(repo)
    assert code == 0  # a leftover is a warning: nothing is lost
    assert [(f["level"], f["code"]) for f in findings] == [("warn", "store.temp-file")]
    assert findings[0]["path"].endswith(temp.name)
    assert temp.exists()  # reported, never removed
    assert_consistent(repo)
    # The store still takes the same write afterwards, and it lands whole.
    again = run_here(kind, cwd=repo, input=body)
    assert again.returncode == 0, again.stderr
    assert len(records_in(repo, directory)) == len(records) + 1
    assert_consistent(repo)


@pytest.mark.parametrize("kind", KINDS)
def test_killed_after_the_link_leaves_the_record_without_its_event(prepared, kind):
    repo = prepared
    directory, body = KINDS[kind]
    records, ledger, task = records_in(repo, directory), ledger_bytes(repo), task_record(repo)
    crash(repo, "after-link", kind, body)
    [new] = sorted(set(records_in(repo, directory)) - set(records))
    final = state_dir(repo) / directory / new
    assert final.read_bytes().endswith(b"\n---\n" + body.encode())
    assert final.stat().st_mode & 0o777 == 0o600
    # The temp name was not removed yet: it is the same file (a hard link), never a second copy.
    [temp] = temp_files(repo)
    assert os.path.samefile(temp, final)
    assert ledger_bytes(repo) == ledger and task_record(repo) == task  # no event, the task did not move
    code, findings = doctor(repo)
    assert code == 0
    assert sorted((f["level"], f["code"]) for f in findings) == [("warn", "record.no-event"),
                                                                ("warn", "store.temp-file")]
    no_event = next(f for f in findings if f["code"] == "record.no-event")
    assert no_event["path"].endswith(new)
    assert_consistent(repo)
    # The same command again, in the record's second, finds it under its final name without its event:
    # it completes the task pointer and the event instead of answering "already stored" (design §10).
    from freezegun import freeze_time

    second = new[:16]
    with freeze_time(f"{second[:4]}-{second[4:6]}-{second[6:8]}T{second[9:11]}:{second[11:13]}:{second[13:15]}Z"):
        again = run_here(kind, cwd=repo, input=body)
    assert again.returncode == 0, again.stderr
    assert b"already stored" not in again.stderr and b"complete now" in again.stderr
    assert [e["path"] for e in events_named(repo, f"task.{kind}")][-1] == f"{directory}/{new}"
    assert json.loads(run_here("task", "show", "t1", "--json", cwd=repo).stdout)[kind] == f"{directory}/{new}"


@pytest.mark.parametrize("kind", KINDS)
def test_killed_after_the_ledger_write_leaves_record_and_event_and_doctor_clean(prepared, kind):
    repo = prepared
    directory, body = KINDS[kind]
    records = records_in(repo, directory)
    crash(repo, "after-ledger-write", kind, body)
    [new] = sorted(set(records_in(repo, directory)) - set(records))
    [event] = [e for e in events_named(repo, f"task.{kind}") if e["path"] == f"{directory}/{new}"]
    assert event["sha256"] == hashlib.sha256((state_dir(repo) / directory / new).read_bytes()).hexdigest()
    task = json.loads(run_here("task", "show", "t1", "--json", cwd=repo).stdout)
    assert task[kind] == f"{directory}/{new}"
    assert temp_files(repo) == []
    if kind == "handoff":  # killed before it left the slot here: doctor says so, and the same handoff completes it
        code, found = doctor(repo)
        assert code == 1 and [f["code"] for f in found] == ["active.not-active"], found
        assert "`majordomus handoff` again" in found[0]["hint"]
        again = run_here(kind, cwd=repo, input=body)  # it completes, and says so
        assert again.returncode == 0 and b"complete now" in again.stderr, again.stderr
    assert doctor(repo) == (0, [])
    assert run_here("doctor", "--strict", cwd=repo).returncode == 0
    assert_consistent(repo)


@pytest.mark.parametrize("step", ["after-temp-write", "after-fsync"])
def test_a_crash_while_replacing_the_task_record_keeps_the_old_one(repo, step):
    """`check --checkpoint` only rewrites the task record: a crash leaves the old record whole (STYLE 4)."""
    start_task_at(repo)
    task, ledger = task_record(repo), ledger_bytes(repo)
    reading = run("check", cwd=repo, env={"MAJORDOMUS_FAULT": step})  # `check` only reads: no step reached
    assert reading.returncode == 1 and b"no checkpoint" in reading.stderr
    assert task_record(repo) == task and temp_files(repo) == []
    result = run("check", "--checkpoint", cwd=repo, env={"MAJORDOMUS_FAULT": step})
    assert result.returncode == -signal.SIGKILL
    assert task_record(repo) == task and ledger_bytes(repo) == ledger
    [temp] = temp_files(repo)
    assert temp.parent.name == "tasks"
    assert_consistent(repo)
    assert run_here("check", "--checkpoint", cwd=repo).returncode == 0
    assert task_record(repo) != task


def test_every_step_is_reached_by_a_checkpoint(repo):
    """No step name is a typo the code never reaches: each one kills a checkpoint."""
    start_task_at(repo)
    for step in STEPS:
        crash(repo, step, "checkpoint", f"reaching {step}\n")
    control = run("checkpoint", cwd=repo, input="no fault\n", env={"MAJORDOMUS_FAULT": "no-such-step"})
    assert control.returncode == 0


# ---------------------------------------------------------------- fsync, traced


def _ptrace_works() -> bool:
    if shutil.which("strace") is None:
        return False
    return subprocess.run(["strace", "-o", os.devnull, "-e", "trace=none", "true"],
                          capture_output=True, check=False).returncode == 0


# Under CI these never skip (.ci/run installs strace): a missing strace fails them there.
needs_strace = pytest.mark.skipif(not _ptrace_works() and not under_ci(),
                                  reason="needs strace and ptrace permission (apt-get install strace)")
FSYNC = re.compile(r"^(?:\d+ +)?(fsync|fdatasync)\(\d+<(.*)>\) += 0$")


def synced(trace: str, state: Path) -> list[str]:
    """The files and directories fsynced under the state directory, in order, relative to it; a temp file
    shows as DIR/.tmp. Other processes (git) are not ours to count."""
    out = []
    for line in trace.splitlines():
        match = FSYNC.match(line)
        if match is None:
            continue
        assert match.group(1) == "fsync", line  # the design asks for fsync; fdatasync would skip the metadata
        path = match.group(2)
        if path == str(state) or path.startswith(str(state) + "/"):
            rel = os.path.relpath(path, state)
            out.append(re.sub(r"\.tmp-\d+-\d+$", ".tmp", rel))
    return out


def traced(repo: Path, *args: str, input: str) -> list[str]:
    """Run the real console script under `strace -f` and return what it fsynced in the state directory."""
    out = repo.parent / "fsync.trace"
    done = subprocess.run(["strace", "-f", "-y", "-qq", "-e", "trace=fsync,fdatasync", "-o", str(out),
                           MAJORDOMUS, *args], cwd=repo, input=input.encode(), capture_output=True, check=False)
    assert done.returncode == 0, done.stderr
    return synced(out.read_text(), state_dir(repo))


# What the design's write discipline implies, step by step.
RECORD = ["{dir}/.tmp", "{dir}"]  # §6 step 6: the temp record, then its directory after the link
TASK = ["tasks/.tmp", "tasks"]  # the task record (temp + fsync + replace), then its directory
INDEX = [".tmp", "."]  # active.json, which says which task is active where
LEDGER = ["ledger.jsonl"]  # §10: one write and an fsync
CLAIMS = [".tmp", "."]  # claims.json: this machine's claims (design §18), which a handoff ends


@needs_strace
def test_a_checkpoint_fsyncs_record_directory_task_record_directory_and_ledger(repo):
    start_task_at(repo)
    expected = [p.format(dir="checkpoints") for p in RECORD] + TASK + LEDGER
    assert traced(repo, "checkpoint", input="traced\n") == expected
    assert len(expected) == 5


@needs_strace
def test_a_handoff_fsyncs_record_task_record_ledger_then_claims_and_index(repo):
    start_task_at(repo)
    got = traced(repo, "handoff", input=HANDOFF_BODY)
    # The record, the task record (handed-off, pointing at it), the event; then this machine's claim is
    # forgotten and the slot left — last, so that a retry of a handoff that failed there still finds it.
    assert got[:5] == [p.format(dir="handoffs") for p in RECORD] + TASK + LEDGER
    assert got[5:] == CLAIMS + INDEX


@needs_strace
def test_an_empty_checkpoint_fsyncs_only_the_task_record(repo):
    start_task_at(repo)
    assert traced(repo, "check", "--checkpoint", input="") == TASK
    assert traced(repo, "checkpoint", input="\n\n") == TASK


class Tracer:
    """strace attached to this very process: what an in-process command fsyncs (only this thread; git's
    own processes are not traced)."""

    def __init__(self, out: Path) -> None:
        self.out = out

    def __enter__(self) -> Tracer:
        self.proc = subprocess.Popen(["strace", "-y", "-e", "trace=fsync,fdatasync", "-o", str(self.out),
                                      "-p", str(os.getpid())], stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()  # "Process N attached": from here on every call is seen
        assert "attached" in line, line
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=60)

    def synced(self, state: Path) -> list[str]:
        return synced(self.out.read_text(), state)


@needs_strace
def test_in_process_the_same_syncs_are_seen(cli, repo, tmp_path):
    """The same trace of the same write, run in this process: so that `make mutation` (which sees only
    in-process tests reach a function) knows these assertions hold files.py and ledger.py."""
    start_task(cli)
    with Tracer(tmp_path / "self.trace") as tracer:
        assert cli("checkpoint", input="traced in-process\n").exit_code == 0
    assert tracer.synced(state_dir(repo)) == ["checkpoints/.tmp", "checkpoints"] + TASK + LEDGER
    with Tracer(tmp_path / "pin.trace") as tracer:
        assert cli("context", "pin", "decision", "--", "Synced.").exit_code == 0
    # continuity.json and its render, each temp + replace in context/t1, then the ledger
    assert tracer.synced(state_dir(repo)) == ["context/t1/.tmp", "context/t1"] * 2 + LEDGER


@needs_strace
def test_an_identical_record_already_stored_is_neither_linked_nor_logged_again(cli, repo, tmp_path):
    """The same body in the same second is the same record: stored once, one event (§6 step 6)."""
    from freezegun import freeze_time

    start_task(cli)
    with freeze_time("2026-09-03T19:45:00Z"):
        assert cli("checkpoint", input="twice\n").exit_code == 0
        ledger = ledger_bytes(repo)
        with Tracer(tmp_path / "again.trace") as tracer:
            again = cli("checkpoint", input="twice\n")
    assert again.exit_code == 0 and "already stored" in again.stderr
    assert tracer.synced(state_dir(repo)) == ["checkpoints/.tmp"]  # written and synced, then not linked
    assert ledger_bytes(repo) == ledger and temp_files(repo) == []


# ---------------------------------------------------------------- a temporary name that will not go


class FailingUnlink:
    """Removing a `.tmp-*` name fails with EIO the first `times` times (a disk that errs); `tried` lists them."""

    def __init__(self, times: int) -> None:
        self.times = times
        self.tried: list[str] = []


@pytest.fixture
def failing_unlink(monkeypatch: pytest.MonkeyPatch) -> FailingUnlink:
    import errno

    real, faults = os.unlink, FailingUnlink(2)

    def unlink(path: Any, *args: Any, **kw: Any) -> None:
        if os.path.basename(os.fsdecode(path)).startswith(".tmp-") and len(faults.tried) < faults.times:
            faults.tried.append(os.fsdecode(path))
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real(path, *args, **kw)

    monkeypatch.setattr(os, "unlink", unlink)
    return faults


def test_a_temporary_name_that_fails_once_is_removed_by_trying_again(cli, repo, failing_unlink):
    start_task(cli)
    failing_unlink.times = 1
    result = cli("checkpoint", input="landed\n")
    assert result.exit_code == 0, result.stderr
    assert len(failing_unlink.tried) == 1 and temp_files(repo) == []
    assert run_here("doctor", "--strict", cwd=repo).returncode == 0


def test_a_temporary_name_left_after_the_write_landed_goes_with_the_next_write(cli, repo, failing_unlink):
    """The write landed: exit 0 and nothing said; the name left is the record's second link, which doctor
    names as such, and the next checkpoint of the task removes it (design §2b: the state is whole again)."""
    start_task(cli)
    result = cli("checkpoint", input="landed\n")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == "" and len(failing_unlink.tried) == 2
    [temp] = temp_files(repo)
    [name] = records_in(repo, "checkpoints")
    assert os.path.samefile(temp, state_dir(repo) / "checkpoints" / name)
    assert len(events_named(repo, "task.checkpoint")) == 1
    code, findings = doctor(repo)
    assert code == 0 and [(f["level"], f["code"]) for f in findings] == [("warn", "store.temp-file")]
    assert "second name of a stored record" in findings[0]["message"]
    assert "loses nothing" in findings[0]["hint"]
    assert run_here("doctor", "--strict", cwd=repo).returncode == 1
    assert cli("checkpoint", input="the next one\n").exit_code == 0
    assert temp_files(repo) == [] and len(records_in(repo, "checkpoints")) == 2
    assert run_here("doctor", "--strict", cwd=repo).returncode == 0


def test_the_next_write_keeps_a_temporary_whose_write_never_landed(cli, repo):
    """One past the rule: a temporary with a single link holds bytes that never landed; it is reported,
    never removed, and neither is a second name of a record the task does not point at."""
    start_task(cli)
    assert cli("checkpoint", input="first\n").exit_code == 0
    [name] = records_in(repo, "checkpoints")
    directory = state_dir(repo) / "checkpoints"
    lone = directory / ".tmp-999999-0"
    lone.write_bytes(b"an interrupted write\n")
    lone.chmod(0o600)
    os.link(directory / name, directory / ".tmp-999999-1")  # the record's second name: removed
    assert cli("checkpoint", input="second\n").exit_code == 0
    assert temp_files(repo) == [lone] and lone.read_bytes() == b"an interrupted write\n"
    code, findings = doctor(repo)
    assert code == 0 and [(f["level"], f["code"]) for f in findings] == [("warn", "store.temp-file")]
    assert findings[0]["message"].endswith("is a temporary file left by an interrupted write")


# ---------------------------------------------------------------- the lock file is not a file


@pytest.mark.parametrize("what", ["a directory", "a FIFO", "a socket"])
def test_a_lock_that_is_not_a_regular_file_is_refused_naming_it(cli, repo, what):
    """Exit 12 naming the lock and what it is, with the way out; nothing is written."""
    import socket

    from helpers import snapshot

    start_task(cli)
    lock = state_dir(repo) / ".lock"
    lock.unlink()
    if what == "a directory":
        lock.mkdir(mode=0o700)
    elif what == "a FIFO":
        os.mkfifo(lock, 0o600)
    else:
        bound, here = socket.socket(socket.AF_UNIX), os.getcwd()
        os.chdir(lock.parent)  # a relative name: a socket's path is bounded (108 bytes)
        try:
            bound.bind(lock.name)
        finally:
            os.chdir(here)
            bound.close()
    before = snapshot(repo)
    result = cli("checkpoint", input="not locked\n")
    assert result.exit_code == 12
    assert f"the lock file {lock} is {what}, not a regular file" in result.stderr
    assert ("rmdir" if what == "a directory" else "rm '") in result.stderr and "creates the lock file" in result.stderr
    assert snapshot(repo) == before and records_in(repo) == []
    if what == "a directory":
        lock.rmdir()
    else:
        lock.unlink()
    assert cli("checkpoint", input="locked again\n").exit_code == 0  # the way out works
    assert lock.is_file()


def test_a_checkpoint_killed_after_its_link_is_completed_by_the_next_checkpoint(prepared):
    """SIGKILL (no signal mask holds it back) between the link and the task pointer: the lock file still
    names the record, and the next checkpoint of the task, in any later second, completes it first — its
    pointer, index and event — then writes its own. Nothing is left for doctor."""
    from freezegun import freeze_time

    repo = prepared
    records = records_in(repo, "checkpoints")
    crash(repo, "after-link", "checkpoint", "killed after its link\n")
    [orphan] = sorted(set(records_in(repo, "checkpoints")) - set(records))
    assert (state_dir(repo) / ".lock").read_text() == f"checkpoints/{orphan}\n"
    with freeze_time("2030-01-01T00:00:00Z"):  # a later second: not the same record again
        again = run_here("checkpoint", cwd=repo, input="the next note\n")
    assert again.returncode == 0, again.stderr
    paths = [e["path"] for e in events_named(repo, "task.checkpoint")]
    assert paths[-2] == f"checkpoints/{orphan}" and paths[-1] != paths[-2]  # its event, before the new one's
    assert (state_dir(repo) / ".lock").read_bytes() == b""
    assert temp_files(repo) == []  # the orphan's second name went as the new write moved past it
    assert run_here("doctor", "--strict", cwd=repo).returncode == 0
    brief = run_here("brief", cwd=repo, text=True).stdout
    assert "killed after its link" in brief and "the next note" in brief
    assert_consistent(repo)


def test_a_note_naming_another_tasks_checkpoint_waits_for_that_tasks_own_write(prepared):
    """The next write completes only a record of its own task and kind: another's line stays for its own."""
    repo = prepared
    crash(repo, "after-link", "checkpoint", "t1's, killed\n")
    noted = (state_dir(repo) / ".lock").read_text()
    assert run_here("context", "pin", "decision", "a pin is no checkpoint", cwd=repo).returncode == 0
    assert (state_dir(repo) / ".lock").read_text() == noted  # a pin takes the lock and leaves the line
    assert run_here("task", "start", "t2", cwd=repo).returncode == 0
    assert run_here("checkpoint", cwd=repo, input="t2's note\n").returncode == 0
    assert (state_dir(repo) / ".lock").read_text() == noted  # t2's checkpoint leaves t1's line


def test_a_lock_file_full_of_anything_else_is_only_a_lock(prepared):
    """What else the lock file holds (64 KiB of garbage, a path outside the store) is no note: the write
    lands, and its own note replaces them."""
    repo = prepared
    lock = state_dir(repo) / ".lock"
    lock.write_bytes(b"../../etc/passwd\n" + b"\xff" * 70_000 + b"\ncheckpoints/not-a-record.md\n")
    assert run_here("checkpoint", cwd=repo, input="written all the same\n").returncode == 0
    assert lock.read_bytes() == b""
    assert run_here("doctor", "--strict", cwd=repo).returncode == 0


def test_a_note_naming_a_record_that_landed_whole_logs_nothing_again(prepared):
    """Killed after its event, before its note went (or a note copied in by hand): the record landed whole;
    the next checkpoint, even in the same second as a newer pointer, writes no second event for it."""
    from freezegun import freeze_time

    repo = prepared
    [first] = records_in(repo, "checkpoints")
    second = first[:16]
    with freeze_time(f"{second[:4]}-{second[4:6]}-{second[6:8]}T{second[9:11]}:{second[11:13]}:{second[13:15]}Z"):
        assert run_here("checkpoint", cwd=repo, input="second\n").returncode == 0  # the same second
    (state_dir(repo) / ".lock").write_text(f"checkpoints/{first}\n")
    before = [e["path"] for e in events_named(repo, "task.checkpoint")]
    assert run_here("checkpoint", cwd=repo, input="third\n").returncode == 0
    after = [e["path"] for e in events_named(repo, "task.checkpoint")]
    assert after[:-1] == before and after.count(f"checkpoints/{first}") == 1
    assert (state_dir(repo) / ".lock").read_bytes() == b""


@pytest.mark.parametrize("call", ["pwrite", "ftruncate"])
def test_a_lock_note_that_cannot_be_written_costs_nothing_but_the_note(prepared, monkeypatch, call):
    """The note is best effort: a full disk under `.lock` (pwrite, ftruncate failing) never fails the
    write it describes; the checkpoint lands whole and doctor is clean."""
    import errno

    def full(*args: Any) -> Any:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, call, full)
    done = run_here("checkpoint", cwd=prepared, input="noted or not\n")
    monkeypatch.undo()
    assert done.returncode == 0, done.stderr
    assert "noted or not" in run_here("brief", cwd=prepared, text=True).stdout
    assert run_here("doctor", "--strict", cwd=prepared).returncode == 0
    assert_consistent(prepared)


@pytest.mark.parametrize(("op", "nth", "replaced"), [("write", 1, False), ("fsync", 1, False), ("rename", 1, False),
                                                     ("fsync", 2, True)])
def test_a_replace_that_fails_removes_what_only_the_new_file_names_while_the_old_one_stands(
        tmp_path: Path, op: str, nth: int, replaced: bool) -> None:
    """The task record's move (design §10): failed before its rename (the temp file's write or fsync, the
    rename), the old task record stands, so the record linked for it is removed and nothing was written;
    failed after it (the directory's fsync, the 2nd fsync), the new task record is in place and names the
    record, which stays (the write is incomplete, and its retry completes it)."""
    from majordomus.errors import EnvironmentProblem
    from majordomus.store import files
    from majordomus.store.fault import Faults

    (tmp_path / "state").mkdir()
    target, record = tmp_path / "state" / "task.yaml", tmp_path / "state" / "record.md"
    target.write_bytes(b"old\n")
    record.write_bytes(b"the record\n")
    with Faults(tmp_path, op, nth).active() as faults, pytest.raises(EnvironmentProblem) as caught:
        files.replace(str(target), b"new\n", undo=str(record))
    assert faults.fired
    assert isinstance(caught.value, files.NotReplaced) is not replaced
    assert caught.value.message.endswith("; nothing was written") is not replaced
    assert target.read_bytes() == (b"new\n" if replaced else b"old\n")
    assert record.exists() is replaced
    assert list((tmp_path / "state").glob(".tmp-*")) == []


@pytest.mark.parametrize("name", [".lock", "ledger.jsonl"])
def test_a_state_file_written_in_place_that_is_a_hard_link_is_refused_and_the_other_file_untouched(repo, tmp_path,
                                                                                                   name):
    """The lock (its notes are written in place) and the ledger (appended to) must have one name: through a
    hard link to another file, a write would change that file too (a lock's note truncated it). Exit 12
    naming it, before anything is written; doctor fails it; once the name is removed, the write lands."""
    start_task_at(repo)
    assert run_here("checkpoint", cwd=repo, input="a first note\n").returncode == 0
    state = state_dir(repo)
    precious = tmp_path / "precious.txt"
    precious.write_bytes((state / name).read_bytes() if name == "ledger.jsonl" else b"the user's own file\n")
    (state / name).unlink()
    os.link(precious, state / name)
    kept = precious.read_bytes()
    before = snapshot(repo)
    refused = run_here("checkpoint", cwd=repo, input="a second note\n")
    assert refused.returncode == 12, refused.stderr
    assert b"has 2 names (a hard link to another file)" in refused.stderr and name.encode() in refused.stderr
    assert precious.read_bytes() == kept and snapshot(repo) == before
    doctor = run_here("doctor", "--strict", "--json", cwd=repo)
    assert doctor.returncode == 1 and "state.hard-link" in {f["code"] for f in json.loads(doctor.stdout)["findings"]}
    (state / name).unlink()
    if name == "ledger.jsonl":
        (state / name).write_bytes(kept)
    assert run_here("checkpoint", cwd=repo, input="a second note\n").returncode == 0
    assert precious.read_bytes() == kept


def test_an_empty_ignore_file_is_filled_by_the_next_write(repo):
    """A command killed between creating the state's ignore file and writing it (or a power loss before its
    two bytes reached the disk) leaves it empty, and then git would stage the local state: the next command
    that makes the state fills it; doctor said so meanwhile."""
    start_task_at(repo)
    assert run_here("checkpoint", cwd=repo, input="a note\n").returncode == 0
    ignore = repo / ".ai" / "local" / ".gitignore"
    ignore.write_bytes(b"")
    doctor = json.loads(run_here("doctor", "--json", cwd=repo).stdout)
    assert "state.not-ignored" in {f["code"] for f in doctor["findings"]}
    assert run_here("checkpoint", cwd=repo, input="another note\n").returncode == 0
    assert ignore.read_bytes() == b"*\n"
    assert run_here("doctor", "--strict", cwd=repo).returncode == 0
    listed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=repo, capture_output=True,
                            text=True, check=True).stdout
    assert ".ai/local" not in listed, listed


def test_a_cache_s_temporary_name_planted_as_a_hard_link_is_never_written_through(repo, tmp_path):
    """A cache is written to `PATH.PID.tmp` and renamed: a file already under that name (left by a killed
    process of the same pid, or a hard link planted there) is removed first, never truncated or written."""
    from majordomus.store import files

    precious = tmp_path / "precious.txt"
    precious.write_bytes(b"the user's own file\n")
    cache = tmp_path / "cache.json"
    os.link(precious, f"{cache}.{os.getpid()}.tmp")
    files.write_derived(str(cache), b'{"a": 1}\n')
    assert cache.read_bytes() == b'{"a": 1}\n' and precious.read_bytes() == b"the user's own file\n"


def test_a_state_lock_held_for_longer_than_a_write_takes_is_exit_75_not_a_wait_for_ever(repo, monkeypatch):
    """A stopped or stuck command that holds the state lock would hang every writer (and an agent's MCP
    server) for as long: a change waits `locked.WAIT` seconds, then exits 75 saying so, with nothing written
    and how to find the holder. One past the edge: once the lock is free, the same command lands."""
    import fcntl

    from majordomus.store import files

    start_task_at(repo)
    monkeypatch.setattr(files.locked, "WAIT", 0.3)
    fd = os.open(state_dir(repo) / ".lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another open file description: flock excludes it as another process
        before = snapshot(repo)
        done = run_here("checkpoint", cwd=repo, input="a note\n")
        err = done.stderr.decode()
        assert done.returncode == 75 and "held the state lock" in err and "fuser" in err, err
        assert err.count("run the same command again") == 1 and snapshot(repo) == before
    finally:
        os.close(fd)
    assert run_here("checkpoint", cwd=repo, input="a note\n").returncode == 0


class _Held:
    """An exclusive flock on `path` from another open file description: as another process holding it."""

    def __init__(self, path: Path) -> None:
        import fcntl

        self.fd = os.open(path, os.O_RDWR)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def release(self) -> None:
        os.close(self.fd)


def test_a_ledger_lock_held_by_a_stopped_writer_is_a_bounded_wait_then_an_honest_exit_12(repo, monkeypatch):
    """Hooks and sync append to the ledger outside the state lock: one stopped while it holds the ledger's
    lock would hold every checkpoint for as long. The append waits `ledger.LOCK_WAIT`, then the checkpoint
    says what is stored and what is not (exit 12, the holder's `fuser`), and the same command completes it."""
    from majordomus.store import ledger

    start_task_at(repo)
    monkeypatch.setattr(ledger, "LOCK_WAIT", 0.3)
    held = _Held(state_dir(repo) / "ledger.jsonl")
    try:
        before = len(ledger_events(repo))
        done = run_here("checkpoint", cwd=repo, input="a note\n", timeout=10)
        err = done.stderr.decode()
        assert done.returncode == 12, err
        assert "is stored, but its ledger event was not written" in err and "held the ledger's lock" in err, err
        assert "fuser" in err and err.count("run the same command again") == 1, err
        assert len(ledger_events(repo)) == before
    finally:
        held.release()
    stored = re.search(r"the checkpoint \.ai/local/state/(checkpoints/\S+\.md) is stored", err)
    assert stored is not None, err
    again = run_here("checkpoint", cwd=repo, input="a note\n")
    assert again.returncode == 0, again.stderr
    # the record named above has its event now (a retry in a later second also stores its own record)
    assert stored.group(1) in [e.get("path") for e in ledger_events(repo)[before:]]
    assert run_here("ledger", "--verify", cwd=repo).returncode == 0


@pytest.mark.parametrize("command", ["push", "pull", "compact"])
def test_a_sync_lock_held_by_a_stopped_sync_is_exit_75_within_the_bound(repo, remote, monkeypatch, command):
    """A sync stopped while it holds the sync lock (a suspended job, a debugger) held every later sync of
    the machine for ever, silently: the wait is `--timeout` (push, compact) or the push's default (pull),
    then exit 75 naming the lock, nothing pushed and nothing imported. One past: released, it runs."""
    from majordomus.sync import pull as pulling

    start_task_at(repo)
    assert run_here("sync", "push", cwd=repo).returncode == 0
    monkeypatch.setattr(pulling, "TIMEOUT", 0.3)
    args = {"push": ["--timeout", "0.3"], "pull": [], "compact": ["--machine", "other-0001", "--timeout", "0.3"]}
    held = _Held(state_dir(repo) / ".sync-lock")
    try:
        before, refs = snapshot(repo), git(remote, "for-each-ref")
        done = run_here("sync", command, *args[command], cwd=repo, timeout=10)
        err = done.stderr.decode()
        assert done.returncode == 75, err
        assert "another sync has held the sync lock" in err and "for 0.3 s; this one did not wait on" in err, err
        assert "a stopped one may hold it (`fuser " in err and err.count("run the same command again") == 1
        assert snapshot(repo) == before and git(remote, "for-each-ref") == refs
    finally:
        held.release()
    if command != "compact":  # no other machine to fold: compact is refused once it runs
        assert run_here("sync", command, cwd=repo).returncode == 0


@pytest.mark.parametrize("hook, lock", [("session-start", "ledger.jsonl"), ("stop", "ledger.jsonl"),
                                        ("compact", "journal")])
def test_a_hook_waits_for_a_held_lock_at_most_the_hooks_bound_and_exits_0(repo, hook, lock):
    """A hook never blocks the session: whatever lock a stopped command holds (the ledger's, the compaction
    journal's; no hook takes the state lock), it waits at most `main.HOOK_LOCK_SECONDS` for it and goes on without
    that write (exit 0). `timeout` is what fails the test where it would wait longer (the ledger's bound is
    10 s; the journal's lock was waited for without end)."""
    start_task_at(repo)
    assert run_here("checkpoint", cwd=repo, input="a note\n").returncode == 0
    argv = {"session-start": ["hook", "session-start"], "stop": ["hook", "stop"],
            "compact": ["hook", "compact", "--phase", "pre", "--runtime", "claude"]}[hook]
    if lock == "journal":
        assert run_here(*argv, cwd=repo, input=b"{}").returncode == 0
        path = next((state_dir(repo) / "context").rglob("*.jsonl"))
    else:
        path = state_dir(repo) / lock
    held = _Held(path)
    try:
        done = run_here(*argv, cwd=repo, input=b'{"session_id": "s1"}', timeout=6)
        assert done.returncode == 0, done.stderr
    finally:
        held.release()


def test_every_lock_is_taken_through_the_one_bounded_wait():
    """A plain `fcntl.flock(fd, LOCK_EX)` waits without end for a stopped holder (the ledger's and the sync
    lock's did): every lock of the package is taken by `lite.lockwait.take`, the one bounded wait."""
    package = Path(__file__).resolve().parent.parent / "majordomus"
    found = [f"{path.relative_to(package)}:{number}"
             for path in sorted(package.rglob("*.py")) if path.name != "lockwait.py"
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"\bflock\(|\blockf\(", line)]
    assert found == [], found
