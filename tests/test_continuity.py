"""Continuity (design §8): the document, its two writers, the integrity hash, and every refusal."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from freezegun import freeze_time
from helpers import FIXTURES, HANDOFF_BODY, events_named, ledger_bytes, run_here, snapshot, state_dir

from majordomus import continuity, tasks
from majordomus.workspace import Workspace

KEYS = ["version", "task", "configHash", "runtime", "createdAt", "updatedAt", "objective",
        "decisions", "constraints", "openItems", "nextActions", "integrity"]


def doc_path(repo: Path, task: str = "t1") -> Path:
    return state_dir(repo) / "context" / task / "continuity.json"


def read_doc(repo: Path, task: str = "t1") -> dict[str, Any]:
    return json.loads(doc_path(repo, task).read_text(encoding="utf-8"))


@freeze_time("2026-09-03T19:45:00Z")
def test_task_start_seeds_the_document_exactly_as_specified(cli: Any, repo: Path) -> None:
    assert cli("task", "start", "t1", "--objective", "Make the login callback work").exit_code == 0
    doc = read_doc(repo)
    assert list(doc) == KEYS
    assert doc["version"] == 1 and doc["task"] == "t1" and doc["runtime"] is None
    assert doc["createdAt"] == doc["updatedAt"] == "2026-09-03T19:45:00Z"
    assert doc["objective"] == "Make the login callback work"
    assert all(doc[k] == [] for k in ("decisions", "constraints", "openItems", "nextActions"))
    assert doc["integrity"]["sha256"] == continuity.digest(doc)
    assert len(doc["configHash"]) == 64
    mode = os.stat(doc_path(repo)).st_mode & 0o777
    assert mode == 0o600 and os.stat(doc_path(repo).parent).st_mode & 0o777 == 0o700
    rendered = (doc_path(repo).parent / "continuity.md").read_text()
    assert rendered == "# Continuity: t1\n\n## Objective\n> Make the login callback work\n"


def test_pins_are_recorded_with_id_source_and_time(cli: Any, repo: Path) -> None:
    cli("task", "start", "t1")
    with freeze_time("2026-09-03T20:00:00Z"):
        result = cli("context", "pin", "decision", "--", "Normalise at the edge, not in the comparison.")
    assert result.exit_code == 0, result.output
    pin_id = result.stdout.strip()
    doc = read_doc(repo)
    assert doc["decisions"] == [{"id": pin_id, "text": "Normalise at the edge, not in the comparison.",
                                 "source": "agent", "createdAt": "2026-09-03T20:00:00Z"}]
    assert doc["updatedAt"] == "2026-09-03T20:00:00Z"
    assert continuity.validate(Workspace.open(str(repo)), "t1") == []
    cli("context", "pin", "--source", "principal", "open-item", "--", "Uppercase", "hosts?")
    assert read_doc(repo)["openItems"][0]["source"] == "principal"
    assert read_doc(repo)["openItems"][0]["text"] == "Uppercase hosts?"
    pins = events_named(repo, "context.pin")
    assert [e["kind"] for e in pins] == ["decision", "open-item"]
    assert pins[0]["pin"] == pin_id and pins[-1]["integrity"] == read_doc(repo)["integrity"]["sha256"]
    # An unpinned sentence must not live on in the append-only ledger.
    assert "Normalise" not in (state_dir(repo) / "ledger.jsonl").read_text()


def test_control_characters_collapse_to_one_space(cli: Any, repo: Path) -> None:
    cli("task", "start", "t1")
    assert cli("context", "pin", "constraint", "--", "Only\tsrc/\n\x1b[31mchanges\x00 here ").exit_code == 0
    assert read_doc(repo)["constraints"][0]["text"] == "Only src/ [31mchanges here"


def test_unpin_by_full_id_and_by_prefix(cli: Any, repo: Path) -> None:
    cli("task", "start", "t1")
    first = cli("context", "pin", "next-action", "--", "Write the test.").stdout.strip()
    second = cli("context", "pin", "next-action", "--", "Fix normalise().").stdout.strip()
    result = cli("context", "unpin", first)
    assert result.exit_code == 0 and result.stdout == f"unpinned next-action {first}\n"
    assert cli("context", "unpin", second[:8]).exit_code == 0
    assert read_doc(repo)["nextActions"] == []
    assert continuity.validate(Workspace.open(str(repo)), "t1") == []
    assert len(events_named(repo, "context.unpin")) == 2


def test_from_copies_the_pins_of_another_task(cli: Any, repo: Path) -> None:
    cli("task", "start", "old", "--objective", "Old objective")
    cli("context", "pin", "decision", "--", "Keep the API.")
    cli("context", "pin", "constraint", "--", "No new dependencies.")
    assert cli("task", "start", "new", "--from", "old", "--objective", "New objective").exit_code == 0
    old, new = read_doc(repo, "old"), read_doc(repo, "new")
    assert new["objective"] == "New objective"
    assert new["decisions"] == old["decisions"] and new["constraints"] == old["constraints"]
    assert continuity.validate(Workspace.open(str(repo)), "new") == []


def test_interactive_sentinel_renders_no_objective(cli: Any, repo: Path) -> None:
    cli("task", "start", "t1")
    assert read_doc(repo)["objective"] == tasks.INTERACTIVE_OBJECTIVE
    assert cli("context", "show").stdout == "# Continuity: t1\n"
    cli("context", "pin", "open-item", "--", "Which IdP?")
    shown = cli("context", "show").stdout
    assert shown == "# Continuity: t1\n\n## Open items\n- Which IdP?\n"
    assert (doc_path(repo).parent / "continuity.md").read_text() + "" == shown


def test_render_keeps_the_fixed_section_order_and_omits_empty_ones(cli: Any, repo: Path) -> None:
    cli("task", "start", "t1", "--objective", "Obj")
    for kind, text in (("next-action", "N1"), ("decision", "D1"), ("open-item", "O1"), ("decision", "D2")):
        cli("context", "pin", kind, "--", text)
    assert cli("context", "show").stdout == (
        "# Continuity: t1\n\n## Objective\n> Obj\n\n## Decisions\n- D1\n- D2\n\n## Open items\n- O1\n"
        "\n## Next actions\n- N1\n"
    )


# ---------------------------------------------------------------- the canonical hash


def test_hash_is_stable_under_key_reordering_and_reindentation(cli: Any, repo: Path) -> None:
    cli("task", "start", "t1", "--objective", "Ünïcode objective")
    cli("context", "pin", "decision", "--", "Keep 漢字 intact.")
    doc = read_doc(repo)

    def reorder(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: reorder(value[k]) for k in reversed(list(value))}
        if isinstance(value, list):
            return [reorder(v) for v in value]
        return value

    doc_path(repo).write_text(json.dumps(reorder(doc), indent=7, ensure_ascii=True), encoding="utf-8")
    assert continuity.validate(Workspace.open(str(repo)), "t1") == []
    doc_path(repo).write_text(json.dumps(doc, separators=(",", ":")) + "\n\n", encoding="utf-8")
    assert cli("context", "validate").exit_code == 0


@pytest.mark.parametrize("edit", [
    lambda d: d["decisions"][0].update(text=d["decisions"][0]["text"] + " "),
    lambda d: d.update(objective="Another objective"),
    lambda d: d["decisions"].clear(),
    lambda d: d.update(runtime="claude"),
    lambda d: d["decisions"][0].update(source="principal"),
    lambda d: d.update(extra=1),
])
def test_any_content_edit_is_a_finding(cli: Any, repo: Path, edit: Any) -> None:
    cli("task", "start", "t1", "--objective", "Obj")
    cli("context", "pin", "decision", "--", "Keep the API.")
    doc = read_doc(repo)
    edit(doc)
    doc_path(repo).write_text(json.dumps(doc, indent=2), encoding="utf-8")
    result = cli("context", "validate")
    assert result.exit_code == 1
    assert "integrity mismatch" in result.stdout
    as_json = json.loads(cli("context", "validate", "--json").stdout)
    assert as_json["ok"] is False and len(as_json["findings"]) == 1


def test_validate_reports_unreadable_and_malformed_files(cli: Any, repo: Path) -> None:
    cli("task", "start", "t1")
    doc_path(repo).write_text("{not json", encoding="utf-8")
    result = cli("context", "validate", "t1")
    assert result.exit_code == 1 and "not valid JSON" in result.stdout
    doc_path(repo).write_text(json.dumps({"version": 1}), encoding="utf-8")
    result = cli("context", "validate", "t1")
    assert result.exit_code == 1 and "`decisions` is missing" in result.stdout


def test_a_missing_document_is_not_a_finding(cli: Any, repo: Path) -> None:
    cli("task", "start", "t1")
    doc_path(repo).unlink()
    assert continuity.validate(Workspace.open(str(repo)), "t1") == []
    assert cli("context", "validate").exit_code == 0
    assert cli("context", "status", "--json").exit_code == 0


def test_status_counts_pins_by_kind_and_joins_the_journal(cli: Any, repo: Path, monkeypatch: Any) -> None:
    cli("task", "start", "t1", "--objective", "Obj")
    pin_id = cli("context", "pin", "decision", "--", "D1").stdout.strip()
    cli("context", "pin", "next-action", "--", "N1")
    report = json.loads(cli("context", "status", "--json").stdout)
    assert report["integrity"] == "ok" and report["objective"] is True
    assert report["counts"] == {"decisions": 1, "constraints": 0, "openItems": 0, "nextActions": 1}
    assert report["compaction"]["generation"] == 0 and report["compaction"]["pending"] == 0
    human = cli("context", "status").stdout
    assert f"  {pin_id[:8]}  D1" in human and "decisions     1" in human
    assert "compaction    generation 0, pending 0\n" in human

    # The journal written by `hook compact` is what status reports.
    for phase in ("pre", "post", "pre"):
        cli("hook", "compact", "--phase", phase, "--runtime", "claude", input='{"session_id":"s","trigger":"auto"}')
    report = json.loads(cli("context", "status", "--json").stdout)
    assert report["compaction"]["generation"] == 1 and report["compaction"]["pending"] == 1
    assert report["compaction"]["last_completed"]["trigger"] == "auto"
    assert "compaction    generation 1, pending 1, last completed " in cli("context", "status").stdout


def test_only_the_two_writers_touch_the_document(cli: Any, repo: Path) -> None:
    cli("task", "start", "t1", "--objective", "Obj")
    cli("context", "pin", "decision", "--", "D1")
    before = snapshot(doc_path(repo).parent)
    cli("checkpoint", input="a note\n")
    for args in (("context", "show"), ("context", "status"), ("context", "validate"), ("brief",),
                 ("checkpoint", "--show"), ("task", "show")):
        assert cli(*args).exit_code == 0, args
    assert cli("handoff", input=HANDOFF_BODY).exit_code == 0
    assert cli("brief", "t1").exit_code == 0
    assert snapshot(doc_path(repo).parent) == before


def test_pin_after_the_context_directory_was_removed_starts_afresh(cli: Any, repo: Path) -> None:
    cli("task", "start", "t1", "--objective", "Obj")
    cli("context", "pin", "decision", "--", "D1")
    import shutil

    shutil.rmtree(doc_path(repo).parent)
    assert cli("context", "show").stdout == "# Continuity: t1\n\n## Objective\n> Obj\n"
    assert cli("context", "pin", "decision", "--", "D2").exit_code == 0
    doc = read_doc(repo)
    assert doc["objective"] == "Obj" and [p["text"] for p in doc["decisions"]] == ["D2"]


# ---------------------------------------------------------------- refusals: exit code, message, nothing written


def _refused(cli: Any, repo: Path, args: tuple[str, ...], code: int, words: str) -> None:
    before, ledger = snapshot(repo), ledger_bytes(repo)
    result = cli(*args)
    assert result.exit_code == code, result.output
    assert words in result.stderr
    assert result.stderr.startswith("majordomus: ") and "\nhint: " in result.stderr
    assert snapshot(repo) == before and ledger_bytes(repo) == ledger


def test_refusals_write_nothing(cli: Any, repo: Path) -> None:
    cli("task", "start", "t1")
    cli("context", "pin", "decision", "--", "D1")
    _refused(cli, repo, ("context", "pin", "decision", "--", " \n\t "), 10, "the pin is empty")
    _refused(cli, repo, ("context", "pin", "decision", "--", "é" * 2049), 10, "the pin is 4098 bytes; the limit is 4096")
    _refused(cli, repo, ("context", "pin", "constraint", "--", "token ghp_" + "a" * 36), 10, "looks like it carries a secret")
    _refused(cli, repo, ("context", "pin", "constraint", "--", "-----BEGIN RSA PRIVATE KEY----- x"), 10, "secret")
    _refused(cli, repo, ("context", "unpin", "abcdef12"), 2, "no pin `abcdef12` in task `t1`")
    _refused(cli, repo, ("context", "unpin", "ab"), 2, "too short")
    _refused(cli, repo, ("context", "validate", "nope"), 2, "no task `nope`")


def test_a_pin_of_exactly_the_limit_is_accepted(cli: Any, repo: Path) -> None:
    cli("task", "start", "t1")
    assert cli("context", "pin", "decision", "--", "é" * 2048).exit_code == 0


def test_whole_document_over_the_limit_is_refused(cli: Any, repo: Path) -> None:
    (repo / ".ai").mkdir()
    (repo / ".ai" / "config.yaml").write_text("continuity:\n  max_bytes: 1500\n")
    cli("task", "start", "t1")
    for i in range(3):
        assert cli("context", "pin", "decision", "--", f"Decision number {i} " + "x" * 100).exit_code == 0
    _refused(cli, repo, ("context", "pin", "decision", "--", "y" * 300), 10, "the limit is 1500 (continuity.max_bytes)")


def test_pin_needs_an_active_task(cli: Any, repo: Path) -> None:
    before = snapshot(repo)
    result = cli("context", "pin", "decision", "--", "D1")
    assert result.exit_code == 11 and "no active task" in result.stderr
    assert snapshot(repo) == before
    cli("task", "start", "t1")
    cli("task", "done")
    _refused(cli, repo, ("context", "pin", "decision", "--", "D1"), 11, "no active task")
    _refused(cli, repo, ("context", "show"), 11, "no active task")


def test_pin_refuses_to_rehash_a_tampered_document(cli: Any, repo: Path) -> None:
    cli("task", "start", "t1", "--objective", "Obj")
    doc = read_doc(repo)
    doc["objective"] = "Forged"
    doc_path(repo).write_text(json.dumps(doc), encoding="utf-8")
    _refused(cli, repo, ("context", "pin", "decision", "--", "D1"), 12, "cannot be trusted")
    _refused(cli, repo, ("context", "show"), 12, "integrity mismatch")


def test_start_from_a_tampered_task_is_refused(cli: Any, repo: Path) -> None:
    cli("task", "start", "old", "--objective", "Obj")
    doc = read_doc(repo, "old")
    doc["objective"] = "Forged"
    doc_path(repo, "old").write_text(json.dumps(doc), encoding="utf-8")
    _refused(cli, repo, ("task", "start", "new", "--from", "old"), 10, "its pins were not copied")


def test_ambiguous_prefix_is_refused(cli: Any, repo: Path) -> None:
    cli("task", "start", "t1")
    ws = Workspace.open(str(repo))
    doc = continuity.load(ws, "t1")
    assert doc is not None
    doc["decisions"] = [{"id": f"abcd{i}000-0000-4000-8000-000000000000", "text": f"D{i}", "source": "agent",
                         "createdAt": "2026-01-01T00:00:00Z"} for i in range(2)]
    continuity._write(ws, "t1", doc)
    _refused(cli, repo, ("context", "unpin", "abcd"), 2, "names 2 pins")


def test_unknown_kind_is_a_usage_error(repo: Path) -> None:
    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    before = snapshot(repo)
    result = run_here("context", "pin", "idea", "--", "x", cwd=repo)
    assert result.returncode == 2 and b"idea" in result.stderr
    assert snapshot(repo) == before


def test_concurrent_pins_are_all_kept(repo: Path) -> None:
    import subprocess

    from helpers import MAJORDOMUS

    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    procs = [subprocess.Popen([str(MAJORDOMUS), "context", "pin", "next-action", "--", f"Step {i}."], cwd=repo,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in range(6)]
    ids = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        ids.append(out.decode().strip())
    doc = read_doc(repo)
    assert sorted(p["id"] for p in doc["nextActions"]) == sorted(ids)
    assert sorted(p["text"] for p in doc["nextActions"]) == sorted(f"Step {i}." for i in range(6))
    assert run_here("context", "validate", cwd=repo).returncode == 0
    assert run_here("ledger", "--verify", cwd=repo).returncode == 0


def test_start_with_an_objective_over_the_document_limit_is_refused(cli: Any, repo: Path) -> None:
    (repo / ".ai").mkdir()
    (repo / ".ai" / "config.yaml").write_text("continuity:\n  max_bytes: 1024\n")  # the smallest allowed
    cli("task", "start", "first")
    before = snapshot(repo)
    result = cli("task", "start", "t1", "--objective", "o" * 1024)
    assert result.exit_code == 10 and "(continuity.max_bytes); nothing was written" in result.stderr
    assert snapshot(repo) == before
    assert cli("task", "start", "t1", "--objective", "short").exit_code == 0


# ---------------------------------------------------------------- a write that did not fully land (design §10)

def _doctor_codes(repo: Path) -> list[str]:
    done = run_here("doctor", "--strict", "--json", cwd=repo)
    return [f["code"] for f in json.loads(done.stdout)["findings"] if f["level"] != "ok"]


def _ledger_write_failing(repo: Path, *args: str) -> Any:
    """The command with its ledger append failing (ENOSPC): its continuity has landed, its event has not."""
    from majordomus.store.fault import Faults

    with Faults(repo, "write", 1, only="ledger.jsonl").active() as faults:
        failed = run_here(*args, cwd=repo)
    assert faults.fired and failed.returncode == 12, failed.stderr
    return failed


def test_a_pin_whose_event_failed_is_reported_by_doctor_and_its_retry_writes_only_the_event(repo: Path) -> None:
    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    with freeze_time("2026-12-01T09:01:00Z"):
        _ledger_write_failing(repo, "context", "pin", "decision", "--", "Keep the cache.")
    [pinned] = read_doc(repo)["decisions"]
    assert events_named(repo, "context.pin") == []
    assert _doctor_codes(repo) == ["continuity.pin-no-event"]
    with freeze_time("2026-12-01T09:01:02Z"):
        again = run_here("context", "pin", "decision", "--", "Keep the cache.", cwd=repo)
    assert again.returncode == 0, again.stderr
    assert "already pinned; its missing `context.pin` ledger event is now written" in again.stderr.decode()
    assert again.stdout.decode() == pinned["id"] + "\n"
    assert read_doc(repo)["decisions"] == [pinned]  # no second pin
    assert [e["pin"] for e in events_named(repo, "context.pin")] == [pinned["id"]]
    assert _doctor_codes(repo) == []


def test_the_same_pin_again_once_its_event_landed_is_a_second_pin(repo: Path) -> None:
    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    for _ in range(2):
        assert run_here("context", "pin", "decision", "--", "Keep it.", cwd=repo).returncode == 0
    first, second = read_doc(repo)["decisions"]
    assert first["text"] == second["text"] and first["id"] != second["id"]
    assert [e["pin"] for e in events_named(repo, "context.pin")] == [first["id"], second["id"]]


def test_an_unpin_whose_event_failed_is_completed_by_its_retry(repo: Path) -> None:
    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    pin_id = run_here("context", "pin", "open-item", "--", "Ask about the limits.", cwd=repo).stdout.decode().strip()
    _ledger_write_failing(repo, "context", "unpin", pin_id)
    assert read_doc(repo)["openItems"] == [] and events_named(repo, "context.unpin") == []
    again = run_here("context", "unpin", pin_id[:8], cwd=repo)
    assert again.returncode == 0, again.stderr
    assert again.stdout.decode() == f"unpinned open-item {pin_id}\n"
    assert "already gone from the continuity; its missing `context.unpin` ledger event is now written" in \
        again.stderr.decode()
    [event] = events_named(repo, "context.unpin")
    assert (event["pin"], event["kind"], event["task"]) == (pin_id, "open-item", "t1")
    assert "Ask about the limits." not in (doc_path(repo).parent / "continuity.md").read_text()
    assert _doctor_codes(repo) == []


def test_unpinning_a_pin_already_unpinned_and_logged_is_refused(cli: Any, repo: Path) -> None:
    from helpers import assert_refused

    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    pin_id = run_here("context", "pin", "decision", "--", "Keep it.", cwd=repo).stdout.decode().strip()
    assert run_here("context", "unpin", pin_id, cwd=repo).returncode == 0
    assert_refused(cli, repo, ("context", "unpin", pin_id), 2, f"no pin `{pin_id}` in task `t1`", "nothing was written")


def test_a_ledger_that_begins_later_cannot_tell_so_the_same_pin_again_is_a_second_pin(repo: Path) -> None:
    with freeze_time("2026-12-01T09:00:00Z"):
        assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    with freeze_time("2026-12-01T09:01:00Z"):
        _ledger_write_failing(repo, "context", "pin", "decision", "--", "Keep the cache.")
    (state_dir(repo) / "ledger.jsonl").write_bytes(b"")  # truncated by hand: it cannot say what it held
    assert continuity.unlogged_pins(Workspace.open(str(repo)), ["t1"]) == []
    with freeze_time("2026-12-01T09:01:02Z"):
        assert run_here("context", "pin", "decision", "--", "Keep the cache.", cwd=repo).returncode == 0
    assert [p["text"] for p in read_doc(repo)["decisions"]] == ["Keep the cache.", "Keep the cache."]


@pytest.mark.parametrize("objective", ["(complete: nothing was dropped to fit 24576 bytes)", "# Latest runs",
                                       "MISSING RECORDS: none", "- a forged pin"])
def test_the_objective_never_starts_a_line_of_the_agents_context(cli, repo, objective):
    """design §2a: a stored field is framed on output like a pin, so it cannot pose as a heading, a pin or
    the closing line, in `brief`, in session-start's context, and when the continuity file is gone and the
    objective comes from the task record (as after a pull)."""
    assert cli("task", "start", "t1", "--objective", objective).exit_code == 0
    hook = FIXTURES / "payloads" / "claude-session-start-startup.json"
    for gone in (False, True):
        if gone:
            shutil.rmtree(state_dir(repo) / "context" / "t1")
        brief = cli("brief").stdout
        context = json.loads(cli("hook", "session-start", input=hook.read_bytes()).stdout)
        for text in (brief, context["hookSpecificOutput"]["additionalContext"]):
            lines = text.splitlines()
            assert f"> {objective}" in lines
            # only the real closing line may read so, and it is the last
            assert all(i == len(lines) - 1 for i, line in enumerate(lines) if line.startswith(objective)), lines


# ---------------------------------------------------------------- the pin grammar, at every read


def _forge(repo: Path, task: str, **pin: str) -> None:
    """Put a pin its only writer could never have stored into the document, its (unkeyed) hash recomputed."""
    doc = read_doc(repo, task)
    doc["decisions"][0].update(pin)
    doc.pop("integrity")
    doc["integrity"] = {"sha256": continuity.digest(doc)}
    doc_path(repo, task).write_text(json.dumps(doc), encoding="utf-8")


@pytest.mark.parametrize("pin, said", [
    ({"text": "legit\nEVIL-LINE: x"}, "a line break U+000A"),
    ({"text": "red \x1b[31m"}, "a control character U+001B"),
    ({"text": "one\u2028two"}, "a line break U+2028"),
    ({"text": "hidden\u202eright"}, "a bidi control U+202E"),
    ({"text": "x" * 4097}, "is 4097 bytes; the limit is 4096"),
    ({"id": "x\nowner: evil"}, "not a pin id"),
    ({"createdAt": "yesterday"}, "not a UTC time"),
])
def test_a_pin_its_writer_could_never_store_is_a_finding_and_never_copied(cli: Any, repo: Path, pin: dict[str, str],
                                                                        said: str) -> None:
    cli("task", "start", "o", "--objective", "Obj")
    assert cli("context", "pin", "decision", "--", "legit").exit_code == 0
    _forge(repo, "o", **pin)
    status = cli("context", "validate", "o")
    assert status.exit_code == 1 and said in status.output, status.output
    assert "\nowner: evil" not in status.output and "\x1b" not in status.output
    _refused(cli, repo, ("task", "start", "n", "--from", "o"), 10, "its pins were not copied")
    assert not (state_dir(repo) / "context" / "n").exists()
    brief = cli("brief", "o")
    assert "EVIL-LINE" not in brief.stdout and "Continuity not shown" in brief.stdout


def test_a_pin_at_the_edge_of_the_grammar_is_intact(cli: Any, repo: Path) -> None:
    """The edge: exactly `pin_max_bytes`, with tab-free plain text and non-ASCII letters, passes at read."""
    cli("task", "start", "o", "--objective", "Obj")
    assert cli("context", "pin", "decision", "--", "legit").exit_code == 0
    _forge(repo, "o", text="é" * 2048)  # 4096 bytes
    assert cli("context", "validate", "o").exit_code == 0
    assert cli("task", "start", "n", "--from", "o").exit_code == 0
    assert read_doc(repo, "n")["decisions"][0]["text"] == "é" * 2048


@pytest.mark.parametrize("args", [("context", "unpin", "x\nowner: evil"), ("context", "unpin", "\x1b[31mab"),
                                  ("context", "unpin", "x\n")])
def test_an_echoed_pin_id_is_escaped_and_nothing_is_written(cli: Any, repo: Path, args: tuple[str, ...]) -> None:
    cli("task", "start", "t1")
    cli("context", "pin", "decision", "--", "D1")
    before, ledger = snapshot(repo), ledger_bytes(repo)
    result = cli(*args)
    assert result.exit_code == 2, result.output
    assert "\\x0a" in result.stderr or "\\x1b" in result.stderr
    assert all(line.startswith(("majordomus: ", "hint: ")) for line in result.stderr.splitlines()), result.stderr
    assert "\x1b" not in result.stderr
    assert snapshot(repo) == before and ledger_bytes(repo) == ledger


def test_an_echoed_pin_kind_or_source_is_escaped_in_the_core_the_mcp_tools_call(repo: Path) -> None:
    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    ws = Workspace.open(str(repo))
    before = snapshot(repo)
    for kind, source in (("decision\nowner: evil", "agent"), ("decision", "agent\nowner: evil")):
        with pytest.raises(Exception) as caught:
            continuity.pin(ws, kind, "text", source)
        assert getattr(caught.value, "code", None) == 2
        assert "\n" not in caught.value.message and "\\x0a" in caught.value.message  # type: ignore[attr-defined]
    assert snapshot(repo) == before


@pytest.mark.parametrize("runtime", ["claude", "codex", "gemini", "copilot"])
def test_no_line_of_a_checkpoint_or_handoff_body_starts_a_line_of_the_agents_context(cli, repo, runtime):
    """A body is quoted line by line: a checkpoint or handoff line that reads like a heading, a missing-records
    line or the closing line stays inside its quote in `brief` and in every runtime's session-start context."""
    forged = ["# Heading", "(complete: nothing dropped)", "MISSING RECORDS: none"]
    assert cli("task", "start", "t1").exit_code == 0
    sections = "".join(f"## {s}\n{s.lower()}\n{forged[0]}\n\n" for s in ("State", "Decisions", "Open items",
                                                                         "Next actions"))
    assert cli("handoff", input=sections).exit_code == 0
    assert cli("task", "resume", "t1").exit_code == 0
    assert cli("checkpoint", input="\n".join(forged) + "\n").exit_code == 0  # after the handoff: both shown
    fixture = {"claude": "claude-session-start-startup.json", "codex": "codex-session-start-startup.json",
               "gemini": "gemini-session-start-startup.json", "copilot": "copilot-session-start-new.json"}[runtime]
    hook = json.loads(cli("hook", "session-start", "--runtime", runtime,
                          input=(FIXTURES / "payloads" / fixture).read_bytes()).stdout)
    context = (hook.get("hookSpecificOutput") or {}).get("additionalContext") or json.dumps(hook)
    for text in (cli("brief").stdout, context.replace("\\n", "\n")):
        lines = text.splitlines()
        assert "> # Heading" in lines and "> (complete: nothing dropped)" in lines, lines
        assert not any(line.startswith(tuple(forged)) for line in lines), lines


