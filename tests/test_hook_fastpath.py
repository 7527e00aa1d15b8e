"""The hooks run at every session start and compaction: they import no pygit2, click or yaml (SPEC §12, §16)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, MAJORDOMUS, run, state_dir

HEAVY = ("pygit2", "click", "yaml")
PROBE = """
import json, sys
sys.argv = ["majordomus"] + json.loads(sys.argv[1])
from majordomus import main
code = main.run()
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("pygit2", "click", "yaml", "_pygit2", "_yaml"))
print(json.dumps({"code": code, "heavy": heavy}))
"""


def probe(repo: Path, argv: list[str], payload: bytes) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv)], cwd=repo, input=payload,
                         capture_output=True, check=True)
    return json.loads(out.stdout.decode().strip().splitlines()[-1])


@pytest.fixture
def active(repo: Path) -> Path:
    (repo / ".ai").mkdir()
    (repo / ".ai" / "config.yaml").write_text("journal:\n  rotate_bytes: 100000\n")  # a config file to read
    assert run("task", "start", "t1", cwd=repo).returncode == 0
    return repo


def test_compact_imports_nothing_heavy(active):
    payload = (FIXTURES / "payloads" / "claude-pre-compact.json").read_bytes()
    got = probe(active, ["hook", "compact", "--phase", "pre", "--runtime", "claude"], payload)
    assert got == {"code": 0, "heavy": []}
    journal = state_dir(active) / "context" / "t1" / "compact-events.jsonl"
    assert json.loads(journal.read_text())["trigger"] == "auto"  # it did the work, not just nothing


def test_compact_with_dash_C_and_bad_input_imports_nothing_heavy(active, tmp_path):
    got = probe(tmp_path, ["-C", str(active), "hook", "compact", "--phase", "post", "--runtime", "codex"],
                b"\x00garbage")
    assert got == {"code": 0, "heavy": []}
    got = probe(active, ["hook", "compact", "--phase", "nope"], b"")
    assert got == {"code": 0, "heavy": []}


def test_the_probe_can_see_heavy_imports(active):
    # The same probe on commands that need them must see pygit2 and click: the checks here can fail.
    got = probe(active, ["task", "show"], b"")
    assert "click" in got["heavy"]
    got = probe(active, ["doctor"], b"")
    assert "pygit2" in got["heavy"]


def test_console_script_import_trace(active):
    """The installed console script, traced by the interpreter itself (-X importtime)."""
    out = subprocess.run([sys.executable, "-X", "importtime", MAJORDOMUS, "hook", "compact", "--phase", "pre",
                          "--runtime", "claude"], cwd=active, input=b"{}", capture_output=True)
    assert out.returncode == 0
    imported = {line.split("|")[-1].strip().split(".")[0] for line in out.stderr.decode().splitlines()
                if line.startswith("import time:")}
    assert "majordomus" in imported
    assert not imported & {"pygit2", "_pygit2", "click", "yaml", "_yaml"}


def test_help_is_answered_without_recording(active):
    result = run("hook", "compact", "--help", cwd=active)
    assert result.returncode == 0 and b"--phase" in result.stdout
    assert not (state_dir(active) / "context" / "t1" / "compact-events.jsonl").exists()


@pytest.mark.parametrize("hook_name", ["session-start", "stop"])
def test_session_hooks_import_nothing_heavy(active, hook_name):
    """SPEC §16: session-start and stop run the user's git, not pygit2, and no click or yaml."""
    payload = (FIXTURES / "payloads" / f"claude-{'session-start-compact' if hook_name != 'stop' else 'stop'}.json")
    got = probe(active, ["hook", hook_name], payload.read_bytes())
    assert got == {"code": 0, "heavy": []}
    events = [json.loads(line)["event"] for line in (state_dir(active) / "ledger.jsonl").read_text().splitlines()]
    assert events[-1] == ("session.start" if hook_name == "session-start" else "session.stop")  # it did the work
