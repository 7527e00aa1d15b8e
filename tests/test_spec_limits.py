"""Every number of design §3 tested at `limit` and `limit + 1`, with the values written here from the design (docs/design.md).

Nothing is imported from the module under test to know a limit: each expected value below is the design's
number, literally, so a limit moved off by one in the code fails here. Each refusal shows its exit code
(design §14), its message, and that nothing was written anywhere (`assert_refused`: a snapshot of the whole
repository and the ledger's bytes).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from freezegun import freeze_time
from helpers import (
    HANDOFF_BODY,
    assert_refused,
    commit_file,
    events_named,
    ledger_bytes,
    records_in,
    start_task,
    state_dir,
)

# design §3, written out: the defaults a repository without .ai/config.yaml gets.
CHECKPOINT_LINES = 40
CHECKPOINT_BYTES = 16384
HANDOFF_BYTES = 65536
PIN_BYTES = 4096
CONTINUITY_BYTES = 131072
RENDER_BYTES = 24576
JOURNAL_LINE_BYTES = 16384
JOURNAL_ROTATE_BYTES = 1048576
COMPACT_STDIN_BYTES = 1 << 20  # design §12: "stdin read up to 1 MiB"
CHANGED_FILES = 200
CHECKPOINT_RETENTION = 500
HANDOFF_RETENTION = 200
STALE_MINUTES = 120


def yaml_front_matter(data: bytes) -> dict[str, Any]:
    import yaml

    text = data.decode("utf-8")
    assert text.startswith("---\n")
    return yaml.load(text[4:text.index("\n---\n", 3) + 1], Loader=yaml.CSafeLoader)


# ---------------------------------------------------------------- checkpoint: lines and bytes (§6 step 3)


def test_checkpoint_of_exactly_40_lines_is_stored(cli, repo):
    start_task(cli)
    result = cli("checkpoint", input="".join(f"line {i}\n" for i in range(CHECKPOINT_LINES)))
    assert result.exit_code == 0, result
    stored = (repo / result.stdout.strip()).read_bytes()
    assert stored.split(b"\n---\n", 1)[1].count(b"\n") == CHECKPOINT_LINES


def test_checkpoint_of_41_lines_is_refused(cli, repo):
    start_task(cli)
    assert_refused(cli, repo, ["checkpoint"], 10, "41 lines", "the limit is 40", "nothing was written",
                   "write a handoff instead", "majordomus handoff",
                   input="".join(f"line {i}\n" for i in range(CHECKPOINT_LINES + 1)))


def test_blank_edges_do_not_count_toward_the_line_cap(cli, repo):
    """Step 2 drops leading and trailing blank lines before step 3 counts."""
    start_task(cli)
    body = "\n \n" + "".join(f"line {i}\n" for i in range(CHECKPOINT_LINES)) + "\n\t\n\n"
    assert cli("checkpoint", input=body).exit_code == 0
    inner_blank = "".join(f"line {i}\n" for i in range(CHECKPOINT_LINES - 1)) + "\nlast\n"
    assert_refused(cli, repo, ["checkpoint"], 10, "41 lines", input=inner_blank)


def test_checkpoint_of_exactly_16384_bytes_is_stored(cli, repo):
    start_task(cli)
    result = cli("checkpoint", input="x" * CHECKPOINT_BYTES)
    assert result.exit_code == 0, result
    assert (repo / result.stdout.strip()).read_bytes().endswith(b"\n---\n" + b"x" * CHECKPOINT_BYTES + b"\n")
    multibyte = "é" * (CHECKPOINT_BYTES // 2)  # 16384 bytes in 8192 characters: bytes are what count
    assert cli("checkpoint", input=multibyte).exit_code == 0


@pytest.mark.parametrize("body", [b"x" * (CHECKPOINT_BYTES + 1), "é".encode() * (CHECKPOINT_BYTES // 2) + b"\n",
                                  b"x\n" * (CHECKPOINT_BYTES // 2) + b"y"])
def test_checkpoint_of_16385_bytes_is_refused(cli, repo, body):
    assert len(body) == CHECKPOINT_BYTES + 1
    start_task(cli)
    assert_refused(cli, repo, ["checkpoint"], 10, "16384 bytes", "nothing was written", "write a handoff instead",
                   input=body)


# ---------------------------------------------------------------- handoff bytes (§7)


def handoff_of(size: int) -> bytes:
    base = HANDOFF_BODY.encode()
    return base + b"f" * (size - len(base) - 1) + b"\n"


def test_handoff_of_exactly_65536_bytes_is_stored(cli, repo):
    start_task(cli)
    body = handoff_of(HANDOFF_BYTES)
    assert len(body) == HANDOFF_BYTES
    result = cli("handoff", input=body)
    assert result.exit_code == 0, result
    assert (repo / result.stdout.strip()).read_bytes().endswith(b"\n---\n" + body)


def test_handoff_of_65537_bytes_is_refused(cli, repo):
    start_task(cli)
    body = handoff_of(HANDOFF_BYTES + 1)
    assert len(body) == HANDOFF_BYTES + 1
    assert_refused(cli, repo, ["handoff"], 10, "65536 bytes", "nothing was written", input=body)


def test_a_handoff_has_no_line_cap(cli, repo):
    start_task(cli)
    assert cli("handoff", input=HANDOFF_BODY + "a line\n" * (CHECKPOINT_LINES * 10)).exit_code == 0


# ---------------------------------------------------------------- pins and the whole continuity (§8)


def test_pin_of_exactly_4096_bytes_is_kept_whole(cli, repo):
    start_task(cli)
    result = cli("context", "pin", "decision", "--", "d" * PIN_BYTES)
    assert result.exit_code == 0, result
    doc = json.loads((state_dir(repo) / "context" / "t1" / "continuity.json").read_text())
    assert doc["decisions"][0]["text"] == "d" * PIN_BYTES


@pytest.mark.parametrize("text", ["d" * (PIN_BYTES + 1), "é" * (PIN_BYTES // 2) + "d"])
def test_pin_of_4097_bytes_is_refused(cli, repo, text):
    assert len(text.encode()) == PIN_BYTES + 1
    start_task(cli)
    assert_refused(cli, repo, ["context", "pin", "decision", "--", text], 10, "4097 bytes", "the limit is 4096",
                   "nothing was written")


def continuity_file(repo: Path, task: str = "t1") -> Path:
    return state_dir(repo) / "context" / task / "continuity.json"


def test_continuity_of_exactly_131072_bytes_is_written_and_one_byte_more_is_refused(cli, repo):
    """The whole file is capped (design §8); its size is what majordomus writes, measured on disk."""
    start_task(cli)
    path = continuity_file(repo)
    filler = 3000

    def pin(length: int) -> Any:
        return cli("context", "pin", "decision", "--", "c" * length)

    assert pin(filler).exit_code == 0  # the first pin also opens the list: measure from the second
    size = path.stat().st_size
    assert pin(filler).exit_code == 0
    per_pin = path.stat().st_size - size - filler  # what one more pin costs besides its text
    while CONTINUITY_BYTES - path.stat().st_size - per_pin > PIN_BYTES:
        assert pin(filler).exit_code == 0
    last = CONTINUITY_BYTES - path.stat().st_size - per_pin
    assert 0 < last <= PIN_BYTES
    assert_refused(cli, repo, ["context", "pin", "decision", "--", "c" * (last + 1)], 10,
                   f"would be {CONTINUITY_BYTES + 1} bytes", f"the limit is {CONTINUITY_BYTES}",
                   "continuity.max_bytes", "nothing was written")
    assert pin(last).exit_code == 0
    assert path.stat().st_size == CONTINUITY_BYTES
    assert cli("context", "validate").exit_code == 0


def canonical_sha256(doc: dict[str, Any]) -> str:
    """design §8's integrity: the canonical JSON (keys sorted recursively, no whitespace, UTF-8) without it."""
    body = {k: v for k, v in doc.items() if k != "integrity"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"),
                                     ensure_ascii=False).encode("utf-8")).hexdigest()


