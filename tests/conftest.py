"""Shared fixtures: hermetic git, real repositories in tmp_path, the real console script."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
BIN = Path(sys.executable).parent
MAJORDOMUS = shutil.which("majordomus", path=str(BIN)) or shutil.which("majordomus")


@pytest.fixture(autouse=True)
def hermetic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fresh HOME and git config, fixed identity, and a working directory that is not this checkout."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test User\n\temail = test@example.com\n"
        "[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_EDITOR", "false")
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
    for name in ("MAJORDOMUS_OWNER", "MAJORDOMUS_DEBUG", "NO_COLOR", "GIT_DIR", "GIT_WORK_TREE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    # libgit2 reads HOME once, when pygit2 is first imported: point its search paths here too, so that
    # in-process calls see the same hermetic configuration as subprocesses.
    import pygit2

    empty = tmp_path / "no-config"
    empty.mkdir()
    levels = pygit2.enums.ConfigLevel
    pygit2.settings.search_path[levels.GLOBAL] = str(home)
    pygit2.settings.search_path[levels.XDG] = str(empty)
    pygit2.settings.search_path[levels.SYSTEM] = str(empty)


def git(cwd: Path | str, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return out.stdout.strip()


def commit_file(repo: Path, name: str, content: str, message: str | None = None) -> str:
    path = repo / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", message or f"add {name}")
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository on branch main with one commit."""
    path = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(path))
    commit_file(path, "README", "hello\n", "initial")
    return path


@pytest.fixture
def remote(tmp_path: Path, repo: Path) -> Path:
    """A local bare repository as `origin` of `repo`, with main pushed (no network)."""
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    git(repo, "push", "-q", "-u", "origin", "main")
    return bare


@pytest.fixture
def unborn_repo(tmp_path: Path) -> Path:
    path = tmp_path / "unborn"
    git(tmp_path, "init", "-q", str(path))
    return path


