"""`majordomus run` (design §17): CMD's status and output pass through; one record, one event, evidence only."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import MAJORDOMUS, commit_file, events_named, git, run, run_here, snapshot, state_dir

from majordomus.store import records

PY = sys.executable


def runs_of(repo: Path) -> list[Path]:
    directory = state_dir(repo) / "runs"
    return sorted(directory.iterdir()) if directory.exists() else []


def one_record(repo: Path) -> tuple[dict[str, Any], str, bytes]:
    [path] = runs_of(repo)
    data = path.read_bytes()
    meta, body = records.split(data)
    return meta, body, data


@pytest.fixture
def task(cli: Any, repo: Path) -> str:
    assert cli("task", "start", "t1").exit_code == 0
    return "t1"


def test_status_and_output_pass_through_one_0600_record_one_event_with_the_head(repo, task):
    head = git(repo, "rev-parse", "HEAD")
    # CMD changes the work tree and commits: the record's identity is what was there before CMD started.
    script = ("import subprocess, sys; open('new.txt', 'w').write('x'); "
              "subprocess.run(['git', 'add', 'new.txt']); subprocess.run(['git', 'commit', '-qm', 'during']); "
              "sys.stdout.write('out line\\n'); sys.exit(3)")
    result = run("run", "--label", "tests", "--", PY, "-c", script, cwd=repo)
    assert result.returncode == 3
    assert result.stdout == b"out line\n"
    meta, body, data = one_record(repo)
    [path] = runs_of(repo)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert meta["kind"] == "run" and meta["task"] == "t1" and meta["label"] == "tests"
    assert meta["head"] == head and meta["worktree_state"] == "clean" and meta["changed_files"] == []
    assert meta["exit_status"] == 3 and "signal" not in meta
    assert meta["argv"] == [PY, "-c", script]
    assert meta["output_bytes"] == len(b"out line\n")
    assert meta["output_sha256"] == hashlib.sha256(b"out line\n").hexdigest()
    assert meta["started_at"] == meta["timestamp"] and isinstance(meta["duration_ms"], int)
    assert body == "| out line"
    [event] = events_named(repo, "task.run")
    assert event["path"] == f"runs/{path.name}" and event["sha256"] == hashlib.sha256(data).hexdigest()
    assert event["exit_status"] == 3 and event["head"] == head and event["task"] == "t1"
    assert path.name.startswith(meta["timestamp"].replace("-", "").replace(":", "") + "--main--" + head[:7])


def test_stderr_passes_through_to_stderr(repo, task):
    result = run("run", "--", PY, "-c", "import sys; sys.stderr.write('on stderr\\n')", cwd=repo)
    assert result.returncode == 0 and result.stderr == b"on stderr\n" and result.stdout == b""
    meta, body, _ = one_record(repo)
    assert body == "| on stderr" and meta["label"] == Path(PY).name  # default label: the command's name


def test_no_active_task_exit_11_and_the_command_did_not_run(repo, cli):
    before = snapshot(repo)
    marker = repo.parent / "marker"
    result = run("run", "--", PY, "-c", f"open({str(marker)!r}, 'w')", cwd=repo)
    assert result.returncode == 11
    assert b"no active task" in result.stderr and b"majordomus task start" in result.stderr
    assert not marker.exists()
    assert snapshot(repo) == before


def test_a_token_in_the_output_and_a_variable_in_the_environment_appear_nowhere_in_the_state(repo, task):
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    variable = "hunter2-env-value-7f3a9c"
    script = f"print('deploy ok'); print('using token {token}'); print('done')"
    result = run("run", "--", PY, "-c", script, cwd=repo, env={"MY_SECRET_VAR": variable})
    assert result.returncode == 0 and token.encode() in result.stdout  # the terminal sees what CMD printed
    _meta, body, _ = one_record(repo)
    assert body == "| deploy ok\n| [redacted]\n| done"
    for path in state_dir(repo).rglob("*"):
        if path.is_file():
            content = path.read_bytes()
            assert token.encode() not in content, path
            assert variable.encode() not in content and b"MY_SECRET_VAR" not in content, path


def test_a_secret_in_argv_is_redacted(repo, task):
    result = run("run", "--", PY, "-c", "pass", "password=correct-horse-battery", cwd=repo)
    assert result.returncode == 0
    meta, _, data = one_record(repo)
    assert meta["argv"] == [PY, "-c", "pass", "[redacted]"] and b"correct-horse" not in data


def test_a_signal_exits_128_plus_n_and_is_recorded(repo, task):
    result = run("run", "--", PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)", cwd=repo)
    assert result.returncode == 128 + signal.SIGTERM
    meta, _, _ = one_record(repo)
    assert meta["exit_status"] == 128 + signal.SIGTERM and meta["signal"] == signal.SIGTERM


def test_ctrl_c_reaches_the_command_and_the_record_is_still_written(repo, task):
    # A terminal's Ctrl-C is SIGINT to the foreground process group: majordomus and CMD alike.
    script = ("import signal, sys, time; signal.signal(signal.SIGINT, signal.SIG_DFL); "
              "sys.stdout.write('ready\\n'); sys.stdout.flush(); time.sleep(60)")
    proc = subprocess.Popen([MAJORDOMUS, "run", "--label", "slow", "--", PY, "-c", script], cwd=repo,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=30) == 128 + signal.SIGINT
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    meta, body, _ = one_record(repo)
    assert meta["exit_status"] == 130 and meta["signal"] == 2 and body == "| ready"


def test_the_body_keeps_the_last_20_lines_escaped_and_quoted(repo, task):
    lines = [f"line {i}" for i in range(1, 31)] + ["kind: checkpoint", "---", "bell \x07 and esc \x1b[31m"]
    script = f"import sys; sys.stdout.write({chr(10).join(lines)!r} + chr(10))"
    result = run("run", "--", PY, "-c", script, cwd=repo)
    assert result.returncode == 0
    meta, body, _ = one_record(repo)
    kept = body.split("\n")
    assert len(kept) == 20 and kept[0] == "| line 14" and kept[-3:] == [
        "| kind: checkpoint", "| ---", "| bell \\x07 and esc \\x1b[31m"]
    assert meta["output_lines"] == 33
    # The body passes the record body rules a sync import applies: no control characters, no identity field.
    records.normalise(body.encode(), what="run", max_lines=40, max_bytes=16384)


def test_brief_names_the_label_and_one_commit_since(repo, task, cli):
    assert run_here("run", "--label", "tests", "--", PY, "-c", "pass", cwd=repo).returncode == 0
    head = git(repo, "rev-parse", "--short=7", "HEAD")
    assert f"- `tests` passed at {head}" in cli("brief").stdout and "nothing moved since" in cli("brief").stdout
    commit_file(repo, "more.txt", "more\n")
    text = cli("brief").stdout
    assert f"- `tests` passed at {head}" in text and "; 1 commit since" in text
    (repo / "dirty.txt").write_text("x")
    assert "1 commit since; the work tree changed since" in cli("brief").stdout
    assert run_here("run", "--label", "tests", "--", PY, "-c", "raise SystemExit(2)", cwd=repo).returncode == 2
    text = cli("brief").stdout
    assert "- `tests` failed (exit 2) at" in text and "passed" not in text.split("# Latest runs")[1]


def test_run_list_newest_first_by_task_and_as_json(repo, task, cli):
    assert run_here("run", "--label", "a", "--", PY, "-c", "pass", cwd=repo).returncode == 0
    assert cli("task", "start", "t2").exit_code == 0
    assert run_here("run", "--label", "b", "--", PY, "-c", "raise SystemExit(1)", cwd=repo).returncode == 1
    listed = json.loads(cli("run", "--list", "--json").stdout)
    assert [(d["task"], d["label"], d["exit_status"]) for d in listed] == [("t2", "b", 1), ("t1", "a", 0)]
    only = json.loads(cli("run", "--list", "--json", "--task", "t1").stdout)
    assert [d["label"] for d in only] == ["a"] and only[0]["path"].endswith(".md")
    human = cli("run", "--list").stdout.splitlines()
    assert "t2  b  failed (exit 1)" in human[0] and "t1  a  passed" in human[1]


@pytest.mark.parametrize("args, message", [
    (["run", "--label", "bad label", "--", "true"], "is not a valid label"),
    (["run"], "no command to run"),
    (["run", "--list", "--", "true"], "--list takes no command"),
    (["run", "--json", "--", "true"], "--task and --json go with --list"),
])
def test_usage_errors_exit_2_run_nothing_and_write_nothing(repo, task, args, message):
    before = snapshot(repo)
    marker = repo.parent / "marker"
    result = run_here(*args, cwd=repo) if args[-1] != "true" else run_here(*args[:-1], "touch", str(marker), cwd=repo)
    assert result.returncode == 2 and message.encode() in result.stderr
    assert not marker.exists() and snapshot(repo) == before


def test_a_command_that_cannot_run_exits_127_and_records_nothing(repo, task):
    before = snapshot(repo)
    result = run_here("run", "--", "no-such-command-xyz", cwd=repo)
    assert result.returncode == 127 and b"cannot run `no-such-command-xyz`" in result.stderr
    assert snapshot(repo) == before


def test_doctor_checks_run_records_like_checkpoints(repo, task, cli):
    assert run_here("run", "--", PY, "-c", "print('x')", cwd=repo).returncode == 0
    assert cli("doctor").exit_code == 0
    [path] = runs_of(repo)
    path.write_bytes(path.read_bytes().replace(b"| x", b"| y"))
    result = cli("doctor", "--json")
    assert result.exit_code == 1
    codes = {f["code"] for f in json.loads(result.stdout)["findings"]}
    assert {"record.digest", "record.changed"} <= codes


# ---------------------------------------------------------------- CMD ran, its record did not land


@pytest.mark.parametrize("status", [0, 3])
def test_a_task_that_changed_while_the_command_ran_refuses_its_record_and_says_so(repo, task, status):
    """The record is refused as every record is (the lock, then the task again); the message says the command
    ran and what changed (no body here); the exit status is CMD's when it failed, else 11, never 0."""
    switch = f"{MAJORDOMUS} task start t2 >/dev/null && exit {status}"
    result = run_here("run", "--", "sh", "-c", switch, cwd=repo)
    assert result.returncode == (status or 11)
    first, hint = result.stderr.decode().strip().split("\n")
    assert first == (f"majordomus: the command ran (exit status {status}), but its run record was not written: "
                     f"task `t1` is no longer the active task in worktree {repo} on branch main: it changed "
                     "while the command ran")
    assert hint.startswith("hint: check `majordomus task show`; run the command again for the task that is active now")
    assert ("exits 11, not CMD's 0" in hint) == (status == 0)
    assert runs_of(repo) == [] and events_named(repo, "task.run") == []


