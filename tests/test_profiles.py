"""The one reader of a committed profile (design §2a, §12): text a person writes, or nothing injected."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import FIXTURES, run_here, snapshot, start_task_at

from majordomus import profiles
from majordomus.lite import safeio

PAYLOAD = (FIXTURES / "payloads" / "claude-session-start-startup.json").read_bytes()


def _profile(repo: Path, data: bytes) -> Path:
    path = repo / ".ai" / "profiles" / "default.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _outside_state(repo: Path) -> dict[str, tuple[int, str]]:
    return {k: v for k, v in snapshot(repo).items() if not k.startswith(".ai/local/")}


def _context(repo: Path, runtime: str = "claude") -> str:
    result = run_here("hook", "session-start", *(["--runtime", runtime] if runtime != "claude" else []),
                      cwd=repo, input=PAYLOAD)
    assert result.returncode == 0, result.stderr
    if runtime == "claude":
        return str(json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"])
    return result.stdout.decode()


@pytest.mark.parametrize("data, said", [
    (b"Role: \xff\xfe bad\n", "is not valid UTF-8 (line 1, byte 6)"),
    (b"Role: ok\nred \x1b[31m text\n", "a control character U+001B on line 2"),
    (b"Role: \x00 nul\n", "a control character U+0000 on line 1"),
    (b"Role: one\xe2\x80\xa8two\n", "a line break U+2028 on line 1"),
    (b"Role: \xed\xa0\x80 surrogate\n", "is not valid UTF-8"),
])
def test_a_profile_that_is_not_text_is_never_injected_and_doctor_fails_it(repo: Path, data: bytes, said: str) -> None:
    start_task_at(repo, "p")
    path = _profile(repo, data)
    before = _outside_state(repo)
    with pytest.raises(profiles.BadProfile) as caught:
        profiles.read(str(path))
    assert said in caught.value.message
    context = _context(repo)
    first = context.split("\n\n")[0]
    assert first.startswith("majordomus: identity not loaded: ") and said in first and "\n" not in first
    assert "Role" not in context and "\ufffd" not in context and "\x1b" not in context and "\x00" not in context
    assert _outside_state(repo) == before  # the hook's own bookkeeping aside, nothing is written
    doctor = run_here("doctor", "--json", cwd=repo)
    assert doctor.returncode == 1
    found = [f for f in json.loads(doctor.stdout)["findings"] if f["code"] == "profile.unsafe"]
    assert found and said in found[0]["message"], found


def test_a_profile_at_the_edge_is_read_as_written(repo: Path) -> None:
    """Tab, CRLF, a leading byte-order mark and non-ASCII letters are what editors write: read as text."""
    start_task_at(repo, "p")
    path = _profile(repo, "\ufeffRole: réviseur\r\n\tcareful\r\n".encode())
    assert profiles.read(str(path)) == "Role: réviseur\n\tcareful"
    assert _context(repo).startswith("Role: réviseur\n\tcareful")
    assert json.loads(_context(repo, "gemini"))["hookSpecificOutput"]["additionalContext"].count("réviseur") == 1
    doctor = json.loads(run_here("doctor", "--json", cwd=repo).stdout)
    assert not [f for f in doctor["findings"] if f["code"] == "profile.unsafe"]


def test_a_link_is_still_refused_before_its_text_is_looked_at(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_bytes(b"Role: from outside\n")
    path = _profile(repo, b"")
    path.unlink()
    path.symlink_to(outside)
    with pytest.raises(safeio.UnsafeFile) as caught:
        profiles.read(str(path))
    assert not isinstance(caught.value, profiles.BadProfile)