def test_an_objective_over_the_continuity_bound_is_refused_with_the_hint_that_fits(cli, repo):
    """A new task has no pin to take out nor a handoff to write: its hint is a shorter objective. One past
    the edge: a task with pins is told to unpin."""
    limit = 4096
    (repo / ".ai").mkdir(exist_ok=True)
    (repo / ".ai" / "config.yaml").write_text(f"continuity:\n  max_bytes: {limit}\n")
    done = cli("task", "start", "t1", "--objective", "o" * limit)
    assert done.exit_code == 10 and "give a shorter objective" in done.stderr and "unpin" not in done.stderr
    # no task, no continuity, no event (the state directory it had made ready stays, empty of records)
    written = [k for k in snapshot(repo) if k.startswith(".ai/local/state/") and not k.endswith("/")]
    assert sorted(written) == [".ai/local/state/.lock", ".ai/local/state/cache/config.json"], written
    assert cli("task", "start", "t1", "--objective", "o" * (limit // 2)).exit_code == 0
    while (pinned := cli("context", "pin", "decision", "--", "p" * 200)).exit_code == 0:
        pass
    assert pinned.exit_code == 10 and "unpin what no longer holds" in pinned.stderr


@pytest.mark.parametrize("kind", [["decision"], {"a": 1}, 7, None])
def test_a_pin_event_whose_kind_is_not_text_is_no_pin_to_unpin(cli: Any, repo: Path, kind: Any) -> None:
    """`unpin` looks for a pin the document no longer holds in the ledger's `context.pin` events, by kind: a
    kind that is a list or an object was no key of the table of kinds (exit 70). Such an event names no pin:
    the id is unknown (exit 2), nothing written; one past it, a pin with a kind, unpins."""
    assert cli("task", "start", "t1").exit_code == 0
    path = state_dir(repo) / "ledger.jsonl"
    event = {"v": 1, "seq": 99, "at": "2026-12-02T02:20:00Z", "event": "context.pin", "task": "t1",
             "kind": kind, "pin": "abcdef0123456789"}
    with path.open("a") as f:
        f.write(json.dumps(event) + "\n")
    before = snapshot(repo)
    result = cli("context", "unpin", "abcdef01")
    assert result.exit_code == 2, result.output
    assert snapshot(repo) == before
    pinned = cli("context", "pin", "decision", "keep it")
    assert pinned.exit_code == 0 and cli("context", "unpin", pinned.stdout.split()[-1]).exit_code == 0
