"""`majordomus watch`: only what is new in the ledger; each condition once when it begins and once when it clears."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
from pathlib import Path

import pytest
from freezegun import freeze_time
from helpers import MAJORDOMUS, run, snapshot, start_task, state_dir


def checkpoint(cli, text):
    result = cli("checkpoint", input=text)
    assert result.exit_code == 0, result.output
    return result.stdout.strip()


def watcher(repo: Path, from_end: bool = True):
    from majordomus.doctor.watch import Watcher

    return Watcher.open(str(repo), from_end=from_end)


def kinds(reports):
    return [(r.kind, r.code) for r in reports]


# ------------------------------------------------------------------ the ledger tail


def test_reports_only_events_appended_after_it_started(cli, repo):
    start_task(cli)
    checkpoint(cli, "before\n")
    w = watcher(repo)
    assert w.tick() == []
    path = checkpoint(cli, "after\n")
    reports = w.tick()
    assert kinds(reports) == [("event", "task.checkpoint")]
    assert reports[0].event["path"] == path[len(".ai/local/state/"):]
    assert w.tick() == []  # read once, never again


def test_ledger_appearing_later_is_read_from_its_start(cli, repo):
    w = watcher(repo)
    assert w.tick() == []
    start_task(cli)
    checkpoint(cli, "first\n")
    assert kinds(w.tick()) == [("event", "task.start"), ("event", "task.checkpoint")]


def test_a_line_still_being_written_waits_for_its_end(cli, repo):
    start_task(cli)
    w = watcher(repo)
    ledger = state_dir(repo) / "ledger.jsonl"
    line = json.dumps({"v": 1, "seq": 2, "at": "2026-01-01T00:00:00Z", "event": "session.stop", "task": "t1"})
    with open(ledger, "ab") as fh:
        fh.write(line[:20].encode())
    assert w.tick() == []
    with open(ledger, "ab") as fh:
        fh.write(line[20:].encode() + b"\n")
    assert kinds(w.tick()) == [("event", "session.stop")]


def test_torn_line_is_reported_as_dropped(cli, repo):
    start_task(cli)
    w = watcher(repo)
    with open(state_dir(repo) / "ledger.jsonl", "ab") as fh:
        fh.write(b'{"v":1,"seq":9,"ev\n')
    assert kinds(w.tick()) == [("dropped", "ledger.dropped")]


def test_survives_rotation_and_reads_the_old_file_to_its_end(cli, repo):
    start_task(cli)
    w = watcher(repo)
    ledger = state_dir(repo) / "ledger.jsonl"
    checkpoint(cli, "before the move\n")  # appended to the file that is about to move
    os.rename(ledger, ledger.with_name("ledger.jsonl.1"))
    checkpoint(cli, "into the new file\n")
    reports = w.tick()
    assert kinds(reports) == [("event", "task.checkpoint")] * 2
    assert [r.event["seq"] for r in reports] == [2, 1]  # the new file's chain starts again
    checkpoint(cli, "and again\n")
    assert [r.event["seq"] for r in w.tick()] == [2]


def test_survives_truncation(cli, repo):
    start_task(cli)
    checkpoint(cli, "one\n")
    w = watcher(repo)
    ledger = state_dir(repo) / "ledger.jsonl"
    os.truncate(ledger, 0)
    assert w.tick() == []
    checkpoint(cli, "two\n")
    reports = w.tick()
    assert kinds(reports) == [("event", "task.checkpoint")] and reports[0].event["seq"] == 1


def test_rewritten_in_place_to_the_same_size_is_noticed(cli, repo):
    start_task(cli)
    w = watcher(repo)
    ledger = state_dir(repo) / "ledger.jsonl"
    data = ledger.read_bytes()
    ledger.write_bytes(data.replace(b'"t1"', b'"t9"'))  # same length, other bytes, same inode
    checkpoint(cli, "after the rewrite\n")
    reports = w.tick()
    assert [r.event.get("task") for r in reports] == ["t9", "t1"]


# ------------------------------------------------------------------ conditions


def test_retention_begins_once_and_clears_once(cli, repo):
    (repo / ".ai").mkdir()
    (repo / ".ai" / "config.yaml").write_text("checkpoint:\n  retention_max_files: 1\n")
    start_task(cli)
    paths = [checkpoint(cli, "one\n")]
    w = watcher(repo)
    assert w.tick() == []
    paths += [checkpoint(cli, "two\n"), checkpoint(cli, "three\n")]
    reports = w.tick()
    begins = [r for r in reports if r.kind == "begins"]
    assert [(r.code, r.level) for r in begins] == [("retention.checkpoints", "warn")]
    assert "3 checkpoint records" in begins[0].message and "(1)" in begins[0].message
    for _ in range(4):
        assert [r for r in w.tick() if r.kind != "event"] == []
    checkpoint(cli, "four\n")
    assert [r.kind for r in w.tick()] == ["event"]  # 4 records: still over, not reported again
    for rel in paths:
        os.unlink(repo / rel)
    cleared = w.tick()
    assert kinds(cleared) == [("clears", "retention.checkpoints")]
    assert "1 checkpoint records (limit 1)" in cleared[0].message
    assert w.tick() == []


def test_raising_the_limit_in_config_clears_retention(cli, repo):
    (repo / ".ai").mkdir()
    config = repo / ".ai" / "config.yaml"
    config.write_text("checkpoint:\n  retention_max_files: 1\n")
    start_task(cli)
    checkpoint(cli, "one\n")
    checkpoint(cli, "two\n")
    w = watcher(repo)
    assert kinds(w.tick()) == [("begins", "retention.checkpoints")]
    config.write_text("checkpoint:\n  retention_max_files: 10\n")
    assert kinds(w.tick()) == [("clears", "retention.checkpoints")]
    config.write_text("checkpoint:\n  retention_max_files: ten\n")
    assert kinds(w.tick()) == [("begins", "config.invalid")]
    config.write_text("checkpoint:\n  retention_max_files: 10\n")
    assert kinds(w.tick()) == [("clears", "config.invalid")]


def test_stale_begins_once_and_clears_on_checkpoint(cli, repo):
    with freeze_time("2026-09-03T10:00:00Z"):
        start_task(cli)
        checkpoint(cli, "fresh\n")
        w = watcher(repo)
        assert w.tick() == []
    with freeze_time("2026-09-03T12:30:00Z"):
        reports = w.tick()
        assert kinds(reports) == [("begins", "task.stale")]
        assert "`t1`" in reports[0].message and "150 minutes ago" in reports[0].message
    with freeze_time("2026-09-03T13:30:00Z"):
        assert w.tick() == []  # still stale, older now: not reported again
        checkpoint(cli, "back at it\n")
        assert kinds(w.tick()) == [("event", "task.checkpoint"), ("clears", "task.stale")]


def test_stale_clears_when_the_task_is_done(cli, repo):
    with freeze_time("2026-09-03T10:00:00Z"):
        start_task(cli)
        w = watcher(repo)
    with freeze_time("2026-09-03T14:00:00Z"):
        assert kinds(w.tick()) == [("begins", "task.stale")]
        assert cli("task", "done").exit_code == 0
        assert kinds(w.tick()) == [("event", "task.done"), ("clears", "task.stale")]


# ------------------------------------------------------------------ the command


def test_once_reports_conditions_that_hold_now_and_no_old_events(cli, repo):
    (repo / ".ai").mkdir()
    (repo / ".ai" / "config.yaml").write_text("checkpoint:\n  retention_max_files: 1\n")
    start_task(cli)
    for i in range(3):
        checkpoint(cli, f"note {i}\n")
    before = snapshot(repo)
    result = cli("watch", "--once", "--json")
    assert result.exit_code == 0
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(x["type"], x["code"], x["level"]) for x in lines] == [("begins", "retention.checkpoints", "warn")]
    assert set(lines[0]) == {"type", "at", "code", "level", "message", "path", "hint"}
    text = cli("watch", "--once").stdout
    assert "begins  retention.checkpoints: 3 checkpoint records" in text and "next: archive" in text
    assert snapshot(repo) == before  # watch only reads


def test_once_on_a_clean_repository_prints_nothing(cli, repo):
    result = cli("watch", "--once")
    assert result.exit_code == 0 and result.stdout == ""
    assert not (repo / ".ai").exists()


def test_interval_must_be_positive(cli, repo):
    result = cli("watch", "--interval", "0")
    assert result.exit_code == 2


class Reader:
    """Collects a watcher's JSON lines in a thread, tagging each with the number of rounds ended before it."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.lines: queue.Queue = queue.Queue()
        self.ticks = 0  # rounds ended, as far as the watcher has printed them
        self.seen: list[tuple[int, dict]] = []
        threading.Thread(target=self._pump, args=(proc,), daemon=True).start()

    def _pump(self, proc: subprocess.Popen) -> None:
        for raw in proc.stdout:
            item = json.loads(raw)
            self.lines.put((self.ticks, item))
            if item["type"] == "tick":
                self.ticks = item["tick"]
        self.lines.put(None)

    def until(self, predicate, limit: float = 60.0) -> tuple[int, dict]:
        """The next line that matches; `limit` only stops a broken watcher from hanging the suite."""
        while True:
            entry = self.lines.get(timeout=limit)
            assert entry is not None, "the watcher exited"
            self.seen.append(entry)
            if predicate(entry[1]):
                return entry

    def rest(self) -> list[dict]:
        """Everything the watcher printed, once it has exited."""
        while (entry := self.lines.get(timeout=60)) is not None:
            self.seen.append(entry)
        return [item for _, item in self.seen]


