"""What only a real process shows: exit codes, memory bounds, concurrency, read-only state.

A kill -9 at each durable step of a write is in test_store_files.py: deterministic, one step at a time.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from helpers import (
    MAJORDOMUS,
    import_probe,
    ledger_events,
    require,
    require_tool,
    run,
    snapshot,
    start_task_at,
    state_dir,
)


def test_console_script_and_python_m(repo):
    start_task_at(repo)
    result = run("checkpoint", cwd=repo, input="hello\n")
    assert result.returncode == 0 and result.stdout.decode().startswith(".ai/local/state/checkpoints/")
    module = subprocess.run([sys.executable, "-m", "majordomus", "checkpoint", "--show"], cwd=repo,
                            capture_output=True, check=False)
    assert module.returncode == 0 and module.stdout.endswith(b"---\nhello\n")
    assert run("--version", cwd=repo).stdout.decode().strip().endswith("0.1.0")


def test_dash_C_runs_elsewhere(repo, tmp_path):
    start_task_at(repo)
    result = run("-C", str(repo), "checkpoint", "--show", cwd=tmp_path)
    assert result.returncode == 0
    missing = run("-C", str(tmp_path / "nope"), "task", "list", cwd=tmp_path)
    assert missing.returncode == 2 and b"cannot change to" in missing.stderr


def test_exit_codes_from_the_console_script(repo, tmp_path):
    assert run("checkpoint", cwd=repo, input="x\n").returncode == 11
    start_task_at(repo)
    assert run("checkpoint", cwd=repo, input="line\n" * 41).returncode == 10
    assert run("check", cwd=repo).returncode == 1
    assert run("no-such-command", cwd=repo).returncode == 2
    plain = tmp_path / "plain"
    plain.mkdir()
    assert run("task", "list", cwd=plain).returncode == 12


def test_internal_error_is_one_line_and_traceback_only_with_debug(repo):
    start_task_at(repo)
    result = run("checkpoint", "--show", cwd=repo, env={"MAJORDOMUS_FAULT": "internal-error"})
    assert result.returncode == 70
    err = result.stderr.decode()
    assert err.startswith("majordomus: internal error: ") and "Traceback" not in err
    assert "MAJORDOMUS_DEBUG=1" in err
    debug = run("checkpoint", "--show", cwd=repo, env={"MAJORDOMUS_DEBUG": "1", "MAJORDOMUS_FAULT": "internal-error"})
    assert debug.returncode == 70 and b"Traceback" in debug.stderr


def test_bad_config_names_key_and_file(repo):
    (repo / ".ai").mkdir()
    cfg = repo / ".ai" / "config.yaml"
    cfg.write_text("checkpoint:\n  max_body_lines: -3\n")
    start = run("task", "start", "t1", cwd=repo)
    assert start.returncode == 12
    err = start.stderr.decode()
    assert "checkpoint.max_body_lines" in err and str(cfg) in err
    cfg.write_text("checkpoint:\n  max_body_lines: forty\n")
    assert b"must be a whole number" in run("task", "start", "t1", cwd=repo).stderr
    cfg.write_text("checkpoint: [\n")
    assert b"not valid YAML" in run("task", "start", "t1", cwd=repo).stderr
    assert not (repo / ".ai" / "local").exists()


MEASURE = textwrap.dedent("""
    import resource, subprocess, sys
    proc = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    chunk = b"x" * (1 << 20)
    try:
        for _ in range(256):
            proc.stdin.write(chunk)
    except BrokenPipeError:  # the refusal: it stopped reading after the bound
        pass
    try:
        proc.stdin.close()
    except BrokenPipeError:
        pass
    # Not communicate(): it would flush the closed stdin and crash the harness, not the command under test.
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.wait()
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(proc.returncode, peak_kib)
    sys.stderr.write(err.decode())
""")


def test_256_mib_single_line_refused_with_bounded_memory(repo):
    start_task_at(repo)
    before = snapshot(repo)
    result = subprocess.run([sys.executable, "-c", MEASURE, MAJORDOMUS, "checkpoint"], cwd=repo,
                            capture_output=True, timeout=120, check=False)
    code, peak_kib = map(int, result.stdout.split())
    assert code == 10
    # the size as far as a bounded read tells it (64 MiB), never the whole 256 MiB in memory
    assert b"is over 67108864 bytes; the limit is 16384" in result.stderr and b"write a handoff instead" in result.stderr
    assert peak_kib < 200 * 1024, f"peak RSS {peak_kib} KiB"
    assert snapshot(repo) == before


def test_twelve_concurrent_writers(repo):
    start_task_at(repo)
    procs = [subprocess.Popen([MAJORDOMUS, "checkpoint"], cwd=repo, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(12)]
    for i, proc in enumerate(procs):
        proc.stdin.write(f"writer {i}\n".encode())
        proc.stdin.close()
    for proc in procs:
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
    records = list((state_dir(repo) / "checkpoints").glob("*.md"))
    assert len(records) == 12
    events = ledger_events(repo)  # no torn line: every line parses
    checkpoints = [e for e in events if e["event"] == "task.checkpoint"]
    assert len(checkpoints) == 12
    assert len({e["seq"] for e in events}) == len(events)
    assert {e["path"] for e in checkpoints} == {f"checkpoints/{r.name}" for r in records}
    assert run("ledger", "--verify", cwd=repo).returncode == 0


def _can_mount_read_only(tmp_path: Path) -> bool:
    require_tool("unshare")
    if os.geteuid() != 0:
        return False
    probe = tmp_path / "probe"
    probe.mkdir()
    r = subprocess.run(["unshare", "-m", "sh", "-c", f"mount --bind -o ro {probe} {probe}"],
                       capture_output=True, check=False)
    return r.returncode == 0


def test_read_only_state_directory_exit_12(repo, tmp_path):
    require(_can_mount_read_only(tmp_path), "needs root and unshare -m to make a read-only bind mount")
    start_task_at(repo)
    state = state_dir(repo)
    before = snapshot(repo)
    script = f"mount --bind -o ro {state} {state} && exec {MAJORDOMUS} checkpoint"
    result = subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=repo, input=b"read only\n",
                            capture_output=True, check=False)
    assert result.returncode == 12, result.stderr
    assert b"not writable" in result.stderr or b"Read-only" in result.stderr
    assert snapshot(repo) == before


def test_hot_commands_import_no_pygit2_click_or_yaml(repo):
    """design §16: no hot command imports pygit2 or click, nor yaml when the files are as majordomus wrote them."""
    start_task_at(repo)
    hot = ((["checkpoint"], b"hot\n"), (["checkpoint", "--show"], b""), (["checkpoint", "--list"], b""),
           (["check"], b""), (["check", "--checkpoint"], b""), (["-C", str(repo), "check"], b""),
           (["hook", "session-start"], b"{}"), (["hook", "stop"], b"{}"),
           (["hook", "compact", "--phase", "pre", "--runtime", "claude"], b"{}"))
    for args, stdin in hot:
        assert import_probe(repo, *args, input=stdin) == {"code": 0, "heavy": []}, args
    # The probe can see them: a command's --help is click's, and shows it.
    assert import_probe(repo, "task", "list", "--help") == {"code": 0, "heavy": ["click"]}
