"""A stop signal in the middle of a write (design §10, §2b): Ctrl-C (SIGINT), a closed terminal (SIGHUP) and
a runtime's timeout (SIGTERM) wait while the state lock is held, so that the write lands whole — the record,
its task record, its index and its ledger event, no temporary file left — and the command stops only then.

Each case holds one fsync of the write for a moment (strace's `delay_enter`), sends the signal while it is
held, and looks at the state afterwards. The cases run side by side: they spend their time waiting.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import HANDOFF_BODY, MAJORDOMUS, reading_stdin, require_tool, run_here, snapshot, start_task_at, state_dir

HOLD_US = 600_000  # how long the chosen fsync is held (µs)
SIGNALS = {"TERM": signal.SIGTERM, "INT": signal.SIGINT, "HUP": signal.SIGHUP}

# (command, stdin, the fsync held: its number in the command's fsyncs, signal, what the write leaves behind)
CASES = [
    *[(("checkpoint",), b"a note the signal did not cut\n", n, sig, "a note the signal did not cut")
      for n in (1, 2, 3, 4) for sig in ("TERM", "INT")],
    (("checkpoint",), b"a note the terminal's close did not cut\n", 2, "HUP", "the terminal's close did not cut"),
    *[(("handoff",), HANDOFF_BODY.encode(), n, "TERM", HANDOFF_BODY.splitlines()[1]) for n in (2, 5)],
    (("context", "pin", "decision", "pinned through a signal"), b"", 1, "INT", "pinned through a signal"),
]


FSYNC = {"x86_64": 74, "aarch64": 82}  # the syscall's number, as /proc/PID/syscall shows it


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _in_fsync(pid: int) -> bool:
    """Whether a thread of `pid` sits in the held fsync (the MCP server writes in another thread than its
    first). One whose failure strace injects shows syscall -1 while strace holds it (state `t`)."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for tid in threads:
        try:
            number = Path(f"/proc/{pid}/task/{tid}/syscall").read_text().split()[0]
            if number == str(FSYNC[os.uname().machine]) or (
                    number == "-1" and Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "t"):
                return True
        except (OSError, IndexError):
            continue
    return False


def _signal_each_inside_its_held_fsync(cases: list[tuple[subprocess.Popen[bytes], int]]) -> list[int]:
    """Send each majordomus (strace's child) its signal once it sits in its held fsync, watching them all at
    once: the holds overlap, and one watched after another could pass unseen. The cases never signalled."""
    waiting = dict(enumerate(cases))
    deadline = time.monotonic() + 30
    while waiting and time.monotonic() < deadline:
        for n, (proc, signum) in list(waiting.items()):
            if proc.poll() is not None:
                continue
            for child in _children(proc.pid):
                if _in_fsync(child):
                    os.kill(child, signum)
                    del waiting[n]
                    break
        if all(proc.poll() is not None for proc, _ in waiting.values()):
            break
        time.sleep(0.005)
    return sorted(waiting)