def test_a_run_whose_ledger_event_failed_says_its_record_is_stored_and_the_next_run_completes_it(repo, task):
    from majordomus.store.fault import Faults

    with Faults(repo, "fsync", 1, "EIO", only="ledger.jsonl").active() as faults:
        result = run_here("run", "--label", "unit", "--", "true", cwd=repo)
    assert faults.fired and result.returncode == 12
    [record] = runs_of(repo)
    first = result.stderr.decode().split("\n")[0]
    shown = os.path.relpath(record, repo)
    assert first.startswith(f"majordomus: the command ran (exit status 0); the run record {shown} is stored, but "
                            "its ledger event was not written: ")
    assert "not written: the run record" not in first  # one true thing, not "not written … is stored"
    assert "exits 12, not CMD's 0" in result.stderr.decode()
    assert events_named(repo, "task.run") == []
    assert run_here("run", "--label", "unit", "--", "echo", "again", cwd=repo).returncode == 0
    completed, new = (e["path"] for e in events_named(repo, "task.run"))  # the missing event first, then the new run's
    assert completed == f"runs/{record.name}" and new != completed


def test_a_command_that_leaves_a_child_in_the_background_is_timed_to_its_own_end(cli, repo):
    """The output passes through until its pipes close — here when the background `sleep` that inherited
    them ends, as with `| tee` — but `duration_ms` is CMD's own: `sh` ended at once."""
    assert cli("task", "start", "t1").exit_code == 0
    began = time.monotonic()
    result = run("run", "--", "sh", "-c", "sleep 1.5 & echo started", cwd=repo)
    waited = time.monotonic() - began
    assert result.returncode == 0 and b"started" in result.stdout
    [record] = (state_dir(repo) / "runs").iterdir()
    duration = int(re.search(r"duration_ms: (\d+)", record.read_text()).group(1))  # type: ignore[union-attr]
    assert waited >= 1.4 and duration < 1000, (waited, duration)  # the pipes' life, not CMD's


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_after_cmd_ended_ends_the_wait_for_what_it_left_in_the_background(repo, task, signum):
    """Once CMD has ended, `run` waits for the pipes a background child still holds (as `| tee` does) — but
    a TERM or HUP then (`timeout`, a CI runner, a closed terminal) did nothing, and a daemon held `run` for
    ever. It ends the wait: the record is stored with CMD's own status, `run` exits 128+N."""
    from helpers import gone, processes_with

    mark = f"29.{os.getpid()}{signum}"
    proc = subprocess.Popen([str(MAJORDOMUS), "run", "--label", "bg", "--", "sh", "-c", f"sleep {mark} & echo started"],
                            cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"started\n"
        time.sleep(0.3)  # sh has ended: only the background sleep holds the pipes
        proc.send_signal(signum)
        assert proc.wait(timeout=10) == 128 + signum
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in processes_with(mark):
            os.kill(int(pid), signal.SIGKILL)
        gone(mark)
    meta, body, _ = one_record(repo)
    assert meta["exit_status"] == 0 and "signal" not in meta and body == "| started"


def test_an_identical_run_in_the_same_second_says_it_is_that_record(repo, task):
    """A run record is its content: the same command with the same output, status and duration in the same
    second is the same record, stored once with one event. The second run says so instead of nothing. One
    past the edge: the first run says nothing of it."""
    from freezegun import freeze_time

    with freeze_time("2026-12-01T10:00:00Z"):
        first = run_here("run", "--", "true", cwd=repo)
        second = run_here("run", "--", "true", cwd=repo)
    assert first.returncode == second.returncode == 0
    assert b"identical run record" not in first.stderr
    assert b"an identical run record" in second.stderr and b"recorded as that one" in second.stderr, second.stderr
    assert len(list((state_dir(repo) / "runs").iterdir())) == 1 and len(events_named(repo, "task.run")) == 1


def test_a_reader_that_goes_away_ends_a_command_that_writes_without_end_as_a_pipeline_does(repo, task):
    """`run -- yes | head -1`: once the reader left, majordomus read on and threw the output away, so `yes`
    never met a closed pipe and the pipeline never ended. CMD's pipe closes with its reader's, as in a
    pipeline without majordomus: CMD ends at its next write (SIGPIPE, 141 as a shell says), recorded so."""
    shell = subprocess.Popen(["bash", "-c", f"'{MAJORDOMUS}' run --label yes -- yes | head -1; "
                                            'echo "${PIPESTATUS[0]}" >&2'],
                             cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = shell.communicate(timeout=30)
    finally:  # a pipeline that never ends is stopped whole, not left writing
        if shell.poll() is None:
            os.killpg(shell.pid, signal.SIGKILL)
            shell.wait()
    assert out == b"y\n" and err.strip() == str(128 + signal.SIGPIPE).encode(), err
    meta, _, _ = one_record(repo)
    assert meta["label"] == "yes" and meta["signal"] == signal.SIGPIPE


@pytest.mark.parametrize("status", [3, 0])
def test_an_output_that_cannot_be_written_still_records_the_run_and_exits_with_its_status(repo, task, status):
    """Output to a full disk (`/dev/full`): `run` exited 12 at the first write, left CMD running on its own
    and stored no record. CMD's pipe closes (as its reader's end), CMD runs to its own end, its record is
    stored, and `run` says what could not be written: CMD's status when it failed, else 12."""
    script = f"echo first; sleep 0.2; echo done > '{repo}/after'; exit {status}"
    with open("/dev/full", "wb") as full:
        done = subprocess.run([MAJORDOMUS, "run", "--label", "full", "--", "sh", "-c", script],
                              cwd=repo, stdout=full, stderr=subprocess.PIPE, timeout=30, check=False)
    assert done.returncode == (status or 12), done.stderr
    assert b"its run record is stored, but its output could not all be passed on: No space left on device" in done.stderr
    assert (repo / "after").read_text() == "done\n"  # CMD ran to its end, as majordomus waited for it
    meta, body, _ = one_record(repo)
    assert meta["exit_status"] == status and body == "| first"
    assert [e["event"] for e in events_named(repo, "task.run")] == ["task.run"]


def test_a_stdout_left_non_blocking_by_the_parent_is_waited_on_not_an_error(repo, task):
    """node and ssh hand their children a pipe set O_NONBLOCK: a reader slower than CMD made `os.write` raise
    EAGAIN, and `run` exited 12 with 64 KiB of a megabyte passed on. It waits for the reader instead."""
    code = ("import fcntl, os, subprocess, sys, time\n"
            "r, w = os.pipe()\n"
            "fcntl.fcntl(w, fcntl.F_SETFL, fcntl.fcntl(w, fcntl.F_GETFL) | os.O_NONBLOCK)\n"
            f"p = subprocess.Popen([{str(MAJORDOMUS)!r}, 'run', '--', sys.executable, '-c', "
            "'import sys; sys.stdout.write(\"x\" * 1000000)'], stdout=w)\n"
            "os.close(w)\n"
            "time.sleep(0.3)\n"
            "got = b''\n"
            "while chunk := os.read(r, 65536):\n"
            "    got += chunk\n"
            "print(p.wait(), len(got))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, timeout=60, check=False)
    assert done.stdout.split() == [b"0", b"1000000"], done.stderr
