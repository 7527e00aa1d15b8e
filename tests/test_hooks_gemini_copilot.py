"""Gemini CLI and Copilot CLI (design §23): install merged and undone exactly, and the hook side's shapes.

The payloads are what the real clients sent (Gemini CLI 0.61.0, Copilot CLI 1.0.102), with the values changed.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from helpers import FIXTURES, run_here, snapshot, state_dir

from majordomus.hooks import copilot, gemini, installers
from majordomus.workspace import Workspace

PAYLOADS = FIXTURES / "payloads"
FILES = {"gemini": Path(".gemini") / "settings.json", "copilot": Path(".github") / "hooks" / "majordomus.json"}
SHAPES = {"gemini": "gemini-settings-shape.json", "copilot": "copilot-hooks-shape.json"}
MODULES: dict[str, Any] = {"gemini": gemini, "copilot": copilot}
RUNTIMES = ["gemini", "copilot"]
PROMPTS = ("fix the failing login test", "carry on with the login fix")  # the fixtures' prompts

# Gemini settings someone already had, in a layout json.dumps would not produce (4 spaces, unicode, no
# final newline), with a hook of their own and `hooks.disabled`, a setting that is not an event.
GEMINI_EXISTING = """{
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "hooks": {
        "disabled": ["lint-on-save"],
        "SessionEnd": [
            {
                "hooks": [
                    {"name": "notify", "type": "command", "command": "notify-send 'fertig ✓'"}
                ]
            }
        ]
    },
    "ui": {"theme": "GitHub"}
}"""
# A Copilot hooks file of the user's own in the same directory, and one they put under our name.
COPILOT_THEIRS = '{"version": 1, "hooks": {"sessionStart": [{"type": "command", "bash": "./scripts/warm.sh"}]}}\n'


def ok(*args: str, cwd: Path) -> tuple[str, str]:
    result = run_here(*args, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return result.stdout.decode(), result.stderr.decode()


def outside_state(snap: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in snap.items() if not k.startswith(".ai/")}


# ---------------------------------------------------------------- install / uninstall


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_fresh_install_has_the_documented_shape_and_uninstall_takes_it_all_away(repo, runtime):
    before = snapshot(repo)
    out, err = ok("hooks", "install", "--runtime", runtime, "--compact-bridge", cwd=repo)
    events = ("SessionStart, SessionEnd, PreCompress" if runtime == "gemini"
              else "sessionStart, sessionEnd, preCompact")
    assert out == f"installed: {FILES[runtime]} ({events})\n"
    assert "trusted folder" in err and "docs/gemini-and-copilot.md" in err
    assert (repo / FILES[runtime]).read_bytes() == (PAYLOADS / SHAPES[runtime]).read_bytes()
    out, _ = ok("hooks", "uninstall", "--runtime", runtime, cwd=repo)
    assert out == f"restored: {FILES[runtime]} (as it was before `hooks install`)\n"
    assert outside_state(snapshot(repo)) == before
    assert not (repo / FILES[runtime].parts[0]).exists()  # the directories install made go too


def test_copilot_keeps_the_rest_of_github_and_the_users_own_hook_files(repo):
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".github" / "workflows" / "ci.yml").write_text("on: push\n")
    (repo / ".github" / "hooks").mkdir()
    (repo / ".github" / "hooks" / "theirs.json").write_text(COPILOT_THEIRS)
    before = snapshot(repo)
    ok("hooks", "install", "--runtime", "copilot", cwd=repo)
    assert sorted(os.listdir(repo / ".github" / "hooks")) == ["majordomus.json", "theirs.json"]
    ok("hooks", "uninstall", "--runtime", "copilot", cwd=repo)
    assert outside_state(snapshot(repo)) == before


def test_copilot_removes_only_the_hooks_directory_it_made(repo):
    (repo / ".github").mkdir()
    (repo / ".github" / "CODEOWNERS").write_text("* @team\n")
    ok("hooks", "install", "--runtime", "copilot", cwd=repo)
    ok("hooks", "uninstall", "--runtime", "copilot", cwd=repo)
    assert sorted(os.listdir(repo / ".github")) == ["CODEOWNERS"]


def test_gemini_merges_into_existing_settings_and_restores_them_byte_for_byte(repo):
    path = repo / FILES["gemini"]
    path.parent.mkdir()
    path.write_text(GEMINI_EXISTING)
    os.chmod(path, 0o640)
    original = path.read_bytes()
    ok("hooks", "install", "--runtime", "gemini", cwd=repo)
    once = path.read_bytes()
    doc = json.loads(once)
    assert doc["security"] == {"auth": {"selectedType": "gemini-api-key"}} and doc["ui"] == {"theme": "GitHub"}
    assert doc["hooks"]["disabled"] == ["lint-on-save"]
    assert [g["hooks"][0]["command"] for g in doc["hooks"]["SessionEnd"]] == [
        "notify-send 'fertig ✓'", "majordomus hook stop"]
    assert "matcher" not in doc["hooks"]["SessionStart"][0]  # a matcher is an exact string: none runs for all
    assert "PreCompress" not in doc["hooks"]  # only with --compact-bridge
    assert once.startswith(b'{\n    "security"') and "✓".encode() in once  # its own layout is kept
    out, err = ok("hooks", "install", "--runtime", "gemini", cwd=repo)
    assert out == "already installed: .gemini/settings.json\n" and err == ""
    assert path.read_bytes() == once
    ok("hooks", "uninstall", "--runtime", "gemini", cwd=repo)
    assert path.read_bytes() == original
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_adding_the_compact_bridge_later_still_restores_the_original(repo, runtime):
    before = snapshot(repo)
    ok("hooks", "install", "--runtime", runtime, cwd=repo)
    out, _ = ok("hooks", "install", "--runtime", runtime, "--compact-bridge", cwd=repo)
    assert out.endswith("(PreCompress)\n" if runtime == "gemini" else "(preCompact)\n")
    assert (repo / FILES[runtime]).read_bytes() == (PAYLOADS / SHAPES[runtime]).read_bytes()
    ok("hooks", "uninstall", "--runtime", runtime, cwd=repo)
    assert outside_state(snapshot(repo)) == before


def test_gemini_edited_after_install_loses_exactly_our_entries(repo):
    path = repo / FILES["gemini"]
    path.parent.mkdir()
    path.write_text(GEMINI_EXISTING)
    ok("hooks", "install", "--runtime", "gemini", "--compact-bridge", cwd=repo)
    doc = json.loads(path.read_text())
    doc["hooks"]["SessionStart"][0]["hooks"].append({"type": "command", "command": "echo mine"})
    doc["model"] = {"name": "gemini-3.1-pro-preview"}
    path.write_text(json.dumps(doc, indent=4, ensure_ascii=False))
    out, _ = ok("hooks", "uninstall", "--runtime", "gemini", cwd=repo)
    assert out == "removed: .gemini/settings.json (PreCompress, SessionEnd, SessionStart)\n"
    expected = json.loads(GEMINI_EXISTING)
    expected["hooks"]["SessionStart"] = [{"hooks": [{"type": "command", "command": "echo mine"}]}]
    expected["model"] = {"name": "gemini-3.1-pro-preview"}
    assert json.loads(path.read_text()) == expected
    assert ok("hooks", "uninstall", "--runtime", "gemini", cwd=repo)[0] == "nothing to remove: .gemini/settings.json\n"


def test_copilot_edited_after_install_keeps_their_entry_and_drops_an_emptied_file(repo):
    path = repo / FILES["copilot"]
    ok("hooks", "install", "--runtime", "copilot", cwd=repo)
    doc = json.loads(path.read_text())
    doc["hooks"]["sessionStart"].append({"type": "command", "bash": "./scripts/warm.sh", "timeoutSec": 5})
    path.write_text(json.dumps(doc))
    out, _ = ok("hooks", "uninstall", "--runtime", "copilot", cwd=repo)
    assert out == "removed: .github/hooks/majordomus.json (sessionEnd, sessionStart)\n"
    assert json.loads(path.read_text()) == {
        "version": 1, "hooks": {"sessionStart": [{"type": "command", "bash": "./scripts/warm.sh", "timeoutSec": 5}]}}
    # Only our entries, reformatted: once they are out, a version-1 file with no hooks is nothing; it goes.
    path.unlink()
    ok("hooks", "install", "--runtime", "copilot", cwd=repo)
    path.write_text(json.dumps(json.loads(path.read_text()), indent=8))
    ok("hooks", "uninstall", "--runtime", "copilot", cwd=repo)
    assert not path.exists()
    assert path.parent.is_dir()  # there before this second install: not its to remove


def test_copilot_file_committed_by_a_teammate_uninstalls_without_a_receipt(repo):
    path = repo / FILES["copilot"]
    path.parent.mkdir(parents=True)
    path.write_bytes((PAYLOADS / SHAPES["copilot"]).read_bytes())
    assert ok("hooks", "install", "--runtime", "copilot", "--compact-bridge", cwd=repo)[0].startswith("already")
    out, _ = ok("hooks", "uninstall", "--runtime", "copilot", cwd=repo)
    assert out.startswith("removed: .github/hooks/majordomus.json") and not path.exists()
    assert path.parent.is_dir()  # not made by this install: left where the teammate put it


def test_copilot_adds_the_version_to_a_file_of_ours_without_one(repo):
    path = repo / FILES["copilot"]
    path.parent.mkdir(parents=True)
    path.write_text('{"hooks": {}}\n')
    ok("hooks", "install", "--runtime", "copilot", cwd=repo)
    assert list(json.loads(path.read_text())) == ["version", "hooks"]
    ok("hooks", "uninstall", "--runtime", "copilot", cwd=repo)
    assert path.read_text() == '{"hooks": {}}\n'


# ---------------------------------------------------------------- refusals


def refused(repo: Path, args: tuple[str, ...], code: int, *words: str) -> None:
    before = snapshot(repo)
    result = run_here(*args, cwd=repo)
    err = result.stderr.decode()
    assert result.returncode == code, err
    assert err.startswith("majordomus: ") and "nothing was written" in err
    for word in words:
        assert word in err, (word, err)
    assert result.stdout == b""
    assert snapshot(repo) == before  # the state directory included: no receipt either


@pytest.mark.parametrize("runtime, link", [
    ("gemini", ".gemini"), ("gemini", ".gemini/settings.json"),
    ("copilot", ".github"), ("copilot", ".github/hooks"), ("copilot", ".github/hooks/majordomus.json"),
])
def test_refuses_to_write_through_a_symbolic_link(repo, tmp_path, runtime, link):
    target = tmp_path / "shared"
    if link.endswith(".json"):
        (repo / link).parent.mkdir(parents=True)
        target.write_text("{}")
    else:
        (repo / link).parent.mkdir(parents=True, exist_ok=True)
        target.mkdir()
    (repo / link).symlink_to(target)
    for action in ("install", "uninstall"):
        refused(repo, ("hooks", action, "--runtime", runtime), 12, f"{repo / link} is a symbolic link")
    assert (target.read_text() == "{}") if target.is_file() else (list(target.iterdir()) == [])


def test_refuses_a_github_that_is_not_a_directory(repo):
    (repo / ".github").write_text("not a directory\n")
    refused(repo, ("hooks", "install", "--runtime", "copilot"), 12, ".github is not a directory")


@pytest.mark.parametrize("runtime, content, words", [
    ("gemini", '{\n  // the theme\n  "ui": {"theme": "GitHub"}\n}\n', ("has comments", "would drop comments")),
    ("gemini", '{"hooks": {"enabled": true, "SessionStart": {"a": 1}}}', ("`hooks.SessionStart` in",)),
    ("gemini", "[1, 2]", ("must hold a JSON object",)),
    ("copilot", '{"version": 2, "hooks": {}}', ("version 2 hooks file", "version 1 only")),
    ("copilot", '{"version": 1, "hooks": []}', ("`hooks` in",)),
    ("copilot", "{not json", ("is not valid JSON (line 1",)),
])
def test_refuses_a_file_it_cannot_merge_into(repo, runtime, content, words):
    path = repo / FILES[runtime]
    path.parent.mkdir(parents=True)
    path.write_text(content)
    for action in ("install", "uninstall"):
        refused(repo, ("hooks", action, "--runtime", runtime), 10, *words)


def test_refuses_settings_that_are_not_utf8(repo):
    path = repo / FILES["gemini"]
    path.parent.mkdir()
    path.write_bytes(b'{"ui": "\xff"} // a comment')
    refused(repo, ("hooks", "install", "--runtime", "gemini"), 10, "is not UTF-8")


def test_gemini_settings_that_are_not_events_are_not_refused(repo):
    path = repo / FILES["gemini"]
    path.parent.mkdir()
    path.write_text('{"hooks": {"enabled": true, "notifications": false}}\n')
    ok("hooks", "install", "--runtime", "gemini", cwd=repo)
    assert json.loads(path.read_text())["hooks"]["enabled"] is True
    ok("hooks", "uninstall", "--runtime", "gemini", cwd=repo)
    assert path.read_text() == '{"hooks": {"enabled": true, "notifications": false}}\n'


def test_mcp_flag_is_still_claude_only(repo):
    before = snapshot(repo)
    result = run_here("hooks", "install", "--runtime", "gemini", "--mcp", cwd=repo)
    assert result.returncode == 2 and b"--mcp applies to claude" in result.stderr
    assert snapshot(repo) == before


# ---------------------------------------------------------------- receipts and doctor's hooks.missing


def workspace(repo: Path) -> Workspace:
    return Workspace.open(str(repo))


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_the_receipt_lists_what_install_added_and_goes_with_uninstall(repo, runtime):
    ok("hooks", "install", "--runtime", runtime, cwd=repo)
    ws = workspace(repo)
    path = os.path.join(ws.worktree, *FILES[runtime].parts)
    receipt = installers.load_receipt(ws, runtime, path)
    assert receipt is not None and receipt["exact"] and receipt["before"] is None
    assert receipt["added"] == sorted(h.command for h in MODULES[runtime].hooks(False))
    assert [os.path.relpath(d, ws.worktree) for d in receipt["created_dirs"]] == list(
        os.path.join(*FILES[runtime].parts[:i]) for i in range(1, len(FILES[runtime].parts)))
    assert sorted(os.listdir(state_dir(repo) / "hooks")) == [os.path.basename(installers.receipt_path(ws, runtime, path))]
    ok("hooks", "uninstall", "--runtime", runtime, cwd=repo)
    assert installers.load_receipt(ws, runtime, path) is None


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_missing_names_an_installed_hook_that_went_away(repo, runtime):
    module = MODULES[runtime]
    ws = workspace(repo)
    assert module.missing(ws) == []  # never installed: nothing to miss
    ok("hooks", "install", "--runtime", runtime, cwd=repo)
    assert module.missing(ws) == []
    path = repo / FILES[runtime]
    doc = json.loads(path.read_text())
    start = "SessionStart" if runtime == "gemini" else "sessionStart"
    del doc["hooks"][start]
    path.write_text(json.dumps(doc))
    gone = module.missing(ws)
    assert [(g.event, g.command, g.why) for g in gone] == [
        (start, f"majordomus hook session-start --runtime {runtime}", "removed")]
    message, hint = gone[0].message(str(FILES[runtime]), runtime)
    assert message == (f"{FILES[runtime]}: the {start} hook `hooks install` added "
                       f"(majordomus hook session-start --runtime {runtime}) is no longer in it")
    assert f"hooks install --runtime {runtime}" in hint
    path.write_text("{broken")
    assert {g.why.split(" is ")[-1][:14] for g in module.missing(ws)} == {"not valid JSON"}
    path.unlink()
    assert [g.why for g in module.missing(ws)] == ["no file", "no file"]


# ---------------------------------------------------------------- the hook side


def payload(name: str) -> dict[str, Any]:
    return json.loads((PAYLOADS / name).read_text())


GEMINI_PAYLOADS = sorted(p.name for p in PAYLOADS.glob("gemini-*.json") if "shape" not in p.name)
COPILOT_PAYLOADS = sorted(p.name for p in PAYLOADS.glob("copilot-*.json") if "shape" not in p.name)


def test_gemini_output_is_one_json_document_and_nothing_else():
    context = "majordomus: <profile> & the briefing\nline two"
    out = gemini.session_start_output(context, "startup")
    assert "\n" not in out  # one line: the whole of stdout is one document
    assert json.loads(out) == {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}}
    # Nothing to inject still prints a document: with stdout empty Gemini would parse stderr instead.
    assert gemini.session_start_output(None) == "{}"
    # After /clear Gemini keeps only systemMessage: the user is told, and the context stays for later versions.
    cleared = json.loads(gemini.session_start_output(context, "clear"))
    assert cleared["hookSpecificOutput"]["additionalContext"] == context
    assert "/clear" in cleared["systemMessage"] and "majordomus brief" in cleared["systemMessage"]


def test_copilot_output_is_a_top_level_additional_context():
    context = "majordomus: <b>raw</b> briefing"
    out = copilot.session_start_output(context, "new")
    assert out is not None and json.loads(out) == {"additionalContext": context}  # hookSpecificOutput is ignored
    assert copilot.session_start_output(None) is None


@pytest.mark.parametrize("name", GEMINI_PAYLOADS + COPILOT_PAYLOADS)
def test_session_fields_read_the_runtimes_names_and_never_the_prompt(name):
    module = gemini if name.startswith("gemini") else copilot
    data = payload(name)
    fields = module.session_fields(data)
    assert fields["session_id"] == "7f3c2a10-5b8e-4d21-9c4a-0e6b1d2f3a45"
    assert fields["source"] == data.get("source") and fields["reason"] == data.get("reason")
    assert not any(prompt in json.dumps(fields) for prompt in PROMPTS)
    assert module.inject_whole(fields["source"]) is True  # neither client keeps an earlier context


def test_copilot_session_end_keeps_the_final_messages_length_never_its_text():
    data = dict(payload("copilot-session-end.json"), finalMessage="the secret plan, in full")
    fields = copilot.session_fields(data)
    assert fields["message_length"] == len("the secret plan, in full")
    assert "secret" not in json.dumps(fields)


@pytest.mark.parametrize("name", GEMINI_PAYLOADS + COPILOT_PAYLOADS)
def test_journal_keeps_only_whitelisted_keys_under_journal_names(name):
    module = gemini if name.startswith("gemini") else copilot
    data = dict(payload(name), prompt="p", initialPrompt="p", initial_prompt="p", customInstructions="p",
                finalMessage="p", transcript_path="/home/dev/x", transcriptPath="/home/dev/x")
    kept = module.journal_fields(data)
    assert set(kept) <= {"session_id", "trigger", "agent_id", "agent_type"}
    assert kept.get("session_id") == ("7f3c2a10-5b8e-4d21-9c4a-0e6b1d2f3a45" if module is gemini or "sessionId" in data
                                      else None)
    assert "p" not in kept.values() and "/home/dev/x" not in kept.values()


def test_gemini_pre_compress_journal_fields():
    assert gemini.journal_fields(payload("gemini-pre-compress.json")) == {
        "session_id": "7f3c2a10-5b8e-4d21-9c4a-0e6b1d2f3a45", "trigger": "auto"}
    assert copilot.journal_fields({"sessionId": "s", "trigger": "auto", "agentId": "a", "agentType": "t",
                                   "initialPrompt": "p"}) == {
        "session_id": "s", "trigger": "auto", "agent_id": "a", "agent_type": "t"}


def test_budgets_are_render_max_bytes(repo):
    config = workspace(repo).config
    for module in (gemini, copilot):
        assert module.budget_bytes(config) == config.get("continuity", "render_max_bytes") == 24576
        assert module.TABLE["budget"] == ("bytes", "continuity.render_max_bytes")


def test_the_hook_side_imports_only_json():
    import subprocess
    import sys

    probe = ("import sys\nbefore = set(sys.modules)\nimport majordomus.hooks.gemini, majordomus.hooks.copilot\n"
             "print(sorted(m for m in set(sys.modules) - before if m.startswith('majordomus') or m in "
             "('typing', 'pygit2', 'click', 'yaml')))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['majordomus', 'majordomus.hooks', 'majordomus.hooks.copilot', 'majordomus.hooks.gemini']"


# ---------------------------------------------------------------- hook compact: the journal, for real


@pytest.mark.parametrize("runtime, name", [("gemini", "gemini-pre-compress.json"), ("copilot", None)])
def test_hook_compact_journals_only_the_whitelist_under_journal_names(repo, runtime, name):
    from helpers import start_task_at

    start_task_at(repo)
    data = payload(name) if name else {"sessionId": "7f3c2a10-5b8e-4d21-9c4a-0e6b1d2f3a45", "trigger": "auto",
                                       "timestamp": 1773480413589, "cwd": "/home/dev/work/shop",
                                       "initialPrompt": PROMPTS[0], "customInstructions": PROMPTS[1]}
    result = run_here("hook", "compact", "--phase", "pre", "--runtime", runtime, cwd=repo, input=json.dumps(data))
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    journal = state_dir(repo) / "context" / "t1" / "compact-events.jsonl"
    (line,) = [json.loads(text) for text in journal.read_text().splitlines()]
    assert {k: v for k, v in line.items() if k != "at"} == {
        "v": 1, "phase": "pre", "runtime": runtime, "session_id": "7f3c2a10-5b8e-4d21-9c4a-0e6b1d2f3a45",
        "trigger": "auto"}
    # Gemini sends PreCompress at every turn's compression check, and neither runtime has a post event:
    # the repeats of one session merge into one pending `pre`.
    run_here("hook", "compact", "--phase", "pre", "--runtime", runtime, cwd=repo, input=json.dumps(data))
    status = run_here("context", "status", "--json", cwd=repo)
    assert status.returncode == 0, status.stderr
    compaction = json.loads(status.stdout)["compaction"]
    assert (compaction["pending"], compaction["duplicates"], compaction["generation"]) == (1, 1, 0)


def test_uninstall_after_the_file_went_removes_the_directories_install_made(repo):
    ok("hooks", "install", "--runtime", "copilot", cwd=repo)
    (repo / FILES["copilot"]).unlink()
    assert ok("hooks", "uninstall", "--runtime", "copilot", cwd=repo)[0].startswith("nothing to remove")
    assert not (repo / ".github").exists()


# The event names each client knows (Gemini CLI 0.61.0's HookEventName; Copilot CLI 1.0.102's HookType in
# its SDK): an unknown name is skipped with a warning (Gemini) or silently, so a typo would never run.
KNOWN_EVENTS = {
    "gemini": {"BeforeTool", "AfterTool", "BeforeAgent", "AfterAgent", "Notification", "SessionStart",
               "SessionEnd", "PreCompress", "BeforeModel", "AfterModel", "BeforeToolSelection"},
    "copilot": {"preToolUse", "preMcpToolCall", "postToolUse", "postToolUseFailure", "userPromptSubmitted",
                "userPromptTransformed", "sessionStart", "sessionEnd", "postResult", "prePRDescription",
                "errorOccurred", "agentStop", "subagentStart", "subagentStop", "preCompact", "permissionRequest",
                "notification"},
}


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_every_event_installed_is_one_the_client_knows(runtime):
    events = {h.event for h in MODULES[runtime].hooks(True)}
    assert events <= KNOWN_EVENTS[runtime]
    assert set(json.loads((PAYLOADS / SHAPES[runtime]).read_text())["hooks"]) == events
    assert set(MODULES[runtime].TABLE["events"].values()) == events


# ---------------------------------------------------------------- the session hooks, wired


def _started(repo: Path) -> None:
    for args in (("task", "start", "t1", "--objective", "Fix the login callback"),
                 ("context", "pin", "decision", "--", "PIN-MARKER normalise at the edge")):
        assert run_here(*args, cwd=repo).returncode == 0
    assert run_here("checkpoint", cwd=repo, input=b"CHECKPOINT-MARKER the cause is in normalisation\n").returncode == 0


def _context(runtime: str, stdout: bytes) -> str:
    doc = json.loads(stdout)
    text = doc["hookSpecificOutput"]["additionalContext"] if runtime == "gemini" else doc["additionalContext"]
    assert isinstance(text, str)
    if runtime == "copilot":
        assert "hookSpecificOutput" not in doc  # Copilot reads only the top-level field
    return text


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_session_start_gives_the_whole_briefing_in_the_runtimes_own_shape_at_every_start(repo, runtime):
    _started(repo)
    for name in (f"{runtime}-session-start-{'startup' if runtime == 'gemini' else 'new'}.json",
                 f"{runtime}-session-start-resume.json", f"{runtime}-session-start-resume.json"):
        done = run_here("hook", "session-start", "--runtime", runtime, cwd=repo, input=(PAYLOADS / name).read_bytes())
        assert done.returncode == 0
        text = _context(runtime, done.stdout)
        # A resumed session of these runtimes keeps no earlier context: the whole briefing again, never an update.
        assert text.count("PIN-MARKER") == 1 and text.count("CHECKPOINT-MARKER") == 1, name
        assert "is unchanged since" not in text and "an update to the briefing" not in text


def test_gemini_gets_one_json_document_outside_a_work_tree(tmp_path):
    done = run_here("hook", "session-start", "--runtime", "gemini", cwd=tmp_path,
                    input=(PAYLOADS / "gemini-session-start-startup.json").read_bytes())
    assert done.returncode == 0 and json.loads(done.stdout) == {}  # never an empty stdout: Gemini reads stderr then


def test_copilot_stop_records_its_camel_case_session_and_never_the_message(repo):
    _started(repo)
    payload = json.loads((PAYLOADS / "copilot-session-end.json").read_bytes())
    payload["finalMessage"] = "FINAL-MESSAGE-TEXT the login works now"
    done = run_here("hook", "stop", "--runtime", "copilot", cwd=repo, input=json.dumps(payload).encode())
    assert done.returncode == 0 and done.stdout == b""
    ledger = (state_dir(repo) / "ledger.jsonl").read_text()
    stops = [json.loads(line) for line in ledger.splitlines() if '"session.stop"' in line]
    assert stops[-1]["session_id"] == payload["sessionId"]
    assert stops[-1]["message_length"] == len(payload["finalMessage"])
    assert "FINAL-MESSAGE-TEXT" not in ledger


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_doctor_warns_when_an_installed_hook_went_missing(repo, runtime):
    assert run_here("hooks", "install", "--runtime", runtime, cwd=repo).returncode == 0
    assert "hooks.missing" not in run_here("doctor", "--json", cwd=repo).stdout.decode()
    (repo / FILES[runtime]).unlink()
    done = run_here("doctor", "--json", cwd=repo)
    found = [f for f in json.loads(done.stdout)["findings"] if f["code"] == "hooks.missing"]
    assert found and all(f["level"] == "warn" for f in found)
    assert f"hooks install --runtime {runtime}" in found[0]["hint"]