def test_a_stop_signal_mid_write_waits_for_the_write_to_land_whole(repo: Path, tmp_path: Path) -> None:
    strace = require_tool("strace")
    started = []
    for n, (args, stdin, when, _sig, _shown) in enumerate(CASES):
        here = tmp_path / f"case-{n}"
        shutil.copytree(repo, here, symlinks=True)
        start_task_at(here)
        assert run_here("checkpoint", cwd=here, input="a first note\n").returncode == 0
        trace = [strace, "-f", "-qq", "-o", os.devnull, "-e", "trace=fsync",
                 "-e", f"inject=fsync:delay_enter={HOLD_US}:when={when}", str(MAJORDOMUS), *args]
        (tmp_path / f"stdin-{n}").write_bytes(stdin)
        with open(tmp_path / f"stdin-{n}", "rb") as given:
            proc = subprocess.Popen(trace, cwd=here, stdin=given, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        started.append((here, proc))
    missed = _signal_each_inside_its_held_fsync([(proc, SIGNALS[case[3]]) for (_here, proc), case
                                                 in zip(started, CASES, strict=True)])
    assert not missed, [CASES[n] for n in missed]
    wrong = []
    for (here, proc), (args, _stdin, when, sig, shown) in zip(started, CASES, strict=True):
        _out, err = proc.communicate(timeout=30)
        name = f"`{' '.join(args)}` with fsync {when} held, SIG{sig}"
        state = state_dir(here)
        temps = [str(p.relative_to(state)) for p in state.rglob(".tmp-*")]
        doctor = run_here("doctor", "--strict", cwd=here, text=True)
        listed = "".join(run_here(*shows, cwd=here, text=True).stdout
                         for shows in (("brief",), ("context", "show"), ("handoff", "--show", "t1")))
        if temps or doctor.returncode != 0 or shown not in listed:
            wrong.append(f"{name}: exit {proc.returncode}, temporary files {temps}, doctor {doctor.returncode}:"
                         f" {doctor.stdout[-300:]!r}, shown: {shown in listed}, stderr {err[-200:]!r}")
        if sig == "INT" and proc.returncode == 130:
            assert b"landed whole" in err and b"Traceback" not in err, err
    assert wrong == [], "\n".join(wrong)


WRITER = """
import os, sys, threading, time
from majordomus.lite import stopsignals
stopsignals.install()
mark, in_main = sys.argv[1], sys.argv[2] == "main"
def write():
    with stopsignals.held():
        print("held", flush=True)
        end = time.monotonic() + 20
        while not os.path.exists(mark + ".sent") and time.monotonic() < end:  # the signal came meanwhile
            time.sleep(0.01)
        open(mark, "w").write("landed")
def read():
    while os.read(0, 65536):  # another thread in a blocking read, as the MCP server's reader of stdin
        pass
if in_main:
    threading.Thread(target=read, daemon=True).start()
    write()
else:
    threading.Thread(target=write).start()
    read()
"""


def test_a_stop_signal_waits_for_a_write_in_any_thread(tmp_path: Path) -> None:
    """A signal mask holds back a signal in one thread only, and the kernel gives a signal sent to the
    process to a thread that does not block it (the MCP server's stdin reader, while a tool writes in
    another): the handler counts what is under way in every thread, and the process ends after the write."""

    cases = [(where, sig) for where in ("main", "worker") for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)]
    procs = []
    for where, sig in cases:  # side by side: they spend their time waiting
        mark = tmp_path / f"{where}-{sig}"
        procs.append((mark, subprocess.Popen([sys.executable, "-c", WRITER, str(mark), where], stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)))
    for (where, _sig), (_mark, proc) in zip(cases, procs, strict=True):
        assert proc.stdout is not None and proc.stdout.readline() == b"held\n", where
    for (where, sig), (mark, proc) in zip(cases, procs, strict=True):
        proc.send_signal(sig)
        time.sleep(0.05)  # the handler has run (or the signal is pending) before the write may end
        Path(f"{mark}.sent").touch()
        try:  # the signal ends it once the write is done, while the other thread still reads
            proc.wait(timeout=10)
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=10)
        assert mark.read_text() == "landed", (where, sig)
        assert proc.returncode in (-sig, 1), (where, sig, proc.returncode)  # INT: KeyboardInterrupt, exit 1


