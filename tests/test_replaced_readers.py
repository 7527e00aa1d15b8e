"""Nothing majordomus did not write is shown as if it did (design §2a, §9, §17): a run record, checkpoint or
handoff whose bytes no longer match the digest in its name (replaced), or that is deleted, is never read as
what it was — not by `brief`, `check`, `run --list`, `log`, the MCP `log` tool, the Python API nor a later
`handoff`. An intact record is shown as before."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from helpers import HANDOFF_BODY, records_in, snapshot, state_dir

from majordomus import api, history
from majordomus.errors import MajordomusError
from majordomus.lite import safeio
from majordomus.store import records
from majordomus.workspace import Workspace


@pytest.fixture
def task(cli: Any) -> str:
    assert cli("task", "start", "t1").exit_code == 0
    assert cli("checkpoint", input="fresh note\n").exit_code == 0  # `check` asks for a fresh checkpoint
    return "t1"


def failed_run(cli: Any, repo: Path) -> Path:
    """`run --label tests` of a command that exits 3; the path of its record."""
    assert cli("run", "--label", "tests", "--", "sh", "-c", "exit 3").exit_code == 3
    [path] = [p for p in (state_dir(repo) / "runs").rglob("*.md")]
    return path


def edit(path: Path, old: bytes, new: bytes) -> None:
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new))


def rel(repo: Path, path: Path) -> str:
    return str(path.relative_to(state_dir(repo)))


def check(cli: Any) -> Any:
    return cli("check")


# ---------------------------------------------------------------- run records


def test_an_intact_failed_run_is_briefed_listed_and_checked_as_before(cli: Any, repo: Path, task: str) -> None:
    failed_run(cli, repo)
    text = cli("brief").stdout
    assert "MISSING RECORDS" not in text and "- `tests` failed (exit 3)" in text and "(complete:" in text
    listed = cli("run", "--list").stdout
    assert "tests  failed (exit 3)" in listed and "replaced" not in listed
    assert check(cli).exit_code == 0


def test_an_edited_exit_status_is_a_replaced_run_record_never_a_pass(cli: Any, repo: Path, task: str) -> None:
    path = failed_run(cli, repo)
    edit(path, b"exit_status: 3", b"exit_status: 0")
    name = rel(repo, path)
    before = snapshot(repo)
    text = cli("brief").stdout
    lines = text.splitlines()
    assert lines[2].startswith(f"MISSING RECORDS: {name} (replaced)"), text
    assert "run the command again (`majordomus run --label L -- CMD`)" in lines[2]
    assert "passed" not in text and "# Latest runs" not in text
    assert "(complete:" not in text and "(incomplete: a record is missing (named at the top)" in text
    assert json.loads(cli("brief", "--json").stdout)["missing"] == [{"path": name, "why": "replaced"}]
    listed = cli("run", "--list")
    assert listed.exit_code == 0 and "passed" not in listed.stdout
    assert "(replaced: its content no longer matches the digest in its name, so it is not shown" in listed.stdout
    [entry] = json.loads(cli("run", "--list", "--json").stdout)
    assert entry["error"].startswith("replaced") and "exit_status" not in entry
    assert "replaced" in json.loads(cli("run", "--list", "--task", "t1", "--json").stdout)[0]["error"]
    done = check(cli)
    assert done.exit_code == 1 and done.stdout == ""
    assert done.stderr.startswith("majordomus: task `t1` names records that are missing, unreadable or replaced: "
                                  f"{name} (replaced)")
    assert "run the command again with its label" in done.stderr
    as_json = json.loads(cli("check", "--json").stdout)
    assert as_json["fresh"] is False and f"{name} (replaced)" in as_json["problem"]
    assert snapshot(repo) == before  # brief, run --list and check write nothing


def test_a_deleted_run_record_the_task_names_is_named_and_never_complete(cli: Any, repo: Path, task: str) -> None:
    path = failed_run(cli, repo)
    os.unlink(path)
    name = rel(repo, path)
    text = cli("brief").stdout
    assert text.splitlines()[2].startswith(f"MISSING RECORDS: {name} (deleted)"), text
    assert "(complete:" not in text and "# Latest runs" not in text
    done = check(cli)
    assert done.exit_code == 1 and f"{name} (deleted)" in done.stderr
    assert cli("run", "--list").stdout == ""


@pytest.mark.parametrize("lose", ["replace", "delete"])
def test_a_new_run_of_the_same_label_takes_the_lost_ones_place(cli: Any, repo: Path, task: str, lose: str) -> None:
    path = failed_run(cli, repo)
    if lose == "replace":
        edit(path, b"exit_status: 3", b"exit_status: 0")
    else:
        os.unlink(path)
    assert cli("run", "--label", "other", "--", "true").exit_code == 0  # another label: still named
    assert check(cli).exit_code == 1
    assert cli("run", "--label", "tests", "--", "sh", "-c", "exit 4").exit_code == 4
    assert check(cli).exit_code == 0
    text = cli("brief").stdout
    assert "MISSING RECORDS" not in text and "- `tests` failed (exit 4)" in text and "(complete:" in text


# ---------------------------------------------------------------- log, the MCP log tool


def test_log_marks_a_replaced_record_and_never_shows_its_text(cli: Any, repo: Path, task: str) -> None:
    done = cli("checkpoint", input="n2 intact\n")
    path = repo / done.stdout.strip()
    run_path = failed_run(cli, repo)
    shown = cli("log").stdout
    assert "n2 intact" in shown and "tests failed (exit 3)" in shown and "replaced" not in shown
    edit(path, b"n2 intact", b"EVIL")
    edit(run_path, b"exit_status: 3", b"exit_status: 0")
    done = cli("log")
    assert done.exit_code == 0 and "EVIL" not in done.stdout and "passed" not in done.stdout
    assert done.stdout.count("(replaced: not shown)") == 2, done.stdout
    assert "fresh note" in done.stdout  # the intact one, as before
    entries = json.loads(cli("log", "--json").stdout)
    assert [e["summary"] for e in entries if e["kind"] in ("checkpoint", "run")][:2] == ["(replaced: not shown)"] * 2
    tool = history.tool(Workspace.open(str(repo)))  # what the MCP `log` tool returns
    assert "EVIL" not in json.dumps(tool)
    assert sum(e["summary"] == "(replaced: not shown)" for e in tool["entries"]) == 2
    assert any("was replaced after it was written" in note for note in tool["notes"])


# ---------------------------------------------------------------- the Python API


def test_the_api_raises_on_a_replaced_record_and_reads_intact_ones(cli: Any, repo: Path, task: str) -> None:
    done = cli("checkpoint", input="n2 intact\n")
    path = repo / done.stdout.strip()
    run_path = failed_run(cli, repo)
    ws = api.open(repo)
    assert [p.content for p in ws.checkpoints()] == ["n2 intact", "fresh note"]
    assert ws.runs()[0]["exit_status"] == 3
    edit(path, b"n2 intact", b"EVIL")
    for read in (ws.checkpoints, lambda: ws.checkpoints(task="t1"), lambda: ws.checkpoints(task="other")):
        with pytest.raises(safeio.UnsafeFile) as raised:
            read()
        assert raised.value.code == 12 and str(path) in raised.value.message
        assert "no longer matches the digest in its name" in raised.value.message
    edit(run_path, b"exit_status: 3", b"exit_status: 0")
    with pytest.raises(MajordomusError, match="no longer matches the digest"):
        ws.runs()
    assert ws.handoffs() == []  # another directory, untouched: read as before


# ---------------------------------------------------------------- a later handoff


def test_a_handoff_says_which_checkpoints_it_left_out_and_why(cli: Any, repo: Path, task: str) -> None:
    replaced = repo / cli("checkpoint", input="to be replaced\n").stdout.strip()
    deleted = repo / cli("checkpoint", input="to be deleted\n").stdout.strip()
    kept = repo / cli("checkpoint", input="kept intact\n").stdout.strip()
    edit(replaced, b"to be replaced", b"EVIL")
    os.unlink(deleted)
    done = cli("handoff", input=HANDOFF_BODY)
    assert done.exit_code == 0, done.stderr
    assert (f"note: the handoff's `checkpoints:` leaves out {rel(repo, replaced)} (replaced), "
            f"{rel(repo, deleted)} (deleted):") in done.stderr
    [handoff] = records_in(repo, "handoffs")
    meta, _body = records.split((state_dir(repo) / "handoffs" / handoff).read_bytes())
    assert rel(repo, kept) in meta["checkpoints"]
    assert rel(repo, replaced) not in meta["checkpoints"] and rel(repo, deleted) not in meta["checkpoints"]


def test_a_handoff_with_every_checkpoint_intact_says_nothing_of_leaving_out(cli: Any, repo: Path, task: str) -> None:
    done = cli("handoff", input=HANDOFF_BODY)
    assert done.exit_code == 0 and "leaves out" not in done.stderr


def test_a_run_record_another_machine_never_pushed_is_not_shared_not_deleted(cli: Any, repo: Path, remote: Path,
                                                                             tmp_path: Path) -> None:
    """`sync push` without `--checkpoints` sends the task record, which points at a run record that did not
    come: not shared here, never "deleted", and `check` finds nothing missing here."""
    from helpers.sync import clone

    b = clone(tmp_path, remote, "b")
    assert cli("task", "start", "t1").exit_code == 0
    assert cli("checkpoint", input="a note\n").exit_code == 0
    path = failed_run(cli, repo)
    assert cli("sync", "push").exit_code == 0 and cli("sync", "pull", cwd=b).exit_code == 0
    text = cli("brief", "t1", cwd=b).stdout
    shared = text.splitlines()[3]
    assert shared.startswith("NOT SHARED HERE: ") and f"{rel(repo, path)} — named by `t1`'s records" in shared
    assert "MISSING RECORDS" not in text and "deleted" not in text
    assert "(complete:" not in text
    assert cli("task", "resume", "t1", "--force", cwd=b).exit_code == 0
    assert cli("checkpoint", input="on b\n", cwd=b).exit_code == 0
    assert cli("check", cwd=b).exit_code == 0


def test_a_run_deleted_here_is_deleted_even_past_the_ledgers_tail_on_a_task_a_pull_brought(
        cli: Any, repo: Path, remote: Path, tmp_path: Path, monkeypatch: Any) -> None:
    """One rule says "not shared here" for every kind of record: only when the ledger's walk reached the
    task's start (or its first arrival) and saw no event of the record. A run written here whose event is
    past the bounded tail, on a task a pull once updated, is deleted (and `check` says so), not "not shared"."""
    from helpers.sync import clone

    from majordomus.store import reading

    b = clone(tmp_path, remote, "b")
    assert cli("task", "start", "t1").exit_code == 0
    path = failed_run(cli, repo)
    for n in range(6):
        assert cli("checkpoint", input=f"note {n}\n").exit_code == 0
    assert cli("sync", "push").exit_code == 0 and cli("sync", "pull", cwd=b).exit_code == 0
    assert cli("task", "resume", "t1", "--force", cwd=b).exit_code == 0
    assert cli("checkpoint", input="on b\n", cwd=b).exit_code == 0 and cli("sync", "push", cwd=b).exit_code == 0
    assert cli("sync", "pull").exit_code == 0  # a newer version of the task, from b: the tail's newest events
    assert cli("task", "resume", "t1", "--force").exit_code == 0
    os.unlink(path)
    for lookback in (8, 4096):  # past the tail, and the edge: the walk reaches the task's start
        monkeypatch.setattr(reading, "LEDGER_LOOKBACK", lookback)
        [named] = [line for line in cli("brief", "t1").stdout.splitlines() if rel(repo, path) in line]
        assert named.startswith("MISSING RECORDS: ") and "deleted" in named, (lookback, named)
        assert check(cli).exit_code == 1