def padded(doc: dict[str, Any], size: int) -> bytes:
    data = json.dumps(doc, indent=2, ensure_ascii=False).encode("utf-8")
    return data + b" " * (size - len(data) - 1) + b"\n"  # whitespace: the canonical hash does not change


def test_a_continuity_file_over_its_cap_is_untrusted_even_with_a_matching_hash(cli, repo):
    """design §2a: over the size its only writer could produce, a file was not written by majordomus: never
    briefed or injected, `context validate` exits 1, doctor fails, whatever its integrity hash says."""
    start_task(cli, "t1", "--objective", "Obj")
    assert cli("context", "pin", "decision", "--", "Pinned sentence.").exit_code == 0
    path = continuity_file(repo)
    doc = json.loads(path.read_text())
    assert doc["integrity"]["sha256"] == canonical_sha256(doc)
    path.write_bytes(padded(doc, CONTINUITY_BYTES))
    assert cli("context", "validate").exit_code == 0
    assert "Pinned sentence." in cli("brief").stdout
    path.write_bytes(padded(doc, CONTINUITY_BYTES + 1))
    assert cli("context", "validate").exit_code == 1
    assert "Pinned sentence." not in cli("brief").stdout
    start = cli("hook", "session-start", input='{"source":"startup"}')
    assert start.exit_code == 0 and "Pinned sentence." not in start.stdout
    assert cli("doctor").exit_code == 1