def run(*args: str, cwd: Path | str, input: bytes | str | None = None, env: dict[str, str] | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess[Any]:
    """The real console script in a subprocess."""
    assert MAJORDOMUS, "the majordomus console script is not installed next to this python"
    data = input.encode() if isinstance(input, str) else input
    full_env = dict(os.environ, **(env or {}))
    return subprocess.run([MAJORDOMUS, *args], cwd=cwd, input=data, capture_output=True, env=full_env,
                          timeout=timeout)


class Result:
    """What one in-process run of `majordomus.main.run` left: exit code, stdout and stderr."""

    def __init__(self, exit_code: int, stdout: bytes, stderr: bytes) -> None:
        self.exit_code = exit_code
        self.stdout_bytes = stdout
        self.stdout = stdout.decode("utf-8", "replace")
        self.stderr = stderr.decode("utf-8", "replace")
        self.output = self.stdout

    def __repr__(self) -> str:
        return f"Result({self.exit_code}, stdout={self.stdout[:200]!r}, stderr={self.stderr[:200]!r})"


def invoke_main(args: list[str], input: bytes | str | None = None) -> Result:
    """`majordomus ARGS` in this process: stdin, stdout, stderr and the working directory isolated."""
    import io

    from majordomus import main

    data = input.encode() if isinstance(input, str) else (input or b"")
    out, err = io.BytesIO(), io.BytesIO()
    saved = sys.stdin, sys.stdout, sys.stderr
    cwd = os.getcwd()
    streams = (io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"),
               io.TextIOWrapper(out, encoding="utf-8", write_through=True),
               io.TextIOWrapper(err, encoding="utf-8", write_through=True))
    sys.stdin, sys.stdout, sys.stderr = streams
    try:
        code = main.run(list(args))
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
        os.chdir(cwd)
        for stream in streams:
            stream.flush()
            stream.detach()  # keep the BytesIO open when the wrapper goes
    return Result(code, out.getvalue(), err.getvalue())


@pytest.fixture
def cli(repo: Path) -> Any:
    """Run majordomus in-process inside `repo` (or another directory via cwd=)."""

    def invoke(*args: str, input: str | bytes | None = None, cwd: Path | None = None) -> Result:
        return invoke_main(["-C", str(cwd or repo), *args], input=input)

    return invoke


def snapshot(root: Path) -> dict[str, tuple[int, str]]:
    """Every file below root (outside .git), with its mode and digest: to prove nothing was written."""
    out: dict[str, tuple[int, str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            p = os.path.join(dirpath, name)
            if os.path.islink(p):
                out[os.path.relpath(p, root)] = (0, "link:" + os.readlink(p))
                continue
            if not os.path.isfile(p):  # a FIFO or a device: never opened (it could block, or never end)
                out[os.path.relpath(p, root)] = (os.lstat(p).st_mode, "special")
                continue
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = (os.stat(p).st_mode, hashlib.sha256(fh.read()).hexdigest())
        for name in dirnames:
            out[os.path.relpath(os.path.join(dirpath, name), root) + "/"] = (0, "dir")
    return out


def state_dir(repo: Path) -> Path:
    return repo / ".ai" / "local" / "state"


# ---------------------------------------------------------------- shared helpers (issue 15)
# One of each, instead of a copy per test file: starting a task, the four-section handoff body, reading
# the ledger. Each is strict, so that a helper can never hide what a test is about.

HANDOFF_BODY = """## State
The regression test fails; the fix in normalise() is half done.

## Decisions
Normalise at the edge.

## Open items
Does the IdP ever send uppercase hosts?

## Next actions
Finish normalise(), run the suite.
"""


def start_task(cli: Any, task: str = "t1", *options: str, cwd: Path | None = None) -> Result:
    """`majordomus task start TASK OPTIONS…` in-process through the `cli` fixture; it must succeed."""
    result = cli("task", "start", task, *options, cwd=cwd)
    assert result.exit_code == 0, result
    return result


def start_task_process(repo: Path, task: str = "t1", *options: str) -> None:
    """`majordomus task start` through the real console script; it must succeed."""
    result = run("task", "start", task, *options, cwd=repo)
    assert result.returncode == 0, result.stderr


def ledger_bytes(repo: Path) -> bytes:
    """The ledger's exact bytes (b"" when there is none yet): what a refusal must leave untouched."""
    path = state_dir(repo) / "ledger.jsonl"
    return path.read_bytes() if path.exists() else b""


def ledger_events(repo: Path) -> list[dict[str, Any]]:
    """Every event of the ledger, in order. Strict: a line that is not one JSON object fails the test."""
    import json

    events = []
    for number, line in enumerate(ledger_bytes(repo).splitlines(), 1):
        event = json.loads(line)
        assert isinstance(event, dict), f"ledger line {number} is not an object"
        events.append(event)
    return events


def events_named(repo: Path, name: str) -> list[dict[str, Any]]:
    return [event for event in ledger_events(repo) if event["event"] == name]


def records_in(repo: Path, kind: str = "checkpoints") -> list[str]:
    """The names of the records stored under their final names (no temporary files), sorted."""
    directory = state_dir(repo) / kind
    if not directory.exists():
        return []
    return sorted(name for name in os.listdir(directory) if name.endswith(".md") and not name.startswith("."))


def assert_refused(cli: Any, repo: Path, args: tuple[str, ...] | list[str], code: int, *words: str,
                   input: str | bytes | None = None, cwd: Path | None = None) -> Result:
    """Run a command that SPEC refuses: its exit code, every word of its message on stderr, the
    `majordomus: … / hint: …` shape of an error, and nothing written anywhere (the whole repository,
    ledger bytes included)."""
    before, ledger_before = snapshot(repo), ledger_bytes(repo)
    result = cli(*args, input=input, cwd=cwd)
    assert result.exit_code == code, result
    for word in words:
        assert word in result.stderr, (word, result.stderr)
    assert result.stderr.startswith("majordomus: "), result.stderr
    assert result.stdout == "", result.stdout
    assert ledger_bytes(repo) == ledger_before
    assert snapshot(repo) == before
    return result


if os.environ.get("MAJORDOMUS_MUTATION"):
    # `make mutation` runs each test once per mutant: the same examples every time, and no deadline
    # (a trampolined function is slower; a deadline would count as a kill that no rule made).
    from hypothesis import settings as _settings

    _settings.register_profile("mutation", deadline=None, derandomize=True, database=None)
    _settings.load_profile("mutation")