def test_ctrl_c_outside_a_write_says_only_that_it_was_interrupted(repo: Path) -> None:
    """Nothing was being written (checkpoint still reading its stdin): exit 130, "interrupted", and no word
    of a write that landed."""
    start_task_at(repo)
    proc = subprocess.Popen([str(MAJORDOMUS), "checkpoint"], cwd=repo, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert reading_stdin(proc.pid)  # started, and waiting for the body (a sleep could end inside its start)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=10)
    assert proc.returncode == 130 and err.strip().endswith(b"majordomus: interrupted"), err
    assert b"landed" not in err and run_here("checkpoint", "--list", cwd=repo).stdout.strip() == b""


def _rpc(message: dict[str, object]) -> bytes:
    import json

    return (json.dumps(message) + "\n").encode()


def test_a_stop_signal_to_the_mcp_server_mid_tool_waits_for_the_write_and_prints_no_traceback(repo: Path,
                                                                                            tmp_path: Path) -> None:
    """The MCP server runs a tool's write in its event loop while another thread reads stdin: a Ctrl-C in
    the middle of a checkpoint's held fsync waits for the write, then ends the server as it asked (130 with
    one line), with no traceback of the task groups it unwound."""
    strace = require_tool("strace")
    started = []
    for sig in ("INT",):  # TERM's own end is the one of every command (the checkpoint cases above)
        here = tmp_path / f"mcp-{sig}"
        shutil.copytree(repo, here, symlinks=True)
        start_task_at(here)
        proc = subprocess.Popen([strace, "-f", "-qq", "-o", os.devnull, "-e", "trace=fsync", "-e",
                                 f"inject=fsync:delay_enter={HOLD_US}:when=2", str(MAJORDOMUS), "mcp"], cwd=here,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(_rpc({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
        proc.stdin.flush()
        assert b'"id":1' in proc.stdout.readline()
        started.append((here, proc, sig))
    for n, (_here, proc, _sig) in enumerate(started):  # the calls once every server is up: the holds overlap
        assert proc.stdin is not None
        proc.stdin.write(_rpc({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        proc.stdin.write(_rpc({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "checkpoint", "arguments": {"body": f"a note through the server {n}"}}}))
        proc.stdin.flush()
    missed = _signal_each_inside_its_held_fsync([(proc, SIGNALS[sig]) for _here, proc, sig in started])
    assert not missed, [started[n][2] for n in missed]
    for here, proc, sig in started:
        _out, err = proc.communicate(timeout=30)
        assert b"Traceback" not in err and b"Exception Group" not in err, err[-600:]
        assert proc.returncode == 130 and err.startswith(b"majordomus: interrupted; the write under way"), err
        listed = run_here("checkpoint", "--list", cwd=here).stdout
        doctor = run_here("doctor", "--strict", cwd=here)
        assert len(listed.splitlines()) == 1 and doctor.returncode == 0, (sig, listed, doctor.stdout[-300:])


def test_a_stop_signal_that_waited_for_a_write_that_failed_says_what_failed(repo: Path, tmp_path: Path) -> None:
    """The write a stop signal waited for failed (the held fsync reports EIO): the command says what it
    would have said without the signal — what is stored, and to run it again — never that the write landed
    whole: exit 12 for a Ctrl-C, the message and then the signal's own end for TERM. The retry completes it."""
    strace = require_tool("strace")
    cases = [(n, sig) for n in (2, 5) for sig in ("INT", "TERM")]
    started = []
    for n, sig in cases:
        here = tmp_path / f"fail-{n}-{sig}"
        shutil.copytree(repo, here, symlinks=True)
        start_task_at(here)
        assert run_here("checkpoint", cwd=here, input="a first note\n").returncode == 0
        (tmp_path / f"in-{n}-{sig}").write_bytes(b"a note whose disk failed\n")
        with open(tmp_path / f"in-{n}-{sig}", "rb") as given:
            started.append(subprocess.Popen(
                [strace, "-f", "-qq", "-o", os.devnull, "-e", "trace=fsync", "-e",
                 f"inject=fsync:delay_enter={HOLD_US}:error=EIO:when={n}", str(MAJORDOMUS), "checkpoint"],
                cwd=here, stdin=given, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    missed = _signal_each_inside_its_held_fsync([(proc, SIGNALS[sig]) for proc, (_n, sig) in zip(started, cases)])
    assert not missed, [cases[m] for m in missed]
    for proc, (n, sig) in zip(started, cases, strict=True):
        here = tmp_path / f"fail-{n}-{sig}"
        _out, err = proc.communicate(timeout=30)
        assert proc.returncode == (12 if sig == "INT" else -signal.SIGTERM), (n, sig, proc.returncode, err)
        assert err.startswith(b"majordomus: ") and b"\nhint: " in err and b"landed whole" not in err, (n, sig, err)
        assert b"Input/output error" in err, err
        again = run_here("checkpoint", cwd=here, input="a note whose disk failed\n")
        assert again.returncode == 0, again.stderr
        assert run_here("doctor", "--strict", cwd=here).returncode == 0
        assert b"a note whose disk failed" in run_here("checkpoint", "--show", cwd=here).stdout


def test_ctrl_c_ends_the_mcp_server_while_its_client_keeps_stdin_open(repo: Path) -> None:
    """The server's stdin is read by a thread of its own that a Ctrl-C does not wait for: with the client
    still holding the pipe open, the server ends at once (exit 130, one line), not when stdin closes."""
    start_task_at(repo)
    proc = subprocess.Popen([str(MAJORDOMUS), "mcp"], cwd=repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, restore_signals=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as a terminal's
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(_rpc({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
    proc.stdin.write(_rpc({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    proc.stdin.flush()
    assert b'"id":1' in proc.stdout.readline()
    time.sleep(0.2)  # idle, waiting for the client's next line
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)  # a loaded machine is slow, a server that waits for stdin never ends
    finally:
        proc.stdin.close()
    err = proc.stderr.read() if proc.stderr is not None else b""
    assert proc.returncode == 130 and err == b"majordomus: interrupted\n", (proc.returncode, err[-300:])


def _open_files(pid: int) -> set[str]:
    found = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            found.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("args, stdin", [(("context", "pin", "decision", "--", "never pinned"), b""),
                                         (("handoff",), HANDOFF_BODY.encode())])
def test_a_stop_signal_while_waiting_for_the_state_lock_ends_the_command_with_nothing_written(repo, tmp_path,
                                                                                             args, stdin):
    """A change of several steps holds the stop signals back from its first write on, not while it waits for
    the lock another command holds: a Ctrl-C then ends it at once (exit 130, "interrupted", no word of a
    write), and nothing is written once the lock is free. (Held back, it waited for the holder, wrote
    anyway and said the write under way had landed.) The holder holds on longer than a change waits
    (`locked.WAIT`), so that only the signal can end it in time."""
    start_task_at(repo)
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR); "
                               "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
                               str(state_dir(repo) / ".lock")], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        before = snapshot(repo)
        (tmp_path / "stdin").write_bytes(stdin)
        with open(tmp_path / "stdin", "rb") as given:
            proc = subprocess.Popen([str(MAJORDOMUS), *args], cwd=repo, stdin=given, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        lock, deadline = str(state_dir(repo) / ".lock"), time.monotonic() + 30
        while lock not in _open_files(proc.pid):  # it has the lock file open: it waits for the lock
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else b""
            time.sleep(0.01)
        time.sleep(0.1)  # past its first try
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=20)  # the holder holds on for 60 s: waiting for it fails here
    finally:
        holder.kill()
        holder.wait()
    assert proc.returncode == 130 and err.strip() == b"majordomus: interrupted", err
    assert snapshot(repo) == before
