"""The benchmark script must keep working: a tiny run prints every row, and its generated store is sound.

No figure is asserted (machines are noisy); what is proven is that `benchmarks/run.py` runs end to end,
prints one row for every measurement issue 6 asks for, and that the store it generates in bulk reads as a
store the CLI wrote: the hash chain verifies, every record is listed, and the task points at its newest.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BIN, MAJORDOMUS

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "run.py"
ROWS = [
    ("checkpoint", "small repo"),
    ("checkpoint", "100-file repo, dirty"),
    *[(command, f"{n} records") for command in ("checkpoint --show", "check", "checkpoint (write)",
                                                 "post-commit hook: check --checkpoint") for n in (10, 20, 50)],
    ("checkpoint --list", "50 records"),
    ("doctor", "50 records"),
    ("ledger --verify", "500 events"),
    ("ledger --json", "500 events"),
    ("hook compact --phase pre --runtime claude", "10 records"),
    ("hook session-start", "10 records"),
    ("hook session-start", "50 records"),
]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], dict, Path]:
    if not SCRIPT.exists():
        pytest.skip("benchmarks/ is not part of this checkout")
    out = tmp_path_factory.mktemp("bench")
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run([sys.executable, str(SCRIPT), "--smoke", "--repeat", "1", "--quiet", "--keep",
                           "--dir", str(out), "--json", str(out / "result.json")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    data = json.loads((out / "result.json").read_text())
    return done, data, Path(data["scratch"])


def test_every_row_is_printed_once_with_a_verdict(smoke: tuple) -> None:
    done, data, _ = smoke
    got = [(row["command"], row["at"]) for row in data["rows"]]
    assert got == ROWS
    table = done.stdout.split("\nReproduce")[0].splitlines()
    cells = [re.split(r"\s{2,}", line.strip()) for line in table if re.match(r"\s*\d+\s{2}", line)]
    assert [(c[1], c[2]) for c in cells] == ROWS
    for row in data["rows"]:
        assert row["status"] == "ok", row
        assert row["runs"] == 1 and row["median_s"] > 0 and row["exits"], row
        if row["budget"] is not None:
            assert row["verdict"] == "met" or row["verdict"].startswith("NOT met"), row
    assert "budgets:" in done.stdout and "total run time" in done.stdout


def test_every_row_prints_the_command_that_reproduces_it(smoke: tuple) -> None:
    done, data, _ = smoke
    repro = done.stdout.split("\nReproduce", 1)[1]
    assert "export B=" in repro
    for i, row in enumerate(data["rows"], 1):
        assert any(line.strip().startswith(f"{i}  cd ") for line in repro.splitlines()), i
    assert "majordomus checkpoint --show" in repro and "sha256sum" in repro and "json.loads" in repro


def test_the_generated_store_reads_as_one_the_cli_wrote(smoke: tuple) -> None:
    _, _, scratch = smoke
    store = scratch / "store-50"
    env = dict(os.environ, HOME=str(scratch / "home"), GIT_CONFIG_GLOBAL=str(scratch / "home" / ".gitconfig"),
               GIT_CONFIG_NOSYSTEM="1")

    def mj(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([MAJORDOMUS, *args], cwd=store, env=env, capture_output=True, text=True)

    verified = mj("ledger", "--verify", "--json")
    assert verified.returncode == 0, verified.stdout
    report = json.loads(verified.stdout)
    assert report["ok"] and report["dropped_lines"] == 0
    listed = json.loads(mj("checkpoint", "--list", "--json").stdout)
    records = sorted(os.listdir(store / ".ai" / "local" / "state" / "checkpoints"))
    assert len(listed) == len(records) >= 50
    events = json.loads(mj("ledger", "--json").stdout)["events"]
    by_path = {e["path"]: e["sha256"] for e in events if e["event"] == "task.checkpoint"}
    assert {f"checkpoints/{name}" for name in records} == set(by_path)
    for item in listed:
        assert by_path[f"checkpoints/{item['name']}"] == item["sha256"]
    task = json.loads(mj("task", "show", "--json").stdout)
    assert task["id"] == "bench" and task["status"] == "active"
    assert Path(listed[0]["path"]).name == Path(task["checkpoint"]).name  # the task points at its newest
    assert mj("check").returncode == 0  # fresh, as right after a commit
    assert subprocess.run(["git", "status", "--porcelain"], cwd=store, capture_output=True, text=True).stdout == ""
