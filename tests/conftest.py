"""The fixtures: hermetic git, real repositories in tmp_path, running majordomus, a handoff body.

The plain helpers they are built on live in `tests/helpers/` (a module, not a test module): tests import
them from there.
"""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import freezegun.api
import pytest
from helpers import GITCONFIG, HANDOFF_BODY, Result, git, run_here
from hypothesis import HealthCheck, settings

# The test processes make millions of short-lived objects (pytest's assertion rewriting, hypothesis): a
# collection of the youngest generation every 50,000 allocations instead of every 700 cuts the collection of
# the suite from 4.8 s to 4.2 s in each process. Only these processes: majordomus runs with Python's defaults.
gc.set_threshold(50_000, 20, 20)


# The files that take seconds each (`pytest --durations`), longest first. xdist (`--dist loadfile
# --no-loadscope-reorder`) hands files to its test processes in collection order, so these go first and
# each process ends on short files; by default it would sort files by their number of tests, which puts
# these few-test, long files last and leaves one process running them alone.
LONG_FILES = ("test_spec_write_faults.py", "test_docs_blocks.py", "test_spec_hostile_readers.py", "test_install.py", "test_sync.py", "test_mcp_server.py", "test_benchmark_smoke.py",
              "test_store_records.py", "test_sync_many.py", "test_cli_completion.py", "test_sync_races.py",
              "test_precommit.py")


def pytest_configure(config: pytest.Config) -> None:
    """In the controller of a run with test processes, before they start: rewrite the test modules' asserts
    once, two at a time, into pytest's cache of rewritten modules (`tests/__pycache__`, keyed by each
    source's hash). Every test process collects every module, and rewriting the asserts is most of that
    (about 3.5 s each on a fresh clone, where there is no cache yet); with the cache each process only loads
    them. Written even under PYTHONDONTWRITEBYTECODE, which would otherwise make every run pay again: the
    cache is pytest's, for these test files only. Any problem (another pytest's internals) only skips this."""
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", 0):
        return
    try:
        from _pytest.assertion import rewrite

        stale = [path for path in sorted(Path(__file__).parent.glob("*.py"))
                 if (path.name == "conftest.py" or path.name.startswith("test_"))
                 and rewrite._read_pyc(path, _cached(rewrite, path), lambda _: None) is None]
    except Exception:  # an optimisation only
        return
    if not stale:
        return
    from concurrent.futures import ProcessPoolExecutor

    _ahead.config = config
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(_rewrite_one, stale))


def _cached(rewrite: Any, path: Path) -> Path:
    return rewrite.get_cache_dir(path) / (path.name[:-3] + rewrite.PYC_TAIL)


class _ahead:
    config: pytest.Config | None = None


def _rewrite_one(path: Path) -> None:
    """In a forked worker of `pytest_configure`: rewrite one module and write its cached copy atomically
    (pytest's own writer: a temporary name, then a rename)."""
    from _pytest.assertion import rewrite

    config = _ahead.config
    assert config is not None
    try:
        source_hash, code = rewrite._rewrite_test(path, config)
        cached = _cached(rewrite, path)
        if rewrite.try_makedirs(cached.parent):
            rewrite._write_pyc(config.stash[rewrite.assertstate_key], code, source_hash, cached)
    except Exception:  # the test process rewrites it then, as it would have
        pass


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
    # PYTHONUNBUFFERED goes too: a console script runs as it does for a user, buffered; the tests whose
    # subject is the output stream walk both (tests/test_output_errors.py).
    for name in ("MAJORDOMUS_OWNER", "MAJORDOMUS_DEBUG", "NO_COLOR", "GIT_DIR", "GIT_WORK_TREE", "PYTHONUNBUFFERED"):
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


@pytest.fixture
def cli(repo: Path) -> Any:
    """Run majordomus in-process inside `repo` (or another directory via cwd=)."""

    def invoke(*args: str, input: str | bytes | None = None, cwd: Path | None = None) -> Result:
        return run_here("-C", str(cwd or repo), *args, input=input, text=True)

    return invoke


@pytest.fixture
def handoff_body() -> str:
    """A handoff body with the four sections design §7 requires (State, Decisions, Open items, Next
    actions), each with one line."""
    return HANDOFF_BODY


# freeze_time's start looks at every attribute of every imported module (about a thousand in a test process,
# 28 ms a start) for a name bound to a real clock function (`from time import time`), to patch it. Only
# majordomus and the tests can hold one that a test relies on: the others are not looked at. Which caller gets
# the real time (freezegun's ignore list, read from the call stack) is unchanged.
_module_attributes = getattr(freezegun.api, "_get_cached_module_attributes", None)
if _module_attributes is not None:
    def _ours_only(module: Any) -> Any:
        name = getattr(module, "__name__", None) or ""
        return _module_attributes(module) if name.startswith(("majordomus", "helpers", "test_", "conftest")) else []

    freezegun.api._get_cached_module_attributes = _ours_only


# No clock in a property: a test asserts behaviour, and speed is measured by `make bench`. Hypothesis's
# per-example deadline and its "input generation is slow" check are timings, and on a loaded two-core CI
# machine they fail a test whose rule held (seen: 2 examples in 2.1 s under load).
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
# `make mutation` runs each test once per mutant: the same examples every time.
settings.register_profile("mutation", parent=settings.get_profile("suite"), derandomize=True, database=None)
settings.load_profile("mutation" if os.environ.get("MAJORDOMUS_MUTATION") else "suite")
