"""The hooks run at every session start and compaction: they import no pygit2, click or yaml (design §12, §16)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import FIXTURES, MAJORDOMUS, import_probe, ledger_events, run, run_here, state_dir


@pytest.fixture
def active(repo: Path) -> Path:
    (repo / ".ai").mkdir()
    (repo / ".ai" / "config.yaml").write_text("journal:\n  rotate_bytes: 100000\n")  # a config file to read
    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    return repo


def test_compact_imports_nothing_heavy(active):
    payload = (FIXTURES / "payloads" / "claude-pre-compact.json").read_bytes()
    got = import_probe(active, "hook", "compact", "--phase", "pre", "--runtime", "claude", input=payload)
    assert got == {"code": 0, "heavy": []}
    journal = state_dir(active) / "context" / "t1" / "compact-events.jsonl"
    assert json.loads(journal.read_text())["trigger"] == "auto"  # it did the work, not just nothing


def test_compact_with_dash_C_and_bad_input_imports_nothing_heavy(active, tmp_path):
    got = import_probe(tmp_path, "-C", str(active), "hook", "compact", "--phase", "post", "--runtime", "codex",
                       input=b"\x00garbage")
    assert got == {"code": 0, "heavy": []}
    got = import_probe(active, "hook", "compact", "--phase", "nope")
    assert got == {"code": 0, "heavy": []}


def test_the_probe_can_see_heavy_imports(active):
    # The same probe on commands that need them must see pygit2 and click: the checks here can fail.
    got = import_probe(active, "task", "show", "--bogus")  # a usage error is click's
    assert "click" in got["heavy"]
    got = import_probe(active, "sync", "status", "--no-fetch")
    assert "pygit2" in got["heavy"]


def test_doctor_asks_git_itself_and_loads_no_pygit2(active):
    """doctor sits in pre-commit hooks and CI jobs: what git holds under the state is asked of git (three
    short commands), not of pygit2, whose loading alone cost a tenth of a second."""
    got = import_probe(active, "doctor")
    assert got["code"] == 0 and "pygit2" not in got["heavy"] and "_pygit2" not in got["heavy"], got


def test_console_script_import_trace(active):
    """The installed console script, traced by the interpreter itself (-X importtime)."""
    out = subprocess.run([sys.executable, "-X", "importtime", MAJORDOMUS, "hook", "compact", "--phase", "pre",
                          "--runtime", "claude"], cwd=active, input=b"{}", capture_output=True, check=False)
    assert out.returncode == 0
    imported = {line.split("|")[-1].strip().split(".")[0] for line in out.stderr.decode().splitlines()
                if line.startswith("import time:")}
    assert "majordomus" in imported
    assert not imported & {"pygit2", "_pygit2", "click", "yaml", "_yaml"}


def test_help_is_answered_without_recording(active):
    result = run("hook", "compact", "--help", cwd=active)
    assert result.returncode == 0 and b"--phase" in result.stdout
    assert not (state_dir(active) / "context" / "t1" / "compact-events.jsonl").exists()


@pytest.mark.parametrize("hook_name", ["session-start", "stop"])
def test_session_hooks_import_nothing_heavy(active, hook_name):
    """design §16: session-start and stop run the user's git, not pygit2, and no click or yaml."""
    payload = (FIXTURES / "payloads" / f"claude-{'session-start-compact' if hook_name != 'stop' else 'stop'}.json")
    got = import_probe(active, "hook", hook_name, input=payload.read_bytes())
    assert got == {"code": 0, "heavy": []}
    last = ledger_events(active)[-1]["event"]
    assert last == ("session.start" if hook_name == "session-start" else "session.stop")  # it did the work


# ---------------------------------------------------------------- stdin read with a deadline (design §2a)


def test_a_stdin_that_never_closes_costs_at_most_two_seconds(active):
    """`sleep 20 | majordomus hook …`: the writer keeps stdin open and silent; each hook goes on after 1 s of
    quiet, exit 0. The three hooks wait side by side (one second of the suite's time, not three)."""
    import time

    hooks = [("session-start",), ("stop",), ("compact", "--phase", "pre", "--runtime", "codex")]
    writer = subprocess.Popen(["sleep", "20"], stdout=subprocess.PIPE)
    try:
        began = time.monotonic()
        running = [(args, subprocess.Popen([MAJORDOMUS, "hook", *args], cwd=active, stdin=writer.stdout,
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)) for args in hooks]
        finished = []
        for args, proc in running:
            out, err = proc.communicate(timeout=15)
            finished.append((args, proc.returncode, out, err, time.monotonic() - began))
    finally:
        writer.kill()
        writer.wait()
    for args, code, out, err, took in finished:
        assert code == 0, (args, err)
        assert took < 2.9, (args, took)
        if args[0] == "session-start":
            assert "Briefing for task `t1`" in json.loads(out)["hookSpecificOutput"]["additionalContext"]


def test_a_payload_then_an_open_stdin_is_read_at_once(active):
    """One complete JSON value is enough: the hook does not wait for the end of a stream kept open."""
    import time

    payload = (FIXTURES / "payloads" / "codex-session-start-compact.json").read_bytes()
    proc = subprocess.Popen([MAJORDOMUS, "hook", "session-start", "--runtime", "codex"], cwd=active,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        began = time.monotonic()
        assert proc.stdin is not None
        proc.stdin.write(payload)
        proc.stdin.flush()  # and never closed until the hook is done
        assert proc.stdout is not None
        out = proc.stdout.read()
        took = time.monotonic() - began
    finally:
        proc.kill()
        proc.wait()
    assert json.loads(out)["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert took < 0.95, took  # less than the 1 s of quiet: the complete value ended the read
    events = [e for e in ledger_events(active) if e["event"] == "session.start"]
    assert events[-1]["source"] == "compact"


def test_a_payload_written_slowly_is_read_whole(active):
    """Bytes that keep coming (less than 1 s apart) are read on, up to the 2 s in all."""
    import os
    import threading
    import time

    from majordomus.lite.stdin import read_hook_payload

    read_end, write_end = os.pipe()
    data = json.dumps({"session_id": "slow", "source": "resume"}).encode()

    def trickle() -> None:
        for i in range(0, len(data), 8):
            os.write(write_end, data[i:i + 8])
            time.sleep(0.05)

    writer = threading.Thread(target=trickle)
    writer.start()
    with os.fdopen(read_end, "rb", buffering=0) as stream:
        got = read_hook_payload(stream, 1 << 20)
    writer.join()
    os.close(write_end)
    assert got == data
