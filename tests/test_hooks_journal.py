"""The compaction journal: `hook compact` writes one bounded, whitelisted line; replay is tolerant."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import FIXTURES, run_here, snapshot, start_task_at, state_dir

from majordomus.hooks import journal
from majordomus.lite.statepaths import JOURNAL, JOURNAL_ROTATED

PAYLOADS = FIXTURES / "payloads"


def journal_file(repo: Path, task: str = "t1") -> Path:
    return state_dir(repo) / "context" / task / JOURNAL


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def compact(repo: Path, phase: str, runtime: str, payload: bytes | str | None, *extra: str):
    result = run_here("hook", "compact", "--phase", phase, "--runtime", runtime, *extra, cwd=repo, input=payload)
    assert result.returncode == 0, result.stderr
    assert result.stdout == b""
    return result


@pytest.mark.parametrize("runtime", ["claude", "codex"])
def test_real_payloads_keep_only_whitelisted_keys(repo, runtime):
    start_task_at(repo)
    for phase, name in (("pre", "pre-compact"), ("post", "post-compact")):
        compact(repo, phase, runtime, (PAYLOADS / f"{runtime}-{name}.json").read_bytes())
    got = lines(journal_file(repo))
    assert [g["phase"] for g in got] == ["pre", "post"]
    assert all(g["runtime"] == runtime and g["v"] == 1 and g["trigger"] == "auto" for g in got)
    allowed = {"v", "at", "phase", "runtime"} | set(journal.WHITELIST[runtime])
    assert all(set(g) <= allowed for g in got)
    # transcript_path, cwd, permission_mode, hook_event_name, compact_summary: never kept
    text = journal_file(repo).read_text()
    for secret in ("transcript_path", "/home/dev", "compact_summary", "callback normalisation", "PreCompact"):
        assert secret not in text
    if runtime == "codex":
        assert got[0]["turn_id"] == "turn-42" and got[0]["model"] == "gpt-5-codex"
    assert journal_file(repo).stat().st_mode & 0o777 == 0o600
    assert journal_file(repo).parent.stat().st_mode & 0o777 == 0o700


def test_subagent_fields_and_extra_keys(repo):
    start_task_at(repo)
    payload = json.loads((PAYLOADS / "claude-subagent-pre-compact.json").read_text())
    payload.update({"prompt_id": "p-1", "turn_id": "not-for-claude", "evil": "x" * 10, "phase": "post",
                    "runtime": "codex", "model": "m" * 1000, "agent_type": {"nested": "object"}})
    compact(repo, "pre", "claude", json.dumps(payload))
    (got,) = lines(journal_file(repo))
    # phase and runtime come from argv, never from the payload; values are cut to 256 characters
    assert got["phase"] == "pre" and got["runtime"] == "claude"
    assert got["agent_id"] == "a-7f3e" and got["prompt_id"] == "p-1" and got["trigger"] == "manual"
    assert got["model"] == "m" * 256
    assert "turn_id" not in got and "evil" not in got and "agent_type" not in got


@pytest.mark.parametrize("payload, error", [
    (b"this is not json {", "JSONDecodeError"),
    (b"", "EmptyPayload"),
    (b"[1, 2, 3]", "NotAnObject"),
    (b"\xff\xfe\x00garbage\x00", "UnicodeDecodeError"),
    (b'{"session_id": "secret-prompt-text", "trigger": "auto"', "JSONDecodeError"),
    (b"[" * 100000, "TooDeep"),
])
def test_garbage_records_the_error_name_only(repo, payload, error):
    start_task_at(repo)
    compact(repo, "pre", "claude", payload)
    (got,) = lines(journal_file(repo))
    assert got == {"v": 1, "at": got["at"], "phase": "pre", "runtime": "claude", "parseError": error}
    assert b"secret-prompt-text" not in journal_file(repo).read_bytes()


def test_two_mib_stdin_is_a_parse_error_without_content(repo):
    start_task_at(repo)
    big = json.dumps({"session_id": "s", "trigger": "auto", "pad": "SECRET" * (2 * 1024 * 1024 // 6)})
    assert len(big) > 2 * 1024 * 1024
    compact(repo, "pre", "codex", big)
    (got,) = lines(journal_file(repo))
    assert got["parseError"] == "PayloadTooLarge" and "session_id" not in got
    assert b"SECRET" not in journal_file(repo).read_bytes()


def test_no_active_task_is_silent_and_writes_nothing(repo, tmp_path):
    before = snapshot(repo)
    result = run_here("hook", "compact", "--phase", "pre", "--runtime", "claude", cwd=repo,
                 input=(PAYLOADS / "claude-pre-compact.json").read_bytes())
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert snapshot(repo) == before
    outside = run_here("hook", "compact", "--phase", "pre", "--runtime", "claude", cwd=tmp_path, input=b"{}")
    assert (outside.returncode, outside.stdout, outside.stderr) == (0, b"", b"")


@pytest.mark.parametrize("argv", [
    ["--phase", "middle", "--runtime", "claude"],
    ["--phase", "pre", "--runtime", "vim"],
    ["--phase", "pre"],
    ["--phase", "pre", "--runtime", "claude", "--extra"],
    [],
])
def test_bad_arguments_exit_0_and_write_nothing(repo, argv):
    start_task_at(repo)
    before = snapshot(repo)
    result = run_here("hook", "compact", *argv, cwd=repo, input=b"{}")
    assert result.returncode == 0 and result.stdout == b""
    assert b"nothing recorded" in result.stderr
    assert snapshot(repo) == before


def test_equals_form_and_dash_C(repo, tmp_path):
    start_task_at(repo)
    result = run_here("-C", str(repo), "hook", "compact", "--phase=post", "--runtime=codex", cwd=tmp_path,
                 input=(PAYLOADS / "codex-post-compact.json").read_bytes())
    assert result.returncode == 0
    assert lines(journal_file(repo))[0]["phase"] == "post"


def test_in_process_click_command_matches_the_fast_path(cli, repo):
    cli("task", "start", "t1")
    result = cli("hook", "compact", "--phase", "pre", "--runtime", "claude",
                 input=(PAYLOADS / "claude-pre-compact.json").read_bytes())
    assert result.exit_code == 0
    assert lines(journal_file(repo))[0]["session_id"].startswith("0b9a3c2e")
    bad = cli("hook", "compact", "--phase", "sideways", "--runtime", "claude", input=b"{}")
    assert bad.exit_code == 0 and len(lines(journal_file(repo))) == 1


def write_config(repo: Path, text: str) -> None:
    (repo / ".ai").mkdir(exist_ok=True)
    (repo / ".ai" / "config.yaml").write_text(text)


def test_line_over_line_max_bytes_is_dropped(repo):
    write_config(repo, "journal:\n  line_max_bytes: 200\n")
    start_task_at(repo)
    compact(repo, "pre", "claude", json.dumps({"session_id": "s", "trigger": "auto"}))
    result = compact(repo, "post", "claude", json.dumps({"session_id": "s" * 256, "model": "m" * 256}))
    assert b"line_max_bytes" in result.stderr
    assert [g["phase"] for g in lines(journal_file(repo))] == ["pre"]


def test_rotation_at_a_small_size_and_status_across_both_files(repo):
    from majordomus.workspace import Workspace

    write_config(repo, "journal:\n  rotate_bytes: 600   # small, for the test\n")
    start_task_at(repo)
    for n in range(5):
        for phase in ("pre", "post"):
            compact(repo, phase, "codex", json.dumps({"session_id": "s1", "turn_id": f"turn-{n}",
                                                      "trigger": "auto" if n % 2 else "manual"}))
    current, rotated = journal_file(repo), journal_file(repo).with_name(JOURNAL_ROTATED)
    assert rotated.exists() and current.exists()
    assert current.stat().st_size <= 600 and rotated.stat().st_size <= 600
    status = journal.status(Workspace.open(str(repo)), "t1")
    kept = len(lines(rotated)) + len(lines(current))
    assert kept < 10  # older lines went with the rotation before the last one
    assert status["events"] == kept and status["generation"] == kept // 2
    assert status["pending"] == 0 and status["dropped_lines"] == 0
    assert status["last_completed"]["turn_id"] == "turn-4"
    assert rotated.stat().st_mode & 0o777 == 0o600


def test_torn_and_foreign_lines_are_counted_not_fatal(repo):
    from majordomus.workspace import Workspace

    start_task_at(repo)
    compact(repo, "pre", "claude", json.dumps({"session_id": "s", "trigger": "auto"}))
    with open(journal_file(repo), "ab") as fh:  # a writer killed mid-line, then garbage
        fh.write(b'{"v":1,"at":"2026-01-01T00:00:00Z","phase":"po')
    compact(repo, "post", "claude", json.dumps({"session_id": "s", "trigger": "auto"}))
    with open(journal_file(repo), "ab") as fh:
        fh.write(b'[1,2]\n{"phase":"pre","runtime":"vim","at":"x"}\n\xff\xfe\n')
    text = journal_file(repo).read_bytes().split(b"\n")
    assert text[1].startswith(b'{"v":1,"at":"2026-01-01T00:00:00Z","phase":"po') and text[2].startswith(b'{"v":1')
    status = journal.status(Workspace.open(str(repo)), "t1")
    assert status["dropped_lines"] == 4
    assert status["generation"] == 1 and status["pending"] == 0


def test_missing_journal_and_active_task_default(repo):
    from majordomus.workspace import Workspace

    start_task_at(repo)
    status = journal.status(Workspace.open(str(repo)))
    assert status["journal"] == ".ai/local/state/context/t1/compact-events.jsonl"
    assert (status["generation"], status["pending"], status["last_completed"], status["dropped_lines"]) == (
        0, 0, None, 0)


def test_context_symlink_is_not_followed(repo, tmp_path):
    start_task_at(repo)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    context = state_dir(repo) / "context"
    if context.exists():
        import shutil

        shutil.rmtree(context)
    context.symlink_to(elsewhere)
    compact(repo, "pre", "claude", b"{}")
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("shape", ["fifo", "directory", "link"])
def test_a_journal_that_is_not_a_file_is_never_written(repo, tmp_path, shape):
    start_task_at(repo)
    compact(repo, "pre", "claude", b"{}")  # the edge: a real file takes the line
    path = journal_file(repo)
    assert len(lines(path)) == 1
    path.unlink()
    target = tmp_path / "target"
    target.write_text("")
    if shape == "fifo":
        os.mkfifo(path)
    elif shape == "directory":
        path.mkdir()
    else:
        path.symlink_to(target)
    result = compact(repo, "post", "claude", b"{}")
    assert b"not recorded" in result.stderr and result.stderr.count(b"\n") == 1
    assert target.read_text() == ""


def test_a_broken_configuration_is_refused_by_compact_as_by_every_command(repo):
    start_task_at(repo)
    write_config(repo, "journal:\n  rotate_bytes: lots\n")
    result = compact(repo, "pre", "claude", b"{}")
    assert b"not recorded" in result.stderr and b"rotate_bytes" in result.stderr
    assert not journal_file(repo).exists()
    assert run_here("checkpoint", cwd=repo, input=b"x\n").returncode == 12
    write_config(repo, "journal:\n  rotate_bytes: 4096\n")  # past it: fixed, and recorded again
    compact(repo, "pre", "claude", b"{}")
    assert len(lines(journal_file(repo))) == 1


# ---------------------------------------------------------------- replay, on hand-written journals


def ev(phase: str, at: str, session: str = "s", **extra: str) -> str:
    return json.dumps({"v": 1, "at": at, "phase": phase, "runtime": "claude", "session_id": session, **extra})


def replay_of(tmp_path: Path, *rows: str, rotated: tuple[str, ...] = ()) -> dict:
    if rotated:
        (tmp_path / JOURNAL_ROTATED).write_text("\n".join(rotated) + "\n")
    (tmp_path / JOURNAL).write_text("\n".join(rows) + "\n")
    return journal.replay(str(tmp_path / JOURNAL), str(tmp_path / JOURNAL_ROTATED))


def test_duplicates_are_merged_before_pairing(tmp_path):
    got = replay_of(tmp_path,
                    ev("pre", "T1", trigger="auto"), ev("pre", "T1", trigger="auto"),  # hook registered twice
                    ev("post", "T2", trigger="auto"), ev("post", "T2", trigger="auto"))
    assert (got["duplicates"], got["generation"], got["pending"], got["abandoned"]) == (2, 1, 0, 0)


def test_pending_is_normal_and_abandoned_is_counted(tmp_path):
    got = replay_of(tmp_path,
                    ev("pre", "T1", trigger="auto"), ev("pre", "T2", trigger="manual"),
                    ev("post", "T3", trigger="manual"), ev("pre", "T4", trigger="auto"))
    assert got["generation"] == 1 and got["abandoned"] == 1 and got["pending"] == 1
    assert got["last_completed"]["started_at"] == "T2" and got["last_completed"]["at"] == "T3"
    assert got["open"][0]["at"] == "T4"


def test_sessions_and_subagents_pair_separately(tmp_path):
    got = replay_of(tmp_path,
                    ev("pre", "T1", "a"), ev("pre", "T2", "b"), ev("pre", "T3", "a", agent_id="x"),
                    ev("post", "T4", "b"), ev("post", "T5", "a"))
    assert got["generation"] == 2 and got["pending"] == 1 and got["abandoned"] == 0
    assert got["open"][0]["agent_id"] == "x"


def test_trigger_is_normalised(tmp_path):
    got = replay_of(tmp_path,
                    ev("post", "T1", trigger="auto"), ev("post", "T2", trigger="MANUAL"), ev("post", "T3"),
                    ev("post", "T4", trigger="manual"))
    assert got["triggers"] == {"manual": 1, "auto": 1, "unknown": 2}
    assert got["completed_without_pre"] == 4 and got["last_completed"]["trigger"] == "manual"


def test_rotated_file_is_read_first(tmp_path):
    got = replay_of(tmp_path, ev("post", "T2"), rotated=(ev("pre", "T1"),))
    assert got["generation"] == 1 and got["last_completed"]["started_at"] == "T1"
    assert got["completed_without_pre"] == 0


def test_concurrent_writers_lose_no_line(repo):
    import subprocess

    from helpers import MAJORDOMUS

    write_config(repo, "journal:\n  rotate_bytes: 2000\n")
    start_task_at(repo)
    procs = [subprocess.Popen([MAJORDOMUS, "hook", "compact", "--phase", "pre", "--runtime", "claude"], cwd=repo,
                              stdin=subprocess.PIPE) for _ in range(12)]
    # Every payload at once: a hook still waiting for its turn after its stdin deadline would read nothing.
    for n, proc in enumerate(procs):
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"session_id": f"s{n}"}).encode())
        proc.stdin.close()
    assert all(p.wait(timeout=60) == 0 for p in procs)
    current, rotated = journal_file(repo), journal_file(repo).with_name(JOURNAL_ROTATED)
    total = lines(current) + (lines(rotated) if rotated.exists() else [])
    # each rotation keeps one older file: with 2000 bytes a file holds at least 12 of these lines
    assert sorted(g["session_id"] for g in total) == sorted(f"s{n}" for n in range(12))
    assert os.path.getsize(current) <= 2000


def test_summary_for_people(tmp_path):
    got = replay_of(tmp_path, ev("pre", "T1", trigger="auto"), ev("pre", "T1", trigger="auto"), "{torn",
                    ev("post", "T2", trigger="auto"))
    assert journal.summary(got) == ("generation 1, pending 0, last completed T2 (auto, claude), 1 dropped line, "
                                    "1 duplicate merged")
    none = tmp_path / "none"
    assert journal.summary(journal.replay(str(none / JOURNAL), str(none / JOURNAL_ROTATED))) == "generation 0, pending 0"
