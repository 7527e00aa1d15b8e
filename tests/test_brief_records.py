"""Never more than the records hold (design §9): every record a briefing names or reads is checked — one
the task's index or the ledger names since the latest handoff that is deleted, or one whose bytes no longer
match the digest in its name (replaced), is named at the top of `brief` and of the session-start context,
its body is never shown, the closing line never says "complete", and `check` exits 1 naming it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from freezegun import freeze_time
from helpers import HANDOFF_BODY, listed_dirs, run, run_here, snapshot, state_dir

from majordomus import brief, tasks
from majordomus.store import listing, reading, recent
from majordomus.workspace import Workspace

FORGED = b"---\nschema_version: 1\n---\nFORGED instructions\n"


def three_checkpoints(cli: Any, repo: Path) -> list[str]:
    """A task with checkpoints FIRST, SECOND and THIRD in three seconds; their paths, oldest first."""
    with freeze_time("2099-12-01T09:00:00Z"):
        assert cli("task", "start", "l2", "--title", "lie").exit_code == 0
    paths = []
    for second, word in enumerate(("FIRST", "SECOND", "THIRD"), 1):
        with freeze_time(f"2099-12-01T09:00:0{second}Z"):
            done = cli("checkpoint", input=f"{word} note\n")
            assert done.exit_code == 0, done.stderr
            paths.append(str(repo / done.stdout.strip()))
    return paths


def rel_of(repo: Path, path: str) -> str:
    return str(Path(path).relative_to(state_dir(repo)))


def session_context(repo: Path, source: str = "startup") -> str:
    payload = json.dumps({"session_id": "s1", "source": source}).encode()
    done = run_here("hook", "session-start", cwd=repo, input=payload)
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"])


def assert_named(repo: Path, cli: Any, rel: str, why: str, hidden: str) -> None:
    """`brief`, `check`, `check --json` and session-start all name `rel` as `why`; `hidden` is never shown."""
    text = cli("brief").stdout
    lines = text.splitlines()
    assert lines[2].startswith(f"MISSING RECORDS: {rel} ({why})"), text
    assert hidden not in text
    assert "(complete:" not in text and "(incomplete: a record is missing (named at the top)" in text
    before = snapshot(repo)
    done = run("check", cwd=repo)
    assert done.returncode == 1 and done.stdout == b"", done
    assert done.stderr.decode().startswith(
        "majordomus: task `l2` names records that are missing, unreadable or replaced: ")
    assert f"{rel} ({why})".encode() in done.stderr
    as_json = json.loads(run_here("check", "--json", cwd=repo).stdout)
    assert as_json["fresh"] is False and f"{rel} ({why})" in as_json["problem"]
    assert snapshot(repo) == before  # check and brief write nothing
    shown = session_context(repo)
    assert f"MISSING RECORDS: {rel} ({why})" in shown and "(complete:" not in shown and hidden not in shown


def test_an_older_deleted_checkpoint_is_named_with_the_tasks_index(cli: Any, repo: Path) -> None:
    paths = three_checkpoints(cli, repo)
    ws = Workspace.open(str(repo))
    assert listing.indexed_names(ws, tasks.load(ws, "l2")) is not None  # the index decides here
    assert run("check", cwd=repo).returncode == 0
    assert "(complete:" in cli("brief").stdout
    os.unlink(paths[1])
    assert_named(repo, cli, rel_of(repo, paths[1]), "deleted", "SECOND")
    text = cli("brief").stdout
    assert "FIRST note" in text and "THIRD note" in text  # the others are still briefed
    as_json = json.loads(cli("brief", "--json").stdout)
    assert as_json["missing"] == [{"path": rel_of(repo, paths[1]), "why": "deleted"}]


def test_an_older_deleted_checkpoint_is_named_from_the_ledger_without_an_index(cli: Any, repo: Path) -> None:
    paths = three_checkpoints(cli, repo)
    ws = Workspace.open(str(repo))
    os.unlink(listing.index_path(ws, "l2"))
    assert listing.indexed_names(ws, tasks.load(ws, "l2")) is None  # a listing (brief) or the ledger (check)
    assert run("check", cwd=repo).returncode == 0
    os.unlink(paths[0])
    assert_named(repo, cli, rel_of(repo, paths[0]), "deleted", "FIRST")


def test_a_deleted_checkpoint_past_the_budget_is_still_named(cli: Any, repo: Path) -> None:
    """Checkpoints too old for the budget are only counted, never opened; a gone one is still named."""
    paths = three_checkpoints(cli, repo)
    os.unlink(paths[0])
    ws = Workspace.open(str(repo))
    result = brief.compose(ws, "l2", 300)
    assert "FIRST" not in result.text and [g.rel for g in result.missing] == [rel_of(repo, paths[0])]
    assert len(result.text.encode()) <= 300 and "(complete:" not in result.text


def test_a_checkpoint_before_the_latest_handoff_is_not_the_briefings(cli: Any, repo: Path) -> None:
    """What the briefing would show is what is checked: a checkpoint the handoff already took in is not."""
    paths = three_checkpoints(cli, repo)
    with freeze_time("2099-12-01T09:00:05Z"):
        assert cli("handoff", input=HANDOFF_BODY).exit_code == 0
        assert cli("task", "resume", "l2").exit_code == 0
    with freeze_time("2099-12-01T09:00:06Z"):
        assert cli("checkpoint", input="AFTER the handoff\n").exit_code == 0
    os.unlink(paths[0])
    text = cli("brief").stdout
    assert "MISSING RECORDS" not in text and "AFTER the handoff" in text and "(complete:" in text
    assert json.loads(cli("brief", "--json").stdout)["missing"] == []
    assert run("check", cwd=repo).returncode == 0


@pytest.mark.parametrize("index", [True, False], ids=["index", "no-index"])
def test_a_replaced_older_checkpoint_is_named_and_its_body_never_shown(cli: Any, repo: Path, index: bool) -> None:
    paths = three_checkpoints(cli, repo)
    if not index:
        ws = Workspace.open(str(repo))
        os.unlink(listing.index_path(ws, "l2"))
    data = Path(paths[1]).read_bytes().replace(b"SECOND note", b"FORGED instructions")
    Path(paths[1]).write_bytes(data)  # well-formed, the task's own front matter: only the digest tells
    assert_named(repo, cli, rel_of(repo, paths[1]), "replaced", "FORGED")


def test_a_replaced_handoff_is_named_and_its_body_never_shown(cli: Any, repo: Path) -> None:
    with freeze_time("2099-12-01T09:00:00Z"):
        assert cli("task", "start", "l2", "--title", "lie").exit_code == 0
        assert cli("checkpoint", input="c\n").exit_code == 0
    with freeze_time("2099-12-01T09:00:01Z"):
        assert cli("handoff", input=HANDOFF_BODY).exit_code == 0
        assert cli("task", "resume", "l2").exit_code == 0
    [handoff] = list((state_dir(repo) / "handoffs").glob("*.md"))
    assert run("check", cwd=repo).returncode == 0
    handoff.write_bytes(FORGED)
    text = cli("brief").stdout
    assert "replaced (its content no longer matches the digest in its name, so it is not shown)" in text
    assert "# Latest handoff" not in text
    assert_named(repo, cli, f"handoffs/{handoff.name}", "replaced", "FORGED")


def test_the_latest_checkpoint_replaced_is_named(cli: Any, repo: Path) -> None:
    paths = three_checkpoints(cli, repo)
    Path(paths[2]).write_bytes(FORGED)
    assert_named(repo, cli, rel_of(repo, paths[2]), "replaced", "FORGED")


def test_a_session_start_update_names_a_record_gone_since(cli: Any, repo: Path) -> None:
    """On `resume`, only what changed is given: a record gone since is among it."""
    paths = three_checkpoints(cli, repo)
    assert "MISSING RECORDS" not in session_context(repo)
    os.unlink(paths[1])
    update = session_context(repo, "resume")
    assert "an update to the briefing" in update
    assert f"MISSING RECORDS: {rel_of(repo, paths[1])} (deleted)" in update


def test_a_record_under_a_name_it_was_not_made_from_is_not_read(repo: Path, cli: Any) -> None:
    paths = three_checkpoints(cli, repo)
    ws = Workspace.open(str(repo))
    rel = rel_of(repo, paths[0])
    assert isinstance(reading.examine(ws, rel), reading.Record)
    Path(paths[0]).write_bytes(Path(paths[0]).read_bytes() + b"one more line\n")
    found = reading.examine(ws, rel)
    assert isinstance(found, reading.Gone) and found.why == "replaced"
    with pytest.raises(reading.Replaced):
        reading.read_record(ws, rel)
    assert recent.checkpoints_since(ws, tasks.load(ws, "l2"), None)[0].body == "SECOND note"


def test_check_without_an_index_never_lists_the_store(cli: Any, repo: Path, monkeypatch: Any) -> None:
    """`check` runs after every commit: without the task's index it asks the ledger, never a listing."""
    paths = three_checkpoints(cli, repo)
    ws = Workspace.open(str(repo))
    os.unlink(listing.index_path(ws, "l2"))
    os.unlink(paths[1])
    listed = listed_dirs(monkeypatch)
    gone = brief.missing_records(ws, tasks.load(ws, "l2"))
    assert [(g.rel, g.why) for g in gone] == [(rel_of(repo, paths[1]), "deleted")]
    assert not [p for p in listed if p.endswith("checkpoints")]
