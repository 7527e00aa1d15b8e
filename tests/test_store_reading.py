"""Reading stored records back (majordomus/store/reading.py): no reader goes through a link where a state
directory belongs, and none serves a record over the cap its writer enforces (design §2a)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from helpers import FIXTURES, HANDOFF_BODY, ledger_bytes, run_here, snapshot, state_dir

PAYLOAD = (FIXTURES / "payloads" / "claude-session-start-startup.json").read_bytes()
READERS = (("brief",), ("checkpoint", "--show"), ("checkpoint", "--show", "--json"), ("checkpoint", "--list"),
           ("handoff", "--show", "t1"), ("search", "outside"), ("log",), ("run", "--list"))


def _state(repo: Path) -> None:
    for args, stdin in ((("task", "start", "t1", "--title", "t1"), b""), (("checkpoint",), b"body from outside\n"),
                        (("context", "pin", "decision", "--", "keep outside"), b""),
                        (("run", "--label", "unit", "--", "true"), b""), (("handoff",), HANDOFF_BODY.encode()),
                        (("task", "resume", "t1"), b""), (("checkpoint",), b"after the handoff, outside\n")):
        assert run_here(*args, cwd=repo, input=stdin).returncode == 0, args


def _link(repo: Path, tmp_path: Path, rel: str) -> Path:
    """`rel` (a directory of the state) moved outside whole, a link to it left where it was."""
    path = state_dir(repo) / rel
    target = tmp_path / "outside" / rel.replace("/", "-")
    shutil.move(str(path), target)
    path.symlink_to(target, target_is_directory=True)
    return target


@pytest.mark.parametrize("rel, only_there", [("checkpoints", b"outside"), ("handoffs", b"half done"),
                                             ("runs", b"`unit`"), ("context", b"keep outside"),
                                             ("context/t1", b"keep outside")])
def test_no_reader_goes_through_a_linked_state_directory(repo: Path, tmp_path: Path, rel: str,
                                                         only_there: bytes) -> None:
    _state(repo)
    target = _link(repo, tmp_path, rel)
    before, inside, ledger = snapshot(target), snapshot(repo), ledger_bytes(repo)
    name = rel.rsplit("/", 1)[-1]
    refused = 0
    for args in READERS:
        result = run_here(*args, cwd=repo)
        assert result.returncode in (0, 1, 12), (args, result.stderr)
        assert only_there not in result.stdout, (args, result.stdout)
        if result.returncode == 12:
            refused += 1
            said = result.stderr.decode()
            assert said.startswith("majordomus: ") and f"{name} is a symbolic link" in said, (args, said)
    assert refused >= 1  # brief reads every one of these directories
    hook = run_here("hook", "session-start", cwd=repo, input=PAYLOAD)
    context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert hook.returncode == 0 and only_there.decode() not in context
    line = next(line for line in context.splitlines() if "could not be built" in line)
    assert f"{name} is a symbolic link" in line
    assert snapshot(target) == before and ledger_bytes(repo).startswith(ledger)
    assert {k: v for k, v in snapshot(repo).items() if "ledger" not in k and "cache" not in k} == \
        {k: v for k, v in inside.items() if "ledger" not in k and "cache" not in k}


def test_the_same_state_with_real_directories_is_read(repo: Path) -> None:
    """The edge below: the same commands on the real directories find what the links hid."""
    _state(repo)
    assert b"after the handoff, outside" in run_here("checkpoint", "--show", cwd=repo).stdout
    assert b"keep outside" in run_here("search", "outside", cwd=repo).stdout
    brief = run_here("brief", cwd=repo)
    assert brief.returncode == 0 and b"half done" in brief.stdout and b"`unit`" in brief.stdout


def _oversized(repo: Path, lines: int) -> str:
    """The active task's checkpoint replaced by one whose body has `lines` lines of 100 bytes, named with its
    correct digest and pointed at by the task record: only its size says majordomus did not write it."""
    written = run_here("checkpoint", cwd=repo, input=b"small\n").stdout.decode().strip()
    old = repo / written
    text = old.read_text()
    front = text.split("---\n")[1]
    data = ("---\n" + front + "---\n" + "".join(f"BIGLINE {i:04} " + "x" * 87 + "\n" for i in range(lines))).encode()
    name = re.sub(r"--[0-9a-f]{16}\.md$", f"--{hashlib.sha256(data).hexdigest()[:16]}.md", old.name)
    (old.parent / name).write_bytes(data)
    os.chmod(old.parent / name, 0o600)
    old.unlink()
    task = state_dir(repo) / "tasks" / "b.yaml"
    task.write_text(task.read_text().replace(old.name, name))
    return name


@pytest.mark.parametrize("lines, said", [
    (40, None),  # the edge: 40 lines of 100 bytes, what the writer lets through
    (41, "holds a body of 41 lines, over the 40 a record of its kind may hold"),
    (800, "holds a body of 80799 bytes, over the 16384 a record of its kind may hold"),
])
def test_a_record_over_its_cap_is_served_by_no_reader_and_failed_by_doctor(repo: Path, lines: int,
                                                                          said: str | None) -> None:
    run_here("task", "start", "b", "--title", "b", cwd=repo)
    name = _oversized(repo, lines)
    before, ledger = snapshot(repo), ledger_bytes(repo)
    show = run_here("checkpoint", "--show", cwd=repo)
    shown_json = run_here("checkpoint", "--show", "--json", cwd=repo)
    listed = json.loads(run_here("checkpoint", "--list", "--json", cwd=repo).stdout)
    search = run_here("search", "BIGLINE", cwd=repo)
    brief = run_here("brief", cwd=repo)
    doctor = json.loads(run_here("doctor", "--json", cwd=repo).stdout)
    oversize = [f for f in doctor["findings"] if f["code"] == "record.oversize"]
    if said is None:
        assert show.returncode == 0 and show.stdout.count(b"BIGLINE") == 40
        assert shown_json.returncode == 0 and "error" not in listed[0]
        assert search.stdout.count(b"BIGLINE") == 1 and b"BIGLINE" in brief.stdout
        assert not oversize
        return
    for result in (show, shown_json):
        assert result.returncode == 12 and result.stdout == b"" and said in result.stderr.decode(), result.stderr
    assert listed[0]["name"] == name and said in listed[0]["error"]
    assert search.returncode == 1 and b"BIGLINE" not in search.stdout and said.encode() in search.stderr
    assert b"BIGLINE" not in brief.stdout and f"{name} (unreadable)".encode() in brief.stdout
    assert oversize and said in oversize[0]["message"] and name in oversize[0]["message"]
    assert snapshot(repo) == before and ledger_bytes(repo) == ledger  # the readers wrote nothing