# ---------------------------------------------------------------- the render budget (§8, §9, §12)


def test_a_render_of_exactly_24576_bytes_is_whole_and_one_byte_more_is_cut(cli, repo):
    start_task(cli)

    def show() -> str:
        result = cli("context", "show")
        assert result.exit_code == 0, result
        return result.stdout

    filler = 3000
    pins: list[str] = []
    while RENDER_BYTES - len(show().encode()) - len("- \n") > PIN_BYTES:
        pins.append(cli("context", "pin", "decision", "--", "r" * filler).stdout.strip())
    rendered = show()
    assert "dropped" not in rendered
    last = RENDER_BYTES - len(rendered.encode()) - len("- \n")  # one more `- TEXT` line under Decisions
    assert 0 < last <= PIN_BYTES
    pin_id = cli("context", "pin", "decision", "--", "z" * last).stdout.strip()
    whole = show()
    assert len(whole.encode()) == RENDER_BYTES and whole.endswith("- " + "z" * last + "\n")
    assert "dropped" not in whole
    assert cli("context", "unpin", pin_id).exit_code == 0
    assert cli("context", "pin", "decision", "--", "z" * (last + 1)).exit_code == 0
    cut = show()
    assert len(cut.encode()) <= RENDER_BYTES
    assert "(dropped to fit 24576 bytes: 1 decision)" in cut
    assert "z" * (last + 1) in cut and cut.count("r" * filler) == len(pins) - 1  # the oldest went first
    assert (continuity_file(repo).parent / "continuity.md").read_text() == cut


