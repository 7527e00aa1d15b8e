"""quickstate answers from plain files what git.py/paths.py/config.py answer with pygit2 and yaml."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import commit_file, git, run
from majordomus import config, quickstate, tasks
from majordomus.workspace import Workspace


def assert_same_place(cwd: Path) -> quickstate.Place:
    ws = Workspace.open(str(cwd))
    place = quickstate.locate(str(cwd))
    assert place is not None
    assert (place.worktree, place.branch, place.state_root, place.config_root) == (
        ws.worktree, ws.branch, ws.paths.root, ws.paths.config_root)
    return place


def test_plain_repository_and_subdirectory(repo):
    (repo / "a" / "b").mkdir(parents=True)
    assert_same_place(repo)
    assert assert_same_place(repo / "a" / "b").worktree == str(repo)


def test_unborn_and_detached(unborn_repo, repo):
    assert assert_same_place(unborn_repo).branch == "main"
    commit_file(repo, "x", "1")
    git(repo, "checkout", "-q", "--detach")
    assert assert_same_place(repo).branch is None


def test_linked_worktree_shares_the_main_state(repo, tmp_path):
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(linked))
    (linked / "sub").mkdir()
    place = assert_same_place(linked / "sub")
    assert place.branch == "feature" and place.state_root == str(repo / ".ai" / "local" / "state")


def test_bare_main_worktree_keeps_state_in_the_common_dir(repo, tmp_path):
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    linked = tmp_path / "wt"
    git(bare, "worktree", "add", "-q", str(linked), "main")
    place = assert_same_place(linked)
    assert place.state_root == str(bare / "majordomus" / "local" / "state")
    assert place.config_root == str(linked)


def test_separate_git_dir(tmp_path):
    work, gitdir = tmp_path / "work", tmp_path / "store.git"
    git(tmp_path, "init", "-q", "--separate-git-dir", str(gitdir), str(work))
    commit_file(work, "f", "x")
    assert assert_same_place(work).worktree == str(work)


def test_symlinked_cwd_resolves_like_libgit2(repo, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(repo)
    assert assert_same_place(link).worktree == str(repo)


def test_outside_any_repository(tmp_path):
    (tmp_path / "plain").mkdir()
    assert quickstate.locate(str(tmp_path / "plain")) is None


def test_active_task_matches_tasks_module(repo, tmp_path):
    assert quickstate.active_task(quickstate.locate(str(repo))) is None
    assert run("task", "start", "t-1.x", cwd=repo).returncode == 0
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "other", str(linked))
    assert run("task", "start", "t2", cwd=linked).returncode == 0
    for where in (repo, linked):
        assert quickstate.active_task(quickstate.locate(str(where))) == tasks.active_id(Workspace.open(str(where)))
    git(repo, "checkout", "-q", "-b", "elsewhere")
    assert quickstate.active_task(quickstate.locate(str(repo))) is None


@pytest.mark.parametrize("value", ["../../escape", "/etc", "", 7, None, ["t1"]])
def test_an_index_value_that_is_not_a_task_id_is_ignored(repo, value):
    assert run("task", "start", "t1", cwd=repo).returncode == 0
    place = quickstate.locate(str(repo))
    index_path = Path(place.state_root) / "active.json"
    index = json.loads(index_path.read_text())
    index[json.dumps([place.worktree, place.branch])] = value
    index_path.write_text(json.dumps(index))
    assert quickstate.active_task(place) is None


def test_broken_index_is_no_task(repo):
    assert run("task", "start", "t1", cwd=repo).returncode == 0
    place = quickstate.locate(str(repo))
    (Path(place.state_root) / "active.json").write_text("{torn")
    assert quickstate.active_task(place) is None


# ---------------------------------------------------------------- the two journal limits without yaml


def yaml_limits(text: str) -> dict[str, int]:
    import yaml

    cfg = config.parse(yaml.safe_load(text), "test")
    return {key: cfg.get("journal", key) for key in quickstate.JOURNAL_DEFAULTS}


DOCS = [
    "",
    "# only a comment\n",
    "journal:\n  line_max_bytes: 100\n  rotate_bytes: 2048\n",
    "journal:\n    rotate_bytes: 1_000   # underscores are YAML ints\n",
    "checkpoint:\n  max_body_lines: 3\njournal:  # the journal\n  rotate_bytes: 4096\n\n  line_max_bytes: 512\nprofile: x\n",
    "journal: {rotate_bytes: 300, line_max_bytes: 99}\n",
    "journal: {rotate_bytes: 300}  # flow\n",
    "journal:\n  'rotate_bytes': 64\n  \"line_max_bytes\": 65\n",
    "continuity:\n  rotate_bytes: 5\njournal:\n  line_max_bytes: 7\n",
    "journal:\n# a comment between\n  rotate_bytes: 77\nhooks:\n  max_context_chars: 5\n",
    "\ufeffjournal:\n  rotate_bytes: +12\n",
    "journal:\nprofile: default\n",
    "journal:\n\trotate_bytes: 5\n".replace("\t", "  "),
]


@pytest.mark.parametrize("text", DOCS)
def test_tiny_parser_agrees_with_yaml(text):
    assert quickstate.parse_journal_limits(text) == yaml_limits(text)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rotate=st.one_of(st.none(), st.integers(0, 10**9)), line=st.one_of(st.none(), st.integers(0, 10**6)),
       indent=st.sampled_from([1, 2, 4]), comment=st.booleans(), before=st.booleans())
def test_tiny_parser_agrees_with_yaml_generated(rotate, line, indent, comment, before):
    pad = " " * indent
    body = "".join(f"{pad}{key}: {value}{'  # why' if comment else ''}\n"
                   for key, value in (("rotate_bytes", rotate), ("line_max_bytes", line)) if value is not None)
    text = ("checkpoint:\n  max_body_lines: 9\n" if before else "") + "journal:\n" + body + "profile: p\n"
    assert quickstate.parse_journal_limits(text) == yaml_limits(text)


@pytest.mark.parametrize("text", [
    "journal:\n  rotate_bytes: -5\n",
    "journal:\n  rotate_bytes: lots\n",
    "journal:\n  rotate_bytes: '100'\n",
])
def test_values_it_cannot_read_keep_the_default(text):
    assert quickstate.parse_journal_limits(text) == quickstate.JOURNAL_DEFAULTS
    with pytest.raises(config.ConfigError):
        yaml_limits(text)  # ... and every other command reports the error


def test_defaults_match_config_defaults():
    assert quickstate.JOURNAL_DEFAULTS == config.DEFAULTS["journal"]
    assert quickstate.TASK_ID.pattern == tasks.TASK_ID.pattern


def test_journal_limits_reads_the_file(repo):
    assert quickstate.journal_limits(str(repo)) == quickstate.JOURNAL_DEFAULTS
    (repo / ".ai").mkdir()
    (repo / ".ai" / "config.yaml").write_text("journal:\n  rotate_bytes: 123\n")
    assert quickstate.journal_limits(str(repo))["rotate_bytes"] == 123
    assert quickstate.journal_limits(None) == quickstate.JOURNAL_DEFAULTS
    os.chmod(repo / ".ai" / "config.yaml", 0)
    if not os.access(repo / ".ai" / "config.yaml", os.R_OK):  # root reads anything
        assert quickstate.journal_limits(str(repo)) == quickstate.JOURNAL_DEFAULTS
