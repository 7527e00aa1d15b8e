"""The `lite` layer answers from plain files what git itself answers: where the repository is, which
branch, where the state lives, which task is active; and it imports nothing outside the standard library."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import commit_file, git, run_here

from majordomus import config
from majordomus.errors import EnvironmentProblem
from majordomus.lite import active, dotgit, limits, names


def git_says(cwd: Path, env: dict[str, str] | None = None) -> tuple[str, str | None, str]:
    """(top of the work tree, branch or None, common git dir) as git itself reports them."""
    def ask(*args: str, ok: bool = False) -> str:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                              env=dict(os.environ, **(env or {})), check=False)
        assert done.returncode == 0 or ok, done.stderr
        return done.stdout.strip()
    top = ask("rev-parse", "--show-toplevel")
    branch = ask("symbolic-ref", "--short", "-q", "HEAD", ok=True) or None
    common = ask("rev-parse", "--path-format=absolute", "--git-common-dir")
    return os.path.realpath(top), branch, os.path.realpath(common)


def assert_as_git(cwd: Path, env: dict[str, str] | None = None) -> dotgit.Place:
    place = dotgit.locate(str(cwd), dict(os.environ, **(env or {})))
    assert place is not None
    assert (place.worktree, place.branch, place.common_dir) == git_says(cwd, env)
    return place


def test_plain_repository_and_subdirectory(repo):
    (repo / "a" / "b").mkdir(parents=True)
    assert assert_as_git(repo).state_root == str(repo / ".ai" / "local" / "state")
    assert assert_as_git(repo / "a" / "b").worktree == str(repo)


def test_unborn_and_detached(unborn_repo, repo):
    assert assert_as_git(unborn_repo).branch == "main"
    commit_file(repo, "x", "1")
    git(repo, "checkout", "-q", "--detach")
    assert assert_as_git(repo).branch is None


def test_linked_worktree_shares_the_main_state(repo, tmp_path):
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(linked))
    (linked / "sub").mkdir()
    place = assert_as_git(linked / "sub")
    assert place.branch == "feature" and place.state_root == str(repo / ".ai" / "local" / "state")
    assert place.main_worktree == str(repo)


def test_bare_main_worktree_keeps_state_in_the_common_dir(repo, tmp_path):
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    linked = tmp_path / "wt"
    git(bare, "worktree", "add", "-q", str(linked), "main")
    place = assert_as_git(linked)
    assert place.state_root == str(bare / "majordomus" / "local" / "state")
    assert place.config_root == str(linked)


def test_separate_git_dir(tmp_path):
    work, gitdir = tmp_path / "work", tmp_path / "store.git"
    git(tmp_path, "init", "-q", "--separate-git-dir", str(gitdir), str(work))
    commit_file(work, "f", "x")
    assert assert_as_git(work).worktree == str(work)


def test_symlinked_cwd_resolves_like_git(repo, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(repo)
    assert assert_as_git(link).worktree == str(repo)


def test_git_dir_and_work_tree_from_another_directory(repo, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"GIT_DIR": str(repo / ".git"), "GIT_WORK_TREE": str(repo)}
    place = assert_as_git(elsewhere, env)
    assert place.worktree == str(repo) and place.git_env == {"GIT_DIR": str(repo / ".git"), "GIT_WORK_TREE": str(repo)}


def test_git_dir_alone_makes_the_current_directory_the_top(repo, tmp_path):
    other = tmp_path / "other"
    git(tmp_path, "init", "-q", str(other))
    env = {"GIT_DIR": str(repo / ".git")}
    place = dotgit.locate(str(other), dict(os.environ, **env))
    assert place is not None and place.worktree == str(other) and place.gitdir == str(repo / ".git")
    assert place.state_root == str(other / ".ai" / "local" / "state")


def test_outside_any_repository_and_in_a_bare_one(tmp_path):
    (tmp_path / "plain").mkdir()
    assert dotgit.locate(str(tmp_path / "plain")) is None
    git(tmp_path, "init", "-q", "--bare", str(tmp_path / "b.git"))
    assert dotgit.locate(str(tmp_path / "b.git")) is None


def test_a_fifo_for_HEAD_does_not_block(repo):
    head = repo / ".git" / "HEAD"
    head.unlink()
    os.mkfifo(head)
    assert dotgit.locate(str(repo)) is None  # not a usable git directory; no wait


# ---------------------------------------------------------------- the one reader of active.json


def test_active_task_per_worktree_and_branch(repo, tmp_path):
    place = dotgit.locate(str(repo))
    assert active.active_id(place.state_root, place.worktree, place.branch) is None
    assert run_here("task", "start", "t-1.x", cwd=repo).returncode == 0
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "other", str(linked))
    assert run_here("task", "start", "t2", cwd=linked).returncode == 0
    for where, expected in ((repo, "t-1.x"), (linked, "t2")):
        here = dotgit.locate(str(where))
        assert active.active_id(here.state_root, here.worktree, here.branch) == expected
    git(repo, "checkout", "-q", "-b", "elsewhere")
    here = dotgit.locate(str(repo))
    assert active.active_id(here.state_root, here.worktree, here.branch) is None


@pytest.mark.parametrize("value", ["../../escape", "/etc", "", 7, None, ["t1"], "abc\n", "t1/../x"])
def test_an_index_naming_anything_but_a_task_id_is_refused_whole(repo, value):
    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    place = dotgit.locate(str(repo))
    index_path = Path(place.state_root) / "active.json"
    index = json.loads(index_path.read_text())
    index[active.slot("/some/other/worktree", "main")] = value
    index_path.write_text(json.dumps(index))
    with pytest.raises(active.CorruptIndex) as caught:
        active.read(place.state_root)
    assert caught.value.code == 12 and str(index_path) in caught.value.message


@pytest.mark.parametrize("content", ["{torn", "[]", '{"not a slot": "t1"}'])
def test_a_broken_index_is_an_environment_error(repo, content):
    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    place = dotgit.locate(str(repo))
    (Path(place.state_root) / "active.json").write_text(content)
    with pytest.raises(active.CorruptIndex):
        active.read(place.state_root)


@pytest.mark.parametrize("make", ["fifo", "symlink", "directory"])
def test_an_index_that_is_not_a_regular_file_is_refused_without_waiting(repo, tmp_path, make):
    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    place = dotgit.locate(str(repo))
    path = Path(place.state_root) / "active.json"
    path.unlink()
    if make == "fifo":
        os.mkfifo(path)
    elif make == "symlink":
        (tmp_path / "real.json").write_text("{}")
        path.symlink_to(tmp_path / "real.json")
    else:
        path.mkdir()
    with pytest.raises(EnvironmentProblem) as caught:
        active.read(place.state_root)
    assert str(path) in caught.value.message


# ---------------------------------------------------------------- names: one grammar each, full match


@pytest.mark.parametrize("value,ok", [("a", True), ("a" * 64, True), ("a" * 65, False), ("abc\n", False),
                                      ("Abc", False), ("-a", False), ("a/b", False), ("a..b", True), ("", False)])
def test_task_id_grammar_at_its_limits(value, ok):
    assert names.is_task_id(value) is ok


def test_record_names_round_trip_and_refuse_paths():
    name = names.record_name("20260903T194500Z", "feature/ä+b", None, "ab" * 32)
    parsed = names.RecordName.parse(name)
    assert parsed is not None and parsed.slug == "feature---b" and parsed.head7 == "0000000"
    assert parsed.digest == "ab" * 8 and names.name_digest(name) == "ab" * 8
    for bad in ("notes.md", "x/" + name, name + "\n", name.replace("--feature", "--a/../b"),
                name.replace("20260903T", "2026090XT"), "20260903T194500Z--" + "s" * 65 + "--0000000--" + "a" * 16 + ".md"):
        assert names.RecordName.parse(bad) is None, bad


def test_the_lite_layer_imports_only_the_standard_library():
    probe = ("import sys\nbefore = set(sys.modules)\n"
             "import majordomus.lite.active, majordomus.lite.dotgit, majordomus.lite.limits, "
             "majordomus.lite.names, majordomus.lite.safeio, majordomus.lite.sha, majordomus.lite.spawn, "
             "majordomus.lite.stdin, majordomus.lite.textrules\n"
             "new = sorted(m for m in set(sys.modules) - before if m.split('.')[0] == 'majordomus' or "
             "not (m.split('.')[0] in sys.stdlib_module_names or m.startswith('_')))\n"
             "print(' '.join(new))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    ours = [m for m in out if m.startswith("majordomus")]
    assert [m for m in ours if m not in ("majordomus", "majordomus.errors", "majordomus.lite")
            and not m.startswith("majordomus.lite.")] == [], ours
    assert [m for m in out if not m.startswith("majordomus")] == []


# ---------------------------------------------------------------- one config reader; the hot path reads its cache


def yaml_limits(text: str) -> dict[str, int]:
    import yaml

    cfg = config.parse(yaml.load(text, Loader=yaml.CSafeLoader), "test")
    return {key: cfg.get("journal", key) for key in limits.DEFAULTS["journal"]}


DOCS = [
    "",
    "# only a comment\n",
    "journal:\n  line_max_bytes: 100\n  rotate_bytes: 2048\n",
    "journal:\n    rotate_bytes: 1_000   # underscores are YAML ints\n",
    "journal: {rotate_bytes: 300, line_max_bytes: 99}\n",
    "journal:\n  'rotate_bytes': 64\n  \"line_max_bytes\": 65\n",
    "\ufeffjournal:\n  rotate_bytes: +12\n",
    "journal: &a {rotate_bytes: 5}\n",  # an anchor: refused by the one reader
    "journal:\n  rotate_bytes: -5\n",
    "journal:\n  rotate_bytes: 2147483649\n",
    "journal:\n  rotate_bytes: '100'\n",
]


def _compact_bounds(repo: Path) -> dict[str, int] | str:
    """What `hook compact` reads as its journal limits in `repo`: the limits, or the error it reports."""
    from majordomus.hooks import compact

    place = dotgit.locate(str(repo))
    assert place is not None
    try:
        return compact.journal_bounds(place)
    except config.ConfigError as exc:
        return exc.message


@pytest.mark.parametrize("text", DOCS)
def test_the_hot_path_and_the_full_reader_agree(repo, text):
    """One rule: whatever `.ai/config.yaml` holds, compact's limits are the full reader's (or its error)."""
    start = run_here("task", "start", "t1", cwd=repo)
    assert start.returncode == 0
    (repo / ".ai" / "config.yaml").write_text(text)
    try:
        expected: dict[str, int] | str = {key: config.load(str(repo)).get("journal", key)
                                          for key in limits.DEFAULTS["journal"]}
    except config.ConfigError as exc:
        expected = exc.message
    first = _compact_bounds(repo)  # no cache for this file yet: the full reader
    assert first == expected
    second = _compact_bounds(repo)  # now from the cache, without yaml
    assert second == expected


def test_the_cache_is_used_only_for_its_own_file(repo):
    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    place = dotgit.locate(str(repo))
    assert place is not None
    paths = place.state_paths()
    assert limits.journal_limits(paths.config_file, paths.config_cache) == limits.DEFAULTS["journal"]  # no file
    (repo / ".ai" / "config.yaml").write_text("journal:\n  rotate_bytes: 123\n")
    assert limits.journal_limits(paths.config_file, paths.config_cache) is None  # not read yet: the full reader
    config.remember(config.load(str(repo), paths.config_cache), paths.config_cache)
    assert limits.journal_limits(paths.config_file, paths.config_cache)["rotate_bytes"] == 123  # type: ignore[index]
    (repo / ".ai" / "config.yaml").write_text("journal:\n  rotate_bytes: 456\n")  # edited: another signature
    assert limits.journal_limits(paths.config_file, paths.config_cache) is None
    assert limits.journal_limits(None, paths.config_cache) == limits.DEFAULTS["journal"]


@pytest.mark.parametrize("tamper", [
    lambda d: d.update(values=dict(d["values"], journal={"rotate_bytes": "9", "line_max_bytes": 1})),
    lambda d: d.update(values=dict(d["values"], journal={"rotate_bytes": 9})),
    lambda d: d.update(values={"journal": d["values"]["journal"]}),
    lambda d: d.update(unknown_keys="x"),
    lambda d: d.update(signature=d["signature"][:-1]),
])
def test_a_cache_it_did_not_write_sends_it_to_the_full_reader(repo, tamper):
    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    place = dotgit.locate(str(repo))
    assert place is not None
    paths = place.state_paths()
    (repo / ".ai" / "config.yaml").write_text("journal:\n  rotate_bytes: 123\n")
    config.remember(config.load(str(repo), paths.config_cache), paths.config_cache)
    assert limits.journal_limits(paths.config_file, paths.config_cache) is not None  # the edge: as written
    doc = json.loads(Path(paths.config_cache).read_text())
    tamper(doc)
    Path(paths.config_cache).write_text(json.dumps(doc))
    assert limits.journal_limits(paths.config_file, paths.config_cache) is None


def test_a_config_that_is_not_a_file_is_for_the_full_reader(repo):
    (repo / ".ai").mkdir()
    os.mkfifo(repo / ".ai" / "config.yaml")  # never waited on
    assert limits.journal_limits(str(repo / ".ai" / "config.yaml"), str(repo / "cache.json")) is None
    with pytest.raises(config.ConfigError):
        config.load(str(repo))