def test_brief_and_session_start_stay_within_every_budget_with_astral_characters(cli, repo):
    """24576 bytes for the render (§9); Claude counts UTF-16 code units (10,000), Codex ceil(bytes / 4) tokens
    (2,500) (§12). An emoji is one character, two UTF-16 units and four bytes: only text outside the BMP tells
    the three counts apart."""
    start_task(cli, "t1", "--objective", "Ship the callback fix 🚀")
    for i in range(12):
        assert cli("context", "pin", "decision", "--", f"Decision {i}: " + "🙂" * 900).exit_code == 0
    assert cli("checkpoint", input=("🧭 " * 300 + "\n") * 10).exit_code == 0
    brief = cli("brief")
    assert brief.exit_code == 0 and len(brief.stdout.encode()) <= RENDER_BYTES
    for runtime in ("claude", "codex"):
        result = cli("hook", "session-start", "--runtime", runtime, input='{"source":"startup"}')
        assert result.exit_code == 0, result
        context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
        size = len(context.encode("utf-8"))
        assert size <= RENDER_BYTES
        if runtime == "claude":
            assert len(context.encode("utf-16-le")) // 2 <= 10000
        else:
            assert -(-size // 4) <= 2500


# ---------------------------------------------------------------- the compaction journal (§12)


def compact(cli, phase: str, payload: bytes | str) -> Any:
    result = cli("hook", "compact", "--phase", phase, "--runtime", "claude", input=payload)
    assert result.exit_code == 0 and result.stdout == "", result  # fail-open: always 0
    return result


def journal(repo: Path) -> Path:
    return state_dir(repo) / "context" / "t1" / "compact-events.jsonl"


def journal_lines(repo: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in journal(repo).read_bytes().splitlines()]


WHITELIST = ("session_id", "trigger", "model", "prompt_id", "agent_id", "agent_type")  # design §12, claude


def payload_for_line_of(cli, repo: Path, size: int) -> bytes:
    """A payload whose journal line is exactly `size` bytes: each kept value is at most 256 characters, and an
    emoji is written as a 12-byte surrogate pair escape, so six values can pass 16 KiB."""
    compact(cli, "pre", json.dumps({key: "" for key in WHITELIST}))
    base = len(journal(repo).read_bytes().splitlines()[-1])
    remaining = size - base
    values = {}
    for key in WHITELIST:
        emoji = min(256, remaining // 12)
        ascii_chars = min(256 - emoji, remaining - 12 * emoji)
        values[key] = "😀" * emoji + "a" * ascii_chars
        remaining -= 12 * emoji + ascii_chars
    assert remaining == 0, "the six values cannot make a line of that size"
    return json.dumps(values).encode()


def test_a_journal_line_of_exactly_16384_bytes_is_kept(cli, repo):
    start_task(cli)
    payload = payload_for_line_of(cli, repo, JOURNAL_LINE_BYTES)
    compact(cli, "pre", payload)  # the same phase as the measured line: `post` is one byte longer
    raw = journal(repo).read_bytes().splitlines()
    assert len(raw) == 2 and len(raw[-1]) == JOURNAL_LINE_BYTES
    assert journal_lines(repo)[-1]["agent_type"].startswith("😀")


def test_a_journal_line_of_16385_bytes_is_dropped(cli, repo):
    start_task(cli)
    payload = payload_for_line_of(cli, repo, JOURNAL_LINE_BYTES + 1)
    before, ledger_before = journal(repo).read_bytes(), ledger_bytes(repo)
    result = compact(cli, "pre", payload)
    assert "line_max_bytes" in result.stderr
    assert journal(repo).read_bytes() == before and ledger_bytes(repo) == ledger_before


def test_compact_stdin_of_exactly_1_mib_is_read(cli, repo):
    start_task(cli)
    payload = json.dumps({"session_id": "s1", "trigger": "auto"}).encode()
    payload += b" " * (COMPACT_STDIN_BYTES - len(payload))
    assert len(payload) == COMPACT_STDIN_BYTES
    compact(cli, "pre", payload)
    line = journal_lines(repo)[-1]
    assert line["session_id"] == "s1" and line["trigger"] == "auto" and "parseError" not in line


def test_compact_stdin_of_1_mib_and_one_byte_is_a_parse_error_without_content(cli, repo):
    start_task(cli)
    payload = json.dumps({"session_id": "s1", "trigger": "auto"}).encode()
    payload += b" " * (COMPACT_STDIN_BYTES + 1 - len(payload))
    compact(cli, "pre", payload)
    line = journal_lines(repo)[-1]
    assert line["parseError"] == "PayloadTooLarge"
    assert set(line) == {"v", "at", "phase", "runtime", "parseError"}
    assert b"s1" not in journal(repo).read_bytes()


@pytest.mark.parametrize("extra,rotates", [(0, False), (1, True)])
def test_the_journal_rotates_past_1_mib(cli, repo, extra, rotates):
    """A file never grows past `rotate_bytes`: filled to exactly 1 MiB it stays; one byte more rotates to `.1`."""
    start_task(cli)
    payload = json.dumps({"session_id": "s1", "trigger": "auto"})
    compact(cli, "pre", payload)
    one = len(journal(repo).read_bytes())  # one journal line and its newline
    filler = JOURNAL_ROTATE_BYTES - one + extra
    journal(repo).write_bytes(b"#" * (filler - 1) + b"\n")
    compact(cli, "pre", payload)  # the same line again (a retried hook): same length
    rotated = journal(repo).with_name("compact-events.jsonl.1")
    if rotates:
        assert rotated.read_bytes() == b"#" * (filler - 1) + b"\n"
        assert len(journal(repo).read_bytes()) == one
    else:
        assert not rotated.exists()
        assert journal(repo).stat().st_size == JOURNAL_ROTATE_BYTES


# ---------------------------------------------------------------- changed files (§4)


@pytest.mark.parametrize("count,omitted", [(CHANGED_FILES, None), (CHANGED_FILES + 1, 1)])
def test_changed_files_at_200_and_201(cli, repo, count, omitted):
    start_task(cli)
    for i in range(count):
        (repo / f"f{i:03d}.txt").write_text("x")
    result = cli("checkpoint", input="many files\n")
    assert result.exit_code == 0, result
    meta = yaml_front_matter((repo / result.stdout.strip()).read_bytes())
    assert meta["changed_files"] == [f"f{i:03d}.txt" for i in range(CHANGED_FILES)]
    assert meta.get("changed_files_omitted") == omitted
    assert ("changed_files_omitted" in meta) == (omitted is not None)  # present only when > 0


# ---------------------------------------------------------------- retention: reported above the limit, never enforced


def fake_records(repo: Path, kind: str, count: int) -> None:
    """`count` well-formed records named by design §6's rule (content digest), written straight to the store."""
    directory = state_dir(repo) / kind
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    head = "0" * 40
    for i in range(count):
        data = (f'---\nschema_version: 1\nkind: "{kind[:-1]}"\ntimestamp: "2026-01-01T00:00:00Z"\ntask: "t1"\n'
                f'branch: "main"\nhead: "{head}"\n---\nrecord {i}\n').encode()
        digest = hashlib.sha256(data).hexdigest()
        path = directory / f"20260101T000000Z--main--{head[:7]}--{digest[:16]}.md"
        path.write_bytes(data)
        os.chmod(path, 0o600)


def doctor_finding(cli, code: str) -> dict[str, Any]:
    result = cli("doctor", "--json")
    report = json.loads(result.stdout)
    found = [f for f in report["findings"] if f["code"] == code]
    assert len(found) == 1, report
    return found[0]


@pytest.mark.parametrize("kind,limit", [("checkpoints", CHECKPOINT_RETENTION), ("handoffs", HANDOFF_RETENTION)])
def test_retention_warns_only_above_the_limit_and_deletes_nothing(cli, repo, kind, limit):
    start_task(cli)
    fake_records(repo, kind, limit)
    at_limit = doctor_finding(cli, f"retention.{kind}")
    assert at_limit["level"] == "ok", at_limit
    assert cli("watch", "--once", "--json").stdout == ""  # nothing holds: watch reports nothing
    data = f'---\nkind: "{kind[:-1]}"\n---\none more\n'.encode()
    extra = state_dir(repo) / kind / f"20260102T000000Z--main--0000000--{hashlib.sha256(data).hexdigest()[:16]}.md"
    extra.write_bytes(data)
    os.chmod(extra, 0o600)
    before = records_in(repo, kind)
    over = doctor_finding(cli, f"retention.{kind}")
    assert over["level"] == "warn"
    assert str(limit + 1) in over["message"] and f"({limit})" in over["message"]
    watched = [json.loads(line) for line in cli("watch", "--once", "--json").stdout.splitlines()]
    assert [(w["type"], w["code"]) for w in watched] == [("begins", f"retention.{kind}")]
    assert records_in(repo, kind) == before and len(before) == limit + 1


# ---------------------------------------------------------------- staleness: `check` and `doctor` agree (§6, §11)


@pytest.mark.parametrize("since,stale", [("11:59:59", False), ("12:00:00", False), ("12:00:01", True),
                                          ("12:01:00", True)])
def test_stale_only_past_120_minutes_and_check_and_doctor_agree(cli, repo, since, stale):
    with freeze_time("2026-09-03T10:00:00Z"):
        start_task(cli)
        assert cli("checkpoint", input="fresh\n").exit_code == 0
    with freeze_time(f"2026-09-03T{since}Z"):
        check = cli("check")
        report = json.loads(cli("doctor", "--json").stdout)
    assert check.exit_code == (1 if stale else 0), check
    found = [f for f in report["findings"] if f["code"] == "task.stale"]
    assert len(found) == (1 if stale else 0), report
    if stale:
        minutes = 120 if since == "12:00:01" else 121
        assert found[0]["level"] == "warn" and "`t1`" in found[0]["message"]
        assert f"{minutes} minutes" in check.stderr and f"{minutes} minutes" in found[0]["message"]


@pytest.mark.parametrize("since,stale", [("12:00:00", False), ("12:00:01", True)])
def test_never_checkpointed_counts_from_the_start_for_doctor_and_is_none_for_check(cli, repo, since, stale):
    """`check` exits 1 when stale *or none* (§6); doctor warns about a task quiet for longer than the limit,
    counted from its start when it never checkpointed (§11)."""
    with freeze_time("2026-09-03T10:00:00Z"):
        start_task(cli)
    with freeze_time(f"2026-09-03T{since}Z"):
        check = cli("check")
        report = json.loads(cli("doctor", "--json").stdout)
    assert check.exit_code == 1 and "no checkpoint" in check.stderr
    assert [f["code"] for f in report["findings"] if f["code"] == "task.stale"] == (["task.stale"] if stale else [])
    with freeze_time(f"2026-09-03T{since}Z"):
        assert cli("check", "--checkpoint").exit_code == 0  # an empty checkpoint: now it has one
        assert cli("check").exit_code == 0


def test_the_configured_staleness_limit_applies_to_both(cli, repo):
    (repo / ".ai").mkdir()
    (repo / ".ai" / "config.yaml").write_text("checkpoint:\n  stale_after_minutes: 5\n")
    with freeze_time("2026-09-03T10:00:00Z"):
        start_task(cli)
        assert cli("check", "--checkpoint").exit_code == 0
    with freeze_time("2026-09-03T10:05:00Z"):
        assert cli("check").exit_code == 0
        assert "task.stale" not in cli("doctor", "--json").stdout
    with freeze_time("2026-09-03T10:05:01Z"):
        assert cli("check").exit_code == 1
        assert doctor_finding(cli, "task.stale")["level"] == "warn"


# ---------------------------------------------------------------- the configured caps are the ones enforced


def test_configured_caps_replace_the_defaults(cli, repo):
    (repo / ".ai").mkdir()
    (repo / ".ai" / "config.yaml").write_text(
        "checkpoint:\n  max_body_lines: 3\n  max_body_bytes: 20\nhandoff:\n  max_bytes: 300\n"
        "continuity:\n  pin_max_bytes: 10\n")
    commit_file(repo, ".ai/config.yaml", (repo / ".ai" / "config.yaml").read_text())
    start_task(cli)
    assert cli("checkpoint", input="a\nb\nc\n").exit_code == 0
    assert_refused(cli, repo, ["checkpoint"], 10, "4 lines", "the limit is 3", input="a\nb\nc\nd\n")
    assert cli("checkpoint", input="x" * 20).exit_code == 0
    assert_refused(cli, repo, ["checkpoint"], 10, "20 bytes", input="x" * 21)
    assert cli("context", "pin", "decision", "--", "p" * 10).exit_code == 0
    assert_refused(cli, repo, ["context", "pin", "decision", "--", "p" * 11], 10, "11 bytes", "the limit is 10")
    body = HANDOFF_BODY.encode()
    assert len(body) < 300
    assert_refused(cli, repo, ["handoff"], 10, "300 bytes", input=body + b"h" * (300 - len(body)) + b"\n")
    assert cli("handoff", input=body + b"h" * (299 - len(body)) + b"\n").exit_code == 0
    assert len(events_named(repo, "task.handoff")) == 1
