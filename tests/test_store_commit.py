"""The one write transaction (majordomus/store/commit.py, design §6 step 6 and §10): each failure of a step
after the link, at its edge, and the retry that completes it; the re-check under the lock."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from freezegun import freeze_time
from helpers import (
    HANDOFF_BODY,
    events_named,
    ledger_bytes,
    records_in,
    run_here,
    snapshot,
    start_task_at,
    state_dir,
)

from majordomus.store import ledger
from majordomus.store.fault import Faults

NOW = "2099-12-01T09:00:00Z"


def task_record(repo: Path, task: str = "t1") -> dict[str, Any]:
    return dict(json.loads(run_here("task", "show", task, "--json", cwd=repo).stdout))


@pytest.fixture
def started(repo: Path) -> Path:
    with freeze_time("2099-12-01T08:59:00Z"):
        start_task_at(repo)
        assert run_here("checkpoint", cwd=repo, input="before\n").returncode == 0
    return repo


def test_a_failed_ledger_append_after_the_link_is_exit_12_and_the_retry_in_the_same_second_completes(started):
    repo = started
    ledger = ledger_bytes(repo)
    with freeze_time(NOW):
        with Faults(repo, "write", 1, only="ledger.jsonl").active():
            failed = run_here("checkpoint", cwd=repo, input="the note\n")
        assert failed.returncode == 12
        err = failed.stderr.decode()
        assert "is stored, but its ledger event was not written" in err and "run the same command again" in err
        assert err.count("run the same command again") == 1, err  # the cause's hint and ours say it once
        assert ledger_bytes(repo) == ledger  # nothing of the failed append is left
        [new] = [n for n in records_in(repo) if n.startswith("20991201T090000Z")]
        assert task_record(repo)["checkpoint"] == f"checkpoints/{new}"  # the pointer moved, the event did not
        again = run_here("checkpoint", cwd=repo, input="the note\n")
    assert again.returncode == 0, again.stderr
    assert b"already stored" not in again.stderr and b"complete now" in again.stderr
    assert again.stdout.decode().strip().endswith(new)
    assert [e["path"] for e in events_named(repo, "task.checkpoint")][-1] == f"checkpoints/{new}"
    assert len([e for e in events_named(repo, "task.checkpoint") if e["path"] == f"checkpoints/{new}"]) == 1
    assert b"the note" in run_here("checkpoint", "--show", cwd=repo).stdout
    assert run_here("doctor", "--strict", cwd=repo).returncode == 0
    # And a third time it is what it always was: already stored, nothing new.
    with freeze_time(NOW):
        third = run_here("checkpoint", cwd=repo, input="the note\n")
    assert third.returncode == 0 and b"already stored" in third.stderr
    assert len(events_named(repo, "task.checkpoint")) == 2


def test_a_later_write_first_completes_the_record_its_task_points_at(started):
    repo = started
    with freeze_time(NOW):
        with Faults(repo, "write", 1, only="ledger.jsonl").active():
            assert run_here("checkpoint", cwd=repo, input="the note\n").returncode == 12
    pending = task_record(repo)["checkpoint"]
    with freeze_time("2099-12-01T09:05:00Z"):
        later = run_here("checkpoint", cwd=repo, input="another note\n")
    assert later.returncode == 0, later.stderr
    paths = [e["path"] for e in events_named(repo, "task.checkpoint")]
    assert paths[-2] == pending and paths[-1] == task_record(repo)["checkpoint"] != pending
    assert run_here("doctor", "--strict", cwd=repo).returncode == 0
    brief = run_here("brief", cwd=repo).stdout.decode()
    assert "the note" in brief and "another note" in brief


@pytest.mark.parametrize("between", ["a run's event, stamped at its command's start",
                                     "an event stamped by a clock stepped back 50 minutes"])
def test_a_record_that_landed_whole_is_never_logged_again_whatever_the_ledger_s_order_of_times(started, between):
    """The ledger is in the order of its appends, not of its times. A record whose event is followed by an
    older-stamped one (a run's event carries its command's start; a clock stepped back), in the second its
    task record moved, is found logged by the next checkpoint, not logged a second time (the search ends
    only at an event older than the record by more than an hour, never at a run's)."""
    repo = started
    with freeze_time(NOW):
        assert run_here("checkpoint", cwd=repo, input="landed whole\n").returncode == 0
    [landed] = [e["path"] for e in events_named(repo, "task.checkpoint")][-1:]
    older = "2099-12-01T08:10:00Z"
    with freeze_time(older):
        if between.startswith("a run"):  # the shape a run that ended meanwhile leaves: an older event after it
            ledger.append(str(state_dir(repo) / "ledger.jsonl"), "task.run", {"task": "t1"}, older)
        else:
            assert run_here("hook", "session-start", cwd=repo, input=b"{}").returncode == 0
    with freeze_time("2099-12-01T09:00:01Z"):
        assert run_here("checkpoint", cwd=repo, input="the next one\n").returncode == 0
    paths = [e["path"] for e in events_named(repo, "task.checkpoint")]
    assert paths.count(landed) == 1, paths
    assert run_here("doctor", "--strict", cwd=repo).returncode == 0


@pytest.mark.parametrize("command, event", [(("task", "release"), "task.release"), (("task", "done"), "task.done")])
def test_a_release_or_done_whose_event_failed_in_the_second_of_the_task_s_last_event_is_completed(started, command,
                                                                                                 event):
    """The change's own event is looked for, not any event of the task: a release (or done) whose ledger
    append failed in the same second as a checkpoint of the task is completed by its retry, its event
    written once; the edge: the retry of one that landed writes nothing more."""
    repo = started
    with freeze_time(NOW):
        assert run_here("checkpoint", cwd=repo, input="the last note\n").returncode == 0
        with Faults(repo, "write", 1, only="ledger.jsonl").active():
            failed = run_here(*command, cwd=repo)
        assert failed.returncode == 12, failed.stderr
        assert events_named(repo, event) == []
        doctor = json.loads(run_here("doctor", "--json", cwd=repo).stdout)
        hints = [f["hint"] for f in doctor["findings"] if f["code"] == "active.not-active"]
        assert hints and f"`majordomus {' '.join(command)} t1` again" in hints[0], hints  # the one that failed
        again = run_here(*command, cwd=repo)
    assert again.returncode == 0, again.stderr
    assert [e["at"] for e in events_named(repo, event)] == [NOW]
    assert run_here("doctor", "--strict", cwd=repo).returncode == 0


@pytest.mark.parametrize("between", [("run", "--", "true"), ("task", "release"), ("context", "pin", "decision", "x")])
def test_the_next_checkpoint_completes_a_failed_one_whatever_moved_the_task_meanwhile(started, between):
    """"Run the same command again: it completes what is missing" holds when another command of the task
    came first and moved its time (a run, a release and resume, a pin): the failed checkpoint's note stays
    in the lock file until it landed whole, and the task's next checkpoint here completes it."""
    repo = started
    with freeze_time(NOW):
        with Faults(repo, "write", 1, only="ledger.jsonl").active():
            assert run_here("checkpoint", cwd=repo, input="the failed note\n").returncode == 12
    [pending] = [n for n in records_in(repo) if n.startswith("20991201T090000Z")]
    with freeze_time("2099-12-01T09:01:00Z"):
        assert run_here(*between, cwd=repo).returncode == 0
        if between[:2] == ("task", "release"):
            assert run_here("task", "resume", "t1", cwd=repo).returncode == 0
    with freeze_time("2099-12-01T09:02:00Z"):
        later = run_here("checkpoint", cwd=repo, input="a later note\n")
    assert later.returncode == 0, later.stderr
    paths = [e["path"] for e in events_named(repo, "task.checkpoint")]
    assert paths.count(f"checkpoints/{pending}") == 1, paths
    assert run_here("doctor", "--strict", cwd=repo).returncode == 0
    assert (state_dir(repo) / ".lock").read_bytes() == b""  # nothing left noted


def test_the_note_of_a_handoff_killed_after_its_event_goes_with_the_next_write(started):
    """A handoff or run killed after its event, before its note went, leaves a note no checkpoint completes:
    the next write of any kind forgets it once its record is logged (or gone), so notes never pile up."""
    repo = started
    with freeze_time(NOW):
        assert run_here("handoff", cwd=repo, input=HANDOFF_BODY).returncode == 0
    [handoff] = [e["path"] for e in events_named(repo, "task.handoff")]
    lock = state_dir(repo) / ".lock"
    lock.write_bytes(f"{handoff}\nruns/20991201T090000Z--main--d607023--{'0' * 16}.md\n".encode())
    with freeze_time("2099-12-01T09:05:00Z"):
        assert run_here("task", "resume", "t1", cwd=repo).returncode == 0
        assert run_here("checkpoint", cwd=repo, input="after the handoff\n").returncode == 0
    assert lock.read_bytes() == b""
    assert [e["path"] for e in events_named(repo, "task.handoff")] == [handoff]


def test_a_run_whose_record_failed_after_its_command_ran_is_not_told_to_run_it_again(started, tmp_path):
    """A run's command has run when its record fails (its ledger event): the hint does not ask to run the
    same command again (that runs it again), but names the task's next `majordomus run`, which completes it."""
    repo = started
    side = tmp_path / "side-effects"
    with freeze_time(NOW):
        with Faults(repo, "write", 1, only="ledger.jsonl").active():
            failed = run_here("run", "--", "sh", "-c", f"echo ran >> {side}", cwd=repo)
    assert failed.returncode == 12, failed.stderr
    err = failed.stderr.decode()
    assert "is stored" in err and "run the same command again" not in err, err
    assert "the task's next `majordomus run` completes what is missing" in err, err
    [pending] = [p for p in task_record(repo)["runs"]]
    with freeze_time("2099-12-01T09:05:00Z"):
        assert run_here("run", "--", "true", cwd=repo).returncode == 0
    assert [e["path"] for e in events_named(repo, "task.run")].count(pending) == 1
    assert side.read_text() == "ran\n"  # the command ran once
    assert run_here("doctor", "--strict", cwd=repo).returncode == 0


def test_a_failed_task_record_write_unlinks_the_record_nothing_was_written(started):
    repo = started
    before, ledger = records_in(repo), ledger_bytes(repo)
    with freeze_time(NOW):
        with Faults(repo, "rename", 1, only="tasks/t1.yaml").active():
            failed = run_here("checkpoint", cwd=repo, input="the note\n")
        assert failed.returncode == 12 and b"nothing was written" in failed.stderr
        assert records_in(repo) == before and ledger_bytes(repo) == ledger
        assert list((state_dir(repo) / "checkpoints").glob(".tmp-*")) == []
        again = run_here("checkpoint", cwd=repo, input="the note\n")
    assert again.returncode == 0 and b"already stored" not in again.stderr
    assert b"the note" in run_here("checkpoint", "--show", cwd=repo).stdout


def test_a_short_ledger_write_is_a_failed_write_cut_back_to_its_last_line(started):
    repo = started
    ledger = ledger_bytes(repo)
    with freeze_time(NOW), Faults(repo, "write", 1, how="short", only="ledger.jsonl").active():
        failed = run_here("checkpoint", cwd=repo, input="the note\n")
    assert failed.returncode == 12 and b"No space left on device" in failed.stderr
    assert ledger_bytes(repo) == ledger and ledger.endswith(b"\n")
    verify = run_here("ledger", "--verify", "--json", cwd=repo)
    assert json.loads(verify.stdout)["ok"] and json.loads(verify.stdout)["dropped_lines"] == 0


@pytest.mark.parametrize("argv,stdin", [(("checkpoint",), "a note\n"), (("handoff",), HANDOFF_BODY),
                                        (("context", "pin", "decision", "--", "Kept."), ""),
                                        (("task", "start", "t2"), "")])
@pytest.mark.parametrize("nth", [1, 2])
def test_an_fsync_that_fails_with_eio_is_exit_12_never_70(started, argv, stdin, nth):
    repo = started
    with Faults(repo, "fsync", nth, how="EIO").active() as faults:
        failed = run_here(*argv, cwd=repo, input=stdin)
    assert faults.fired
    err = failed.stderr.decode()
    assert failed.returncode == 12 and "Input/output error" in err and "\nhint: " in err, err


def test_a_task_start_whose_rename_fails_exits_12_and_its_retry_succeeds(started):
    repo = started
    with freeze_time(NOW):
        with Faults(repo, "rename", 1, only="active.json").active():
            failed = run_here("task", "start", "t2", cwd=repo)
        assert failed.returncode == 12, failed.stderr
        again = run_here("task", "start", "t2", cwd=repo)
    assert again.returncode == 0, again.stderr
    assert b"already exists" not in again.stderr
    assert task_record(repo, "t2")["status"] == "active" and task_record(repo, "t1")["status"] == "paused"
    assert [e["task"] for e in events_named(repo, "task.start")] == ["t1", "t2"]
    assert run_here("doctor", "--strict", cwd=repo).returncode == 0
    third = run_here("task", "start", "t2", cwd=repo)
    assert third.returncode == 10 and b"already exists" in third.stderr


def test_a_handoff_whose_release_failed_is_finished_by_its_retry(started):
    repo = started
    with freeze_time(NOW):
        with Faults(repo, "rename", 1, only="active.json").active():
            failed = run_here("handoff", cwd=repo, input=HANDOFF_BODY)
        assert failed.returncode == 12 and b"is stored and logged, but releasing the task here failed" in failed.stderr
    with freeze_time("2099-12-01T09:00:30Z"):
        again = run_here("handoff", cwd=repo, input=HANDOFF_BODY)
    assert again.returncode == 0, again.stderr
    assert b"complete now" in again.stderr
    assert len(events_named(repo, "task.handoff")) == 1 and task_record(repo)["status"] == "handed-off"
    assert json.loads((state_dir(repo) / "active.json").read_text()) == {}
    assert run_here("doctor", "--strict", cwd=repo).returncode == 0


class SwitchingStdin:
    """A body that arrives while another task becomes the active one here (a second terminal)."""

    def __init__(self, repo: Path, body: bytes) -> None:
        self.repo, self.body, self.after = repo, body, None

    def read(self, n: int = -1) -> bytes:
        if self.body is not None:
            assert run_here("task", "start", "t2", cwd=self.repo).returncode == 0
            self.after = (snapshot(self.repo), ledger_bytes(self.repo))
            body, self.body = self.body, None
            return body
        return b""


@pytest.mark.parametrize("body", [b"", b"\n\n", b"a note\n"])
def test_a_checkpoint_for_a_task_that_stopped_being_active_while_stdin_was_read_is_refused(started, body):
    """Empty or not: exit 11 and nothing written (an empty one must not move `checkpoint_at` of t1)."""
    from majordomus import checkpoint
    from majordomus.errors import NoActiveTask
    from majordomus.workspace import Workspace

    repo = started
    before = task_record(repo)["checkpoint_at"]
    stdin = SwitchingStdin(repo, body)
    with pytest.raises(NoActiveTask) as refused:
        ws = Workspace.open(str(repo))
        checkpoint.write(ws, stdin)  # type: ignore[arg-type]
    assert refused.value.code == 11
    assert "task `t1` is no longer the active task" in refused.value.message
    assert "nothing was written" in refused.value.message
    assert (snapshot(repo), ledger_bytes(repo)) == stdin.after
    assert task_record(repo)["checkpoint_at"] == before


def test_a_run_whose_task_stopped_being_active_while_it_ran_is_refused_and_records_nothing(started):
    """The run record takes the same lock and check again as every record: CMD ran, its record is refused."""
    import shutil

    repo = started
    me = shutil.which("majordomus", path=str(Path(__import__("sys").executable).parent))
    assert me
    result = run_here("run", "--", me, "task", "start", "t2", cwd=repo)
    assert result.returncode == 11, result.stderr
    err = result.stderr.decode()
    assert "the command ran (exit status 0), but its run record was not written" in err
    assert "task `t1` is no longer the active task" in err
    assert records_in(repo, "runs") == [] and events_named(repo, "task.run") == []


def test_the_store_imports_nothing_above_it() -> None:
    """The transaction takes plain data: a store module imports (for its types too, and inside a function)
    only the store, the standard-library layer, the errors, the clock and the secret scan — never the task,
    workspace, configuration or command modules that call it."""
    import ast

    import majordomus.store

    allowed = ("majordomus.store", "majordomus.lite", "majordomus.errors", "majordomus.clock",
               "majordomus.secretscan")
    found = []
    for path in sorted(Path(majordomus.store.__path__[0]).glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
                modules = ([f"{node.module}.{alias.name}" for alias in node.names] if node.module == "majordomus"
                           else [node.module])
            else:
                continue
            found += [f"{path.name}: {m}" for m in modules
                      if m.split(".")[0] == "majordomus" and not m.startswith(allowed)]
    assert found == []