@pytest.mark.skipif(MAJORDOMUS is None, reason="console script not installed")
def test_running_watcher_sees_another_process_and_reports_retention_once(cli, repo):
    (repo / ".ai").mkdir()
    (repo / ".ai" / "config.yaml").write_text("checkpoint:\n  retention_max_files: 1\n")
    start_task(cli)
    for i in range(3):
        checkpoint(cli, f"note {i}\n")  # over the limit by two before the watcher starts
    proc = subprocess.Popen([MAJORDOMUS, "watch", "--interval", "0.1", "--json", "--heartbeat"], cwd=repo,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        reader = Reader(proc)
        reader.until(lambda x: x["type"] == "tick" and x["tick"] >= 2)
        written = run("checkpoint", cwd=repo, input="written by another process\n")
        assert written.returncode == 0, written.stderr
        rel = written.stdout.decode().strip()[len(".ai/local/state/"):]
        # Waited for, not timed: the event arrives in some later round (the bound only stops a hang).
        ended_before, event = reader.until(lambda x: x["type"] == "event")
        assert event["event"]["event"] == "task.checkpoint" and event["event"]["path"] == rel
        reader.until(lambda x: x["type"] == "tick" and x["tick"] >= ended_before + 5)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
        everything = reader.rest()
        assert sum(1 for x in everything if x["type"] == "tick") >= 6
        conditions = [x for x in everything if x["type"] in ("begins", "clears")]
        assert [(x["type"], x["code"]) for x in conditions] == [("begins", "retention.checkpoints")]
        assert "3 checkpoint records" in conditions[0]["message"]
        assert [x["event"]["event"] for x in everything if x["type"] == "event"] == ["task.checkpoint"]
        assert "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.skipif(MAJORDOMUS is None, reason="console script not installed")
def test_sigterm_ends_it_cleanly(repo):
    proc = subprocess.Popen([MAJORDOMUS, "watch", "--interval", "0.2", "--json", "--heartbeat"], cwd=repo,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert json.loads(proc.stdout.readline())["type"] == "tick"
        proc.terminate()
        assert proc.wait(timeout=60) == 0
        assert proc.stderr.read() == ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_refuses_a_state_directory_that_is_a_link(cli, repo, tmp_path):
    real = tmp_path / "real-local"
    real.mkdir()
    (repo / ".ai").mkdir()
    (repo / ".ai" / "local").symlink_to(real)
    before = snapshot(repo)
    result = cli("watch", "--once")
    assert result.exit_code == 12 and "symbolic link" in result.stderr
    assert snapshot(repo) == before and list(real.iterdir()) == []


# ------------------------------------------------------------------ a hostile ledger (design §2a, §2b)


@pytest.mark.parametrize("shape", ["fifo", "directory", "link to a file", "link to /dev/zero"])
def test_a_ledger_that_is_not_a_regular_file_is_exit_12_naming_it(cli, repo, tmp_path, shape):
    start_task(cli)
    path = state_dir(repo) / "ledger.jsonl"
    saved = path.read_bytes()
    path.unlink()
    if shape == "fifo":
        os.mkfifo(path)
    elif shape == "directory":
        path.mkdir()
    elif shape == "link to a file":
        (tmp_path / "elsewhere.jsonl").write_bytes(saved)
        path.symlink_to(tmp_path / "elsewhere.jsonl")
    else:
        path.symlink_to("/dev/zero")
    before = snapshot(repo)
    for args in (("watch", "--once"), ("watch", "--once", "--json")):
        result = cli(*args)
        assert result.exit_code == 12, (shape, result)
        assert "ledger.jsonl" in result.stderr and "majordomus does not read it" in result.stderr
    assert snapshot(repo) == before


def test_a_torn_tail_is_scanned_once_not_at_every_tick(cli, repo, monkeypatch):
    start_task(cli)
    w = watcher(repo)
    ledger = state_dir(repo) / "ledger.jsonl"
    with open(ledger, "ab") as fh:
        fh.write(b'{"v":1,"seq":')
    os.truncate(ledger, ledger.stat().st_size + (20 << 20))  # a 20 MiB line that never ended (sparse)
    read: list[int] = []
    real_pread = os.pread

    def counted(fd: int, n: int, offset: int) -> bytes:
        data = real_pread(fd, n, offset)
        read.append(len(data))
        return data

    monkeypatch.setattr(os, "pread", counted)
    assert w.tick() == [] and w.tick() == []  # a round reads at most 16 MiB: two rounds reach the end
    assert 20 << 20 <= sum(read) <= 21 << 20  # the line's end was looked for once, not once per round
    read.clear()
    for _ in range(3):
        assert w.tick() == []
    assert sum(read) <= 3 * 64  # later rounds read nothing new but the mark that notices a rewrite
    with open(ledger, "ab") as fh:
        fh.write(b"\n")
    checkpoint(cli, "after the tear\n")
    read.clear()
    assert kinds(w.tick()) == [("dropped", "ledger.dropped"), ("event", "task.checkpoint")]
    assert sum(read) < 1 << 20  # the long line is skipped unread
    ledger.unlink()
