"""What `hook session-start` costs (design §16: within 1.5x of python + `git status`): OpenSSL, datetime
and the subprocess module stay off its path, the shortcuts it takes give what the long way gives, and a
briefing reads no checkpoint it could not show."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from freezegun import freeze_time
from helpers import FIXTURES, MAJORDOMUS

from majordomus import brief, budget
from majordomus.lite import jsonbound, sha, spawn, textrules
from majordomus.store import reading, records
from majordomus.workspace import Workspace

PAYLOADS = {"claude": "claude-session-start-startup.json", "codex": "codex-session-start-startup.json",
            "gemini": "gemini-session-start-startup.json", "copilot": "copilot-session-start-new.json"}


@pytest.mark.parametrize("runtime", sorted(PAYLOADS))
def test_session_start_loads_neither_openssl_nor_datetime_nor_subprocess(cli: Any, repo: Path, runtime: str) -> None:
    """The whole briefing, records read and digests checked, `git status` run, a ledger event appended:
    with the interpreter's own SHA-256, timestamps as text and git started by posix_spawn. `hashlib` alone
    costs a hook 2-3 ms of a 30 ms floor, `subprocess` more."""
    cli("task", "start", "t1")
    assert cli("checkpoint", input="FIRST-NOTE of the task\n").exit_code == 0
    payload = (FIXTURES / "payloads" / PAYLOADS[runtime]).read_bytes()
    out = subprocess.run([sys.executable, "-X", "importtime", MAJORDOMUS, "hook", "session-start", "--runtime",
                          runtime], cwd=repo, input=payload, capture_output=True, check=False)
    assert out.returncode == 0 and b"FIRST-NOTE" in out.stdout  # it did the work
    imported = {line.split("|")[-1].strip() for line in out.stderr.decode().splitlines()
                if line.startswith("import time:")}
    assert "majordomus.brief" in imported
    assert not imported & {"hashlib", "_hashlib", "datetime", "_datetime", "subprocess", "threading", "signal"}


def test_sha256_is_the_same_digest_from_either_module(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sha, "_left", sha.SMALL_BYTES if sha._small is not None else 0)
    monkeypatch.setattr(sha, "_large", None)
    for data in (b"", b"abc", bytearray(b"abc"), memoryview(b"abcd")[:-1], "é".encode() * 500):
        assert sha.hexdigest(data) == hashlib.sha256(bytes(data)).hexdigest()
    assert sha._large is None  # small inputs: OpenSSL not needed yet
    big = b"y" * (sha.SMALL_BYTES + 1)  # past the budget: OpenSSL from here on, once
    assert sha.hexdigest(big) == hashlib.sha256(big).hexdigest()
    assert sha._large is not None
    assert sha.hexdigest(b"abc") == hashlib.sha256(b"abc").hexdigest()


def test_every_character_the_output_escapes_or_quotes_is_unprintable() -> None:
    """What lets escape and c_quote answer printable text without a regular expression: checked for every
    code point, so that a character added to a class (or a Unicode update) cannot slip past the shortcut."""
    printable = "".join(c for c in map(chr, range(0x110000)) if c.isprintable())
    assert textrules._BODY_ESCAPED.search(printable) is None
    assert textrules._QUOTE_NEEDED.search(printable) is None
    ascii_printable = "".join(c for c in map(chr, range(0x80)) if c.isprintable())
    assert textrules._LINE_ESCAPED.search(ascii_printable) is None
    # a one-line field's invisible characters are not all unprintable: there the shortcut takes ASCII only
    assert textrules._LINE_ESCAPED.search(printable) is not None


@pytest.mark.parametrize("text", ["plain", "main@3ae91f9 · clean", "tab\there", "two\nlines", "e\u0301",
                                  "zero\u200bwidth", "grapheme\u034fjoiner", "\u202eevil", "del\x7f", "cr\r",
                                  "nel\x85", '"quoted', "lone \udc80", "emoji \U0001f600", ""])
def test_the_shortcuts_give_what_the_rule_gives(text: str) -> None:
    for body in (False, True):
        pattern = textrules._BODY_ESCAPED if body else textrules._LINE_ESCAPED
        assert textrules.escape(text, body=body) == pattern.sub(textrules._visible, text)
    quoted = text if textrules._QUOTE_NEEDED.search(text) is None and not text.startswith('"') else \
        textrules.c_quote_bytes(text.encode("utf-8", "surrogateescape"), textrules._QUOTED_BYTES.search)
    assert textrules.c_quote(text) == quoted
    assert textrules.collapse(text) == " ".join(textrules._LINE_ESCAPED.sub(" ", text).split())


@pytest.mark.parametrize("value", ['"abc"', '""', '"a\\"b"', '"a\\\\b"', '"é · x"', '"\u00a0"', '"tab\there"',
                                   '"\u2028"', '"\ud800"', '"a"b"', '"x', '"', "0", "01", "12", "-1", "1.5", "1e3",
                                   "123456789", "12345678901", "null", "[]", "true", "١٢", " 1"])
def test_front_matter_values_read_without_the_decoder_are_what_it_reads(value: str) -> None:
    try:
        want: Any = jsonbound.loads(value)
    except ValueError:
        with pytest.raises(ValueError):
            records._json_scalar(value)
        return
    got = records._json_scalar(value)
    assert got == want and type(got) is type(want)


def test_a_briefing_in_utf16_units_reads_only_the_checkpoints_it_could_show(
        cli: Any, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Claude Code counts UTF-16 units (10,000 by default, within 24 KiB): a checkpoint older than the newest
    ones whose entries already pass the unit limit is never shown, so it is counted, not read — and the
    briefing is the same bytes as when every checkpoint up to the byte limit is read."""
    with freeze_time("2026-09-03T09:00:00Z"):
        cli("task", "start", "t1")
    for i in range(16):
        with freeze_time(f"2026-09-03T10:{i:02d}:00Z"):
            assert cli("checkpoint", input=f"CP{i:02d} " + "é" * 100 + "\n").exit_code == 0
    ws = Workspace.open(str(repo))
    room = budget.Room(24576, 1500)  # room in bytes for every checkpoint, in units for a few
    examined: list[str] = []
    examine = reading.examine

    def counted(ws: Any, rel: str) -> Any:
        examined.append(rel)
        return examine(ws, rel)

    monkeypatch.setattr(reading, "examine", counted)
    fitted = brief.compose(ws, "t1", room)
    bounded = len(examined)
    examined.clear()
    sources = brief.sources
    monkeypatch.setattr(brief, "sources", lambda *a, units=None, **k: sources(*a, **k))  # bytes only, as before
    unbounded = brief.compose(ws, "t1", room)
    assert fitted.text == unbounded.text and fitted.dropped == unbounded.dropped
    shown = sum(f"CP{i:02d} " in fitted.text for i in range(16))
    assert 0 < shown < 16 and f"{16 - shown} oldest checkpoints" in fitted.dropped[0]
    # Read until the entries read pass 1,500 units: their headings counted too, not only their bodies.
    body = len(f"CP00 {'é' * 100}")
    assert len(examined) == 16 and shown <= bounded < room.max_units // body + 1


