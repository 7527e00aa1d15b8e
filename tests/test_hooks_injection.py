"""`hook session-start`, exactly once per conversation (design §12): each part of the briefing is in a
conversation once, whatever SessionStart sources the runtime sends, counted across a realistic sequence
(startup → work → resume → fork → compact → resume) with the payload shapes the real clients send, through
the installed console script."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import FIXTURES, commit_file, run, run_here, state_dir

PAYLOADS = FIXTURES / "payloads"
PROFILE = "# Profile: default\n\nPROFILE-MARK You are the careful engineer of this repository."
PARENT = "01a23081-c17e-71f2-ad13-88fb5fe7d632"  # the parent named by the fork transcript's first line


def payload(name: str, **changes: object) -> bytes:
    data = json.loads((PAYLOADS / name).read_text())
    data.update(changes)
    return json.dumps(data).encode()


def hook(repo: Path, data: bytes, runtime: str, console: bool = True) -> str:
    args = ("hook", "session-start", "--runtime", runtime)
    done = run(*args, cwd=repo, input=data) if console else run_here(*args, cwd=repo, input=data)
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"])


def setup(repo: Path) -> None:
    assert run_here("init", cwd=repo).returncode == 0
    (repo / ".ai" / "profiles" / "default.md").write_text(PROFILE + "\n")
    assert run_here("task", "start", "t1", "--objective", "OBJECTIVE-MARK ship the parser", cwd=repo).returncode == 0
    assert run_here("context", "pin", "decision", "--", "PIN-ONE normalise at the edge", cwd=repo).returncode == 0
    assert run_here("checkpoint", cwd=repo, input="CHECKPOINT-A the parser reads headers\n").returncode == 0


def work(repo: Path) -> None:
    """What happens between two SessionStarts: a commit, a checkpoint, a pin, a new file."""
    commit_file(repo, "parser.py", "x = 1\n")
    assert run_here("checkpoint", cwd=repo, input="CHECKPOINT-B the parser reads bodies\n").returncode == 0
    assert run_here("context", "pin", "next-action", "--", "PIN-TWO write the fuzz test", cwd=repo).returncode == 0
    (repo / "notes.txt").write_text("untracked\n")


MARKS = ("PROFILE-MARK", "OBJECTIVE-MARK", "PIN-ONE", "PIN-TWO", "CHECKPOINT-A", "CHECKPOINT-B")


def copies(conversation: list[str]) -> dict[str, int]:
    text = "\n".join(conversation)
    return {mark: text.count(mark) for mark in MARKS}


def assert_once(conversation: list[str], *absent: str) -> None:
    found = copies(conversation)
    assert found == {mark: 0 if mark in absent else 1 for mark in MARKS}, (found, conversation)


def test_codex_startup_work_resume_fork_compact_resume(repo: Path, tmp_path: Path) -> None:
    setup(repo)
    parent = [hook(repo, payload("codex-session-start-startup.json", transcript_path=None), "codex")]
    assert_once(parent, "PIN-TWO", "CHECKPOINT-B")
    work(repo)
    parent.append(hook(repo, payload("codex-session-start-resume.json", transcript_path=None), "codex"))
    assert_once(parent)
    update = parent[-1]
    assert "an update to the briefing of task `t1` given to this conversation at" in update
    assert "notes.txt" in update  # the work tree's drift is new too

    # `codex exec fork`: a new session id; the transcript's first line names the parent.
    transcript = tmp_path / "rollout-fork.jsonl"
    first = json.loads((PAYLOADS / "codex-fork-transcript-first-line.json").read_text())
    assert first["payload"]["forked_from_id"] == PARENT
    transcript.write_text(json.dumps(first) + "\n")
    fork = list(parent)
    fork.append(hook(repo, payload("codex-session-start-fork.json", transcript_path=str(transcript)), "codex"))
    assert_once(fork)
    assert "is unchanged since" in fork[-1] and "above in this conversation" not in fork[-1]

    # An automatic compaction in the fork: PreCompact, PostCompact, then SessionStart `resume` and `compact`
    # — the earlier copies are gone, and the pair leaves exactly one whole briefing.
    with transcript.open("a") as fh:
        fh.write(json.dumps({"type": "response_item", "payload": {"type": "message"}}) + "\n")
        fh.write(json.dumps({"type": "compacted", "payload": {"message": "summary"}}) + "\n")
        # What Codex CLI 0.171.0 writes after the compaction, before the next item.
        for kind in ("world_state", "turn_context", "event_msg", "token_usage_record"):
            fh.write(json.dumps({"type": kind, "payload": {"type": "thread_settings_applied"}}) + "\n")
    fork_id = json.loads(payload("codex-session-start-fork.json"))["session_id"]
    compacted = [hook(repo, payload("codex-session-start-resume.json", session_id=fork_id,
                                    transcript_path=str(transcript)), "codex"),
                 hook(repo, payload("codex-session-start-compact.json", session_id=fork_id,
                                    transcript_path=str(transcript)), "codex")]
    assert_once(compacted)
    assert "unchanged since" in compacted[1]

    # Later the fork is resumed with more work: only the new checkpoint.
    with transcript.open("a") as fh:
        fh.write(json.dumps({"type": "response_item", "payload": {"type": "message"}}) + "\n")
    assert run_here("checkpoint", cwd=repo, input="CHECKPOINT-C after the compaction\n").returncode == 0
    compacted.append(hook(repo, payload("codex-session-start-resume.json", session_id=fork_id,
                                        transcript_path=str(transcript)), "codex"))
    assert_once(compacted)
    assert "\n".join(compacted).count("CHECKPOINT-C") == 1 and "PIN-ONE" not in compacted[-1]


def stop(repo: Path, session_id: str) -> None:
    done = run_here("hook", "stop", cwd=repo, input=payload("claude-stop.json", session_id=session_id))
    assert done.returncode == 0, done.stderr


def test_claude_startup_work_resume_fork_compact_resume(repo: Path) -> None:
    setup(repo)
    parent_id = json.loads(payload("claude-session-start-startup.json"))["session_id"]
    parent = [hook(repo, payload("claude-session-start-startup.json"), "claude")]
    assert_once(parent, "PIN-TWO", "CHECKPOINT-B")
    stop(repo, parent_id)
    work(repo)
    parent.append(hook(repo, payload("claude-session-start-resume.json"), "claude"))
    assert_once(parent)
    stop(repo, parent_id)  # the parent's last answer, just now
    # `--resume ID --fork-session`: `source: fork` with the fork's new session id and no parent id (the
    # fork's transcript is written only later); `seconds_since_last_response` traces it to the parent.
    fork = list(parent)
    fork.append(hook(repo, payload("claude-session-start-fork.json", seconds_since_last_response=0), "claude"))
    assert_once(fork)
    assert "is unchanged since" in fork[-1]
    fork_id = json.loads(payload("claude-session-start-fork.json"))["session_id"]
    # A compaction in the fork gives the whole briefing again (the earlier copies are gone)…
    compacted = [hook(repo, payload("claude-session-start-compact.json", session_id=fork_id), "claude")]
    assert_once(compacted)
    assert compacted[0].startswith(PROFILE)
    # …and a resume after it only says since when it is unchanged.
    compacted.append(hook(repo, payload("claude-session-start-resume.json", session_id=fork_id), "claude"))
    assert_once(compacted)
    assert "unchanged since" in compacted[-1]


def test_a_claude_fork_that_cannot_be_traced_gets_the_whole_briefing(repo: Path) -> None:
    setup(repo)
    for sid in ("a", "b"):  # two conversations that answered in the same seconds: not guessed between
        hook(repo, payload("claude-session-start-startup.json", session_id=sid), "claude", console=False)
        stop(repo, sid)
    for changes in ({"seconds_since_last_response": 0}, {"seconds_since_last_response": 3600},
                    {"seconds_since_last_response": "0"}, {}):
        context = hook(repo, payload("claude-session-start-fork.json", session_id=f"fork-{len(changes)}-{changes}",
                                     **changes), "claude", console=False)
        assert_once([context], "PIN-TWO", "CHECKPOINT-B")


def test_startup_and_clear_give_the_whole_briefing_again(repo: Path) -> None:
    setup(repo)
    first = hook(repo, payload("claude-session-start-startup.json"), "claude", console=False)
    for name in ("claude-session-start-clear.json", "claude-session-start-startup.json"):
        again = hook(repo, payload(name), "claude", console=False)
        assert copies([again]) == copies([first])


def test_a_resume_of_an_unknown_conversation_gets_the_whole_briefing(repo: Path) -> None:
    setup(repo)
    context = hook(repo, payload("claude-session-start-resume.json", session_id="never-seen"), "claude", console=False)
    assert_once([context], "PIN-TWO", "CHECKPOINT-B")


def test_a_removed_pin_and_another_task_are_told(repo: Path) -> None:
    setup(repo)
    hook(repo, payload("claude-session-start-startup.json"), "claude", console=False)
    memory = json.loads((state_dir(repo) / "cache" / "conversations.json").read_text())
    assert "PIN-ONE" not in json.dumps(memory)  # digests only: no pin text in the cache
    pin_id = run_here("context", "pin", "decision", "--", "PIN-GONE soon removed", cwd=repo).stdout.decode().strip()
    hook(repo, payload("claude-session-start-resume.json"), "claude", console=False)
    assert run_here("context", "unpin", pin_id, cwd=repo).returncode == 0
    update = hook(repo, payload("claude-session-start-resume.json"), "claude", console=False)
    assert "1 pin was removed since then" in update
    assert run_here("task", "start", "t2", "--objective", "OTHER-MARK", cwd=repo).returncode == 0
    other = hook(repo, payload("claude-session-start-resume.json"), "claude", console=False)
    assert "OTHER-MARK" in other and other.startswith(PROFILE)


def test_a_fork_transcript_that_is_not_json_or_huge_is_only_untrusted_input(repo: Path, tmp_path: Path) -> None:
    setup(repo)
    for number, body in enumerate((b"\x00garbage\n", b'{"type":"session_meta","payload":{"forked_from_id":' + b"1" * 70000 + b"}}\n",
                 b'{"type":"session_meta","payload":{"forked_from_id":["' + PARENT.encode() + b'"]}}\n')):
        transcript = tmp_path / "t.jsonl"
        transcript.write_bytes(body)
        hook(repo, payload("codex-session-start-startup.json"), "codex", console=False)
        context = hook(repo, payload("codex-session-start-fork.json", transcript_path=str(transcript),
                                     session_id=f"fork-{number}"), "codex", console=False)
        assert_once([context], "PIN-TWO", "CHECKPOINT-B")  # no parent found: the whole briefing


def test_the_memory_is_one_small_file_of_the_latest_conversations(repo: Path) -> None:
    from majordomus.hooks import conversations

    setup(repo)
    for n in range(conversations.CONVERSATIONS_KEPT + 8):
        hook(repo, payload("claude-session-start-startup.json", session_id=f"s{n}"), "claude", console=False)
    path = state_dir(repo) / "cache" / "conversations.json"
    memory = json.loads(path.read_text())
    assert list(memory) == [f"s{n}" for n in range(8, conversations.CONVERSATIONS_KEPT + 8)]
    assert path.stat().st_size < 64 << 10 and oct(path.stat().st_mode & 0o777) == "0o600"
    # An unreadable memory costs a whole briefing, never a missing one.
    path.write_bytes(b"\xff not json")
    context = hook(repo, payload("claude-session-start-resume.json", session_id="s9"), "claude", console=False)
    assert_once([context], "PIN-TWO", "CHECKPOINT-B")


def test_a_claude_fork_is_traced_by_the_stop_hooks_own_clock_when_another_answered_seconds_apart(repo: Path) -> None:
    """Seen with the real client: the fork of one conversation came 3 s after its answer and 1 s after
    another conversation's. The ledger's whole seconds cannot tell them apart; the Stop hook's own clock can."""
    import time

    setup(repo)
    for sid in ("parent", "other"):
        hook(repo, payload("claude-session-start-startup.json", session_id=sid), "claude", console=False)
        stop(repo, sid)
    memory_file = state_dir(repo) / "cache" / "conversations.json"
    memory = json.loads(memory_file.read_text())
    assert all(isinstance(memory[sid]["stopped"], float) for sid in ("parent", "other"))
    memory["parent"]["stopped"], memory["other"]["stopped"] = time.time() - 3.3, time.time() - 1.2
    memory_file.write_text(json.dumps(memory))
    fork = hook(repo, payload("claude-session-start-fork.json", session_id="fork", seconds_since_last_response=3),
                "claude", console=False)
    assert "is unchanged since" in fork and "PIN-ONE" not in fork  # the parent's, not a second whole copy
    memory = json.loads(memory_file.read_text())
    memory["parent"]["stopped"] = memory["other"]["stopped"] = time.time() - 3.2  # truly the same moment
    memory_file.write_text(json.dumps(memory))
    again = hook(repo, payload("claude-session-start-fork.json", session_id="fork-2", seconds_since_last_response=3),
                 "claude", console=False)
    assert_once([again], "PIN-TWO", "CHECKPOINT-B")  # not guessed between: the whole briefing


def test_a_resume_with_nothing_changed_says_unchanged_for_a_task_without_an_objective(repo: Path) -> None:
    """A task started without --objective renders no Objective at startup; the first resume must not send
    the interactive sentinel as a change (each stored text is compared as the briefing renders it)."""
    for runtime, start, resume in (("claude", "claude-session-start-startup.json", "claude-session-start-resume.json"),
                                   ("codex", "codex-session-start-startup.json", "codex-session-start-resume.json")):
        assert run_here("task", "start", f"t-{runtime}", cwd=repo).returncode == 0
        assert run_here("checkpoint", cwd=repo, input="note1\n").returncode == 0
        whole = hook(repo, payload(start, session_id=f"S-{runtime}"), runtime, console=False)
        assert "Briefing for task" in whole and "# Objective" not in whole
        again = hook(repo, payload(resume, session_id=f"S-{runtime}"), runtime, console=False)
        assert "is unchanged since" in again and "interactive" not in again, again
