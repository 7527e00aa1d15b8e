"""Shared fixtures: hermetic git, real repositories in tmp_path, the real console script."""

from __future__ import annotations

import gc
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

# The test processes make millions of short-lived objects (pytest's assertion rewriting, hypothesis): a
# collection of the youngest generation every 50,000 allocations instead of every 700 cuts the collection of
# the suite from 4.8 s to 4.2 s in each process. Only these processes: majordomus runs with Python's defaults.
gc.set_threshold(50_000, 20, 20)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
BIN = Path(sys.executable).parent
MAJORDOMUS = shutil.which("majordomus", path=str(BIN)) or shutil.which("majordomus")


# The hermetic git configuration. init.templateDir: a new repository gets an empty hooks/ directory and
# nothing else from git's template (no sample hooks), which keeps each test's scratch tree small.
TEMPLATE = Path(__file__).resolve().parent / "git-template"
GITCONFIG = ("[user]\n\tname = Test User\n\temail = test@example.com\n"
             f"[init]\n\tdefaultBranch = main\n\ttemplateDir = {TEMPLATE}\n"
             "[protocol \"file\"]\n\tallow = always\n")


# The files that take seconds each (`pytest --durations`), longest first. xdist (`--dist loadfile
# --no-loadscope-reorder`) hands files to its test processes in collection order, so these go first and
# each process ends on short files; by default it would sort files by their number of tests, which puts
# these few-test, long files last and leaves one process running them alone.
LONG_FILES = ("test_write_faults.py", "test_docs_blocks.py", "test_hostile_readers.py", "test_install.py", "test_sync.py", "test_mcp.py", "test_benchmark_smoke.py",
              "test_records.py", "test_sync_many.py", "test_completion.py", "test_sync_races.py",
              "test_precommit.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONG_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


@pytest.fixture(autouse=True)
def hermetic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fresh HOME and git config, fixed identity, and a working directory that is not this checkout."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(GITCONFIG)
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


@pytest.fixture(scope="session")
def templates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Made once per test process with real git, then copied per test: `plain/repo` (main, one commit), and
    `with-remote/repo` with its origin `with-remote/remote.git` (bare, main pushed)."""
    base = tmp_path_factory.mktemp("templates")
    (base / ".gitconfig").write_text(GITCONFIG)
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(HOME=str(base), GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=str(base / ".gitconfig"),
               GIT_AUTHOR_DATE="2026-01-01T00:00:00Z", GIT_COMMITTER_DATE="2026-01-01T00:00:00Z")

    def setup(cwd: Path, *args: str) -> None:
        subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)

    for name in ("plain", "with-remote"):
        (base / name).mkdir()
        setup(base / name, "init", "-q", "repo")
        (base / name / "repo" / "README").write_text("hello\n")
        setup(base / name / "repo", "add", "README")
        setup(base / name / "repo", "commit", "-q", "-m", "initial")
    setup(base / "with-remote", "init", "-q", "--bare", "remote.git")
    setup(base / "with-remote" / "repo", "remote", "add", "origin", str(base / "with-remote" / "remote.git"))
    setup(base / "with-remote" / "repo", "push", "-q", "-u", "origin", "main")
    return base


@pytest.fixture
def repo(request: pytest.FixtureRequest, tmp_path: Path, templates: Path) -> Path:
    """A repository on branch main with one commit (a copy of the session's template: a test that also
    asks for `remote` gets the copy whose origin is already pushed)."""
    path = tmp_path / "repo"
    if "remote" in request.fixturenames:
        shutil.copytree(templates / "with-remote" / "remote.git", tmp_path / "remote.git", symlinks=True)
        shutil.copytree(templates / "with-remote" / "repo", path, symlinks=True)
        config = path / ".git" / "config"
        origin = str(templates / "with-remote" / "remote.git")
        config.write_text(config.read_text().replace(origin, str(tmp_path / "remote.git")))
    else:
        shutil.copytree(templates / "plain" / "repo", path, symlinks=True)
    return path


@pytest.fixture
def remote(tmp_path: Path, repo: Path) -> Path:
    """A local bare repository as `origin` of `repo`, with main pushed (no network)."""
    return tmp_path / "remote.git"


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
                          timeout=timeout, check=False)


_IMPORT_PROBE = """
import json, sys
from majordomus import main
code = main.run(sys.argv[1:])
print(json.dumps({"code": code, "heavy": sorted(m for m in ("pygit2", "click", "yaml") if m in sys.modules)}))
"""


def import_probe(cwd: Path | str, *args: str, input: bytes = b"") -> dict[str, Any]:
    """`majordomus ARGS` in a fresh interpreter: its exit code, and which of pygit2, click and yaml it imported
    (design §16: a hot command imports none of them), as {"code": …, "heavy": [...]}."""
    import json

    done = subprocess.run([sys.executable, "-c", _IMPORT_PROBE, *args], cwd=cwd, input=input, capture_output=True, check=False)
    assert done.stdout.strip(), done.stderr
    return json.loads(done.stdout.decode().strip().splitlines()[-1])


class Result:
    """What one in-process run of `majordomus.main.run` left: exit code, stdout and stderr."""

    def __init__(self, exit_code: int, stdout: bytes, stderr: bytes) -> None:
        self.exit_code = exit_code
        self.stdout_bytes, self.stderr_bytes = stdout, stderr
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


def run_here(*args: str, cwd: Path | str, input: bytes | str | None = None, env: dict[str, str] | None = None,
             timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    """`run`'s twin for a test whose subject is not the process: `majordomus ARGS` in this process, with
    the same working directory, stdin and extra environment, and the same result (returncode, stdout and
    stderr as bytes). A run that outlives `timeout` (a read that blocks on a FIFO, say) fails the test
    instead of hanging the suite: SIGALRM interrupts the blocking call, and whatever the error boundary
    (or a fail-open hook) made of that, the test sees TimeoutError."""
    import signal

    late = TimeoutError(f"majordomus {' '.join(args)} still running after {timeout} s")
    fired: list[bool] = []

    def expired(signum: int, frame: Any) -> None:
        fired.append(True)
        raise late

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    previous = signal.signal(signal.SIGALRM, expired)
    outer, _ = signal.setitimer(signal.ITIMER_REAL, timeout)  # a timer already set (a test runner's) is kept
    began = time.monotonic()
    try:
        os.environ.update(env or {})
        os.chdir(cwd)
        result = invoke_main(list(args), input=input)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - began), 0.001))
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    if fired:
        raise late
    return subprocess.CompletedProcess(["majordomus", *args], result.exit_code, result.stdout_bytes,
                                       result.stderr_bytes)


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


# ---------------------------------------------------------------- shared helpers
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


def start_task_at(repo: Path, task: str = "t1", *options: str) -> None:
    """`majordomus task start TASK OPTIONS…` in `repo`, in-process, for a test without the `cli` fixture; it
    must succeed."""
    result = run_here("task", "start", task, *options, cwd=repo)
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
    """Run a command that the design refuses: its exit code, every word of its message on stderr, the
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