# ---------------------------------------------------------------- git started without the subprocess module


def both(argv: list[str], cwd: Path | str = ".") -> tuple[tuple[int, bytes, bytes], tuple[int, bytes, bytes]]:
    """What spawn.run gives, and what subprocess.run gives the same command."""
    done = subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    return spawn.run(argv, str(cwd)), (done.returncode, done.stdout, done.stderr)


@pytest.mark.parametrize("script", [
    "printf out; printf err >&2; exit 3",  # both streams, kept apart; the exit code
    "head -c 300000 /dev/zero >&2; head -c 300000 /dev/zero",  # more than a pipe holds, stderr first
    "kill -9 $$",  # killed by a signal: -9, as subprocess says it
    "cat; echo read-nothing",  # stdin is /dev/null: no wait for a terminal
    "yes | head -c 3",  # SIGPIPE at its default: `yes` dies quietly instead of complaining
])
def test_spawn_gives_what_subprocess_gives(script: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    fast, slow = both(["sh", "-c", script])
    assert fast == slow


def test_spawn_passes_no_inherited_descriptor_and_runs_elsewhere_through_subprocess(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    r, w = os.pipe()
    os.dup2(w, 57, inheritable=True)  # as a parent process might leave one open for us
    try:
        code, out, _ = spawn.run(["sh", "-c", "ls /dev/fd"], str(tmp_path))
        assert code == 0 and b"0" in out.split() and b"57" not in out.split()
    finally:
        for fd in (r, w, 57):
            os.close(fd)
    other = tmp_path / "elsewhere"
    other.mkdir()
    fast, slow = both(["pwd"], other)
    assert fast == slow and fast[1].strip() == os.fsencode(other.resolve())
    with pytest.raises(FileNotFoundError):
        spawn.run(["no-such-program-anywhere"], str(tmp_path))


def test_spawn_with_a_standard_stream_closed_falls_back(tmp_path: Path) -> None:
    """A pipe would take the closed stream's number: subprocess, which handles that, runs the command."""
    code = "import os; os.close(0); from majordomus.lite import spawn; print(spawn.run(['sh', '-c', 'printf ok'], '.'))"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, check=True)
    assert done.stdout.strip() == b"(0, b'ok', b'')"
