"""The benchmark script must keep working: a tiny run measures every row, against design §16's floors and
budgets, and the scenarios it generates are what the rows say they are.

No figure is asserted (machines are noisy); what is proven is that `benchmarks/run.py` runs end to end and
measures (never skips) one row for every measurement design §16 asks for, each against the floor design §16
names, fed the same stdin in the same repository; that the 100,000-file scenario (here 200 files) really
has git's untracked cache; and that the store it generates in bulk reads as a store the CLI wrote: the hash
chain verifies, every record is listed, and the task points at its newest.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import BIN, MAJORDOMUS

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "run.py"
GIT = "python+git status"  # design §16: the interpreter plus one `git status --porcelain=v2 -z --branch ...`
SCRIPT_FLOOR = "python -c 'import re, sys'"  # design §16: a console script's own floor
SHA = "sha256sum of the records"
LOOP = "json.loads loop"
SESSION = "hook session-start --runtime claude"


def _scaling(command: str) -> list[tuple[str, str, str, float | None]]:
    return [(command, "10 records", "(base)", None), (command, "20 records", "same @10", None),
            (command, "50 records", "same @10", 1.15)]


# (command, at, floor, budget): the budgets are design §16's, at the smoke run's sizes (records 10/20/50
# for 10/1,000/100,000; 100 files for 20,000; 200 for 100,000; 20 records for 10,000).
ROWS = [
    ("checkpoint", "small repo", GIT, 1.5),
    ("checkpoint", "100-file repo, dirty", GIT, 1.3),
    ("checkpoint", "200-file repo, dirty, untracked cache", GIT, 1.3),
    *_scaling("checkpoint --show"),
    *_scaling("check"),
    *_scaling("checkpoint (write)"),
    *_scaling("post-commit hook: check --checkpoint"),
    ("post-commit hook: check --checkpoint", "10 records", SCRIPT_FLOOR, 1.5),
    ("checkpoint --list", "50 records", SHA, 2.0),
    ("doctor", "50 records", SHA, 2.0),
    ("ledger --verify", "500 events", LOOP, 1.5),
    ("ledger --json", "500 events", LOOP, 1.5),
    ("hook compact --phase pre --runtime claude", "10 records", SCRIPT_FLOOR, 1.25),
    ("hook stop", "10 records", SCRIPT_FLOOR, None),
    (SESSION, "10 records, small repo", GIT, 1.5),
    (SESSION, "100-file repo, 20 records", GIT, 1.5),
    ("hook session-start --runtime gemini", "10 records, small repo", GIT, 1.5),
    ("hook session-start --runtime copilot", "10 records, small repo", GIT, 1.5),
    *_scaling(SESSION),
    *_scaling("brief"),
    ("search (no match)", "50 records", "grep -rli", 2.0),
    ("search (every record matches)", "50 records", "grep -rli", 2.0),
]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], dict, Path]:
    out = tmp_path_factory.mktemp("bench")
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run([sys.executable, str(SCRIPT), "--smoke", "--repeat", "1", "--quiet", "--keep",
                           "--dir", str(out), "--json", str(out / "result.json")],
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    data = json.loads((out / "result.json").read_text())
    return done, data, Path(data["scratch"])


def test_every_row_is_measured_once_against_its_spec_floor_and_budget(smoke: tuple) -> None:
    done, data, _ = smoke
    got = [(row["command"], row["at"], row["floor"], row["budget"]) for row in data["rows"]]
    assert got == ROWS
    table = done.stdout.split("\nReproduce")[0].splitlines()
    cells = [re.split(r"\s{2,}", line.strip()) for line in table if re.match(r"\s*\d+\s{2}", line)]
    assert [(c[1], c[2]) for c in cells] == [(r[0], r[1]) for r in ROWS]
    for row in data["rows"]:
        assert row["status"] == "ok", row
        assert row["runs"] == 1 and row["median_s"] > 0 and row["exits"], row
        if row["floor"] != "(base)":
            assert row["floor_median_s"] > 0 and row["ratio"] > 0, row
        if row["budget"] is not None:
            assert row["verdict"] == "met" or row["verdict"].startswith("NOT met"), row
    assert "budgets:" in done.stdout and "total run time" in done.stdout


def test_floors_run_what_spec_names_in_the_same_repository_with_the_same_stdin(smoke: tuple) -> None:
    _, data, scratch = smoke
    status = ["git", "status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all"]
    judged = [row for row in data["rows"] if row["floor"] in (GIT, SCRIPT_FLOOR)]
    assert len(judged) == 10  # checkpoint x3, post-commit, compact, stop, session-start x2, gemini, copilot
    for row in judged:
        run, floor = row["run"], row["floor_run"]
        assert run["argv"][0] == MAJORDOMUS or Path(run["argv"][0]).name == "majordomus"
        assert floor["cwd"] == run["cwd"] and floor["stdin"] == run["stdin"], row
        assert floor["argv"][1] == "-c", row
        code = floor["argv"][2]
        if row["floor"] == GIT:
            assert code.startswith("import subprocess, sys; sys.stdin.buffer.read();"), code
            assert json.dumps(status) in code and code.count("subprocess.run(") == 1, code
            assert run["stdin"] is not None  # checkpoint: the note; session-start: the payload
        else:
            assert code == "import re, sys; sys.stdin.buffer.read()"
    # the floor really runs git there: fed a directory that is no repository, it fails (and the row with it)
    floor = next(row for row in judged if row["floor"] == GIT)["floor_run"]
    outside = subprocess.run(floor["argv"], cwd=scratch / "home", stdin=subprocess.DEVNULL, capture_output=True,
                             env=dict(os.environ, GIT_CEILING_DIRECTORIES=str(scratch)), check=False)
    assert outside.returncode != 0 and b"not a git repository" in outside.stderr


def test_the_large_work_trees_are_as_the_rows_say(smoke: tuple) -> None:
    _, data, scratch = smoke
    env = dict(os.environ, HOME=str(scratch / "home"), GIT_CONFIG_GLOBAL=str(scratch / "home" / ".gitconfig"),
               GIT_CONFIG_NOSYSTEM="1")

    def git(cwd: Path, *args: str) -> str:
        return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout

    cached = scratch / "files-200-untracked-cache"
    assert git(cached, "config", "--get", "core.untrackedCache").strip() == "true"
    index = (cached / ".git" / "index").read_bytes()
    assert b"UNTR" in index  # the untracked-cache extension is in the index, as `update-index` leaves it
    for repo, files in ((scratch / "files-100", 100), (cached, 200)):
        assert len([p for p in git(repo, "ls-files").splitlines() if p.startswith("src/")]) == files
        lines = git(repo, "status", "--porcelain").splitlines()
        assert sum(line.startswith(" M ") for line in lines) == 3, lines
        assert sum(line.startswith("?? ") for line in lines) == 3, lines
    session = scratch / "files-100-store-20"
    assert len([p for p in git(session, "ls-files").splitlines() if p.startswith("src/")]) == 100
    assert len(os.listdir(session / ".ai" / "local" / "state" / "checkpoints")) == 20
    assert {row["run"]["cwd"] for row in data["rows"] if "100-file repo, 20 records" in row["at"]} == {str(session)}


def test_every_row_prints_the_command_that_reproduces_it(smoke: tuple) -> None:
    done, data, _ = smoke
    repro = done.stdout.split("\nReproduce", 1)[1]
    assert "export B=" in repro
    for i, _row in enumerate(data["rows"], 1):
        assert any(line.strip().startswith(f"{i}  cd ") for line in repro.splitlines()), i
    assert "majordomus checkpoint --show" in repro and "sha256sum" in repro and "json.loads" in repro
    assert '"git", "status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all"' in repro
    assert "import re, sys" in repro


def test_the_generated_store_reads_as_one_the_cli_wrote(smoke: tuple) -> None:
    _, _, scratch = smoke
    store = scratch / "store-50"
    env = dict(os.environ, HOME=str(scratch / "home"), GIT_CONFIG_GLOBAL=str(scratch / "home" / ".gitconfig"),
               GIT_CONFIG_NOSYSTEM="1")

    def mj(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([MAJORDOMUS, *args], cwd=store, env=env, capture_output=True, text=True, check=False)

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
    # the history is in the past and in order: the task started before its first record (so that the briefing
    # and session-start read its records, as they would in a real store), and the briefing shows the newest
    assert task["started_at"] < min(item["timestamp"] for item in listed if item["task"] == "bench")
    briefing = mj("brief").stdout
    assert f"- last record: checkpoint at {listed[0]['timestamp']}" in briefing
    assert "# Checkpoints, newest first" in briefing and "none yet" not in briefing
    assert subprocess.run(["git", "status", "--porcelain"], cwd=store, capture_output=True, text=True, check=False).stdout == ""
