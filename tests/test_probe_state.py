"""The state is real or it is not touched: hooks, task reads, refusals, profile names and config minimums.

Each rule is tested at its edge (what passes) and one past it (what is refused, with nothing written).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import assert_refused, run_here, snapshot, state_dir

from majordomus.config import load

START = b'{"session_id":"s1","source":"startup"}'
STOP = b'{"session_id":"s1","last_assistant_message":"done"}'


def _started(repo: Path) -> None:
    assert run_here("task", "start", "t1", "--title", "t", cwd=repo).returncode == 0
    assert run_here("checkpoint", cwd=repo, input="a note\n").returncode == 0


def _hooks(repo: Path) -> None:
    for name, payload in (("session-start", START), ("stop", STOP)):
        result = run_here("hook", name, cwd=repo, input=payload)
        assert result.returncode == 0, result.stderr  # hooks fail open


# ---------------------------------------------------------------- the hooks write only into a real state


def test_hooks_record_in_a_real_state(repo):
    _started(repo)
    ledger = state_dir(repo) / "ledger.jsonl"
    before = ledger.read_bytes()
    _hooks(repo)
    added = ledger.read_bytes()[len(before):].decode()
    assert '"session.start"' in added and '"session.stop"' in added
    assert (state_dir(repo) / "cache" / "conversations.json").is_file()


@pytest.mark.parametrize("linked", [".ai", ".ai/local", ".ai/local/state", ".ai/local/state/cache"])
def test_hooks_write_nothing_through_a_link(repo, tmp_path, linked):
    _started(repo)
    assert run_here("hook", "session-start", cwd=repo, input=START).returncode == 0  # the memory exists
    outside = tmp_path / "outside"
    os.rename(repo / linked, outside)
    os.symlink(outside, repo / linked)
    before_outside, before_repo = snapshot(outside), snapshot(repo)
    for name, payload in (("session-start", START), ("stop", STOP)):
        result = run_here("hook", name, cwd=repo, input=payload, text=True)
        assert result.returncode == 0, result.stderr
        if linked != ".ai/local/state/cache":  # the ledger is not reached through the cache
            assert "symbolic link" in result.stderr + result.stdout, (result.stdout, result.stderr)
    assert snapshot(outside) == before_outside
    if linked != ".ai/local/state/cache":
        assert snapshot(repo) == before_repo


# ---------------------------------------------------------------- task reads refuse a linked tasks/


TASK_READERS = [("brief",), ("task", "show"), ("task", "show", "t1"), ("task", "list"),
                ("context", "pin", "decision", "--", "a pin"), ("checkpoint",)]


@pytest.mark.parametrize("args", TASK_READERS)
def test_task_reads_in_a_real_tasks_directory(cli, repo, args):
    _started(repo)
    result = cli(*args, input="another note\n")
    assert result.exit_code == 0, result


@pytest.mark.parametrize("args", TASK_READERS)
def test_task_reads_refuse_a_linked_tasks_directory(cli, repo, tmp_path, args):
    _started(repo)
    outside = tmp_path / "outside-tasks"
    os.rename(state_dir(repo) / "tasks", outside)
    os.symlink(outside, state_dir(repo) / "tasks")
    before = snapshot(outside)
    assert_refused(cli, repo, args, 12, f"{state_dir(repo) / 'tasks'} is a symbolic link", input="another note\n")
    assert snapshot(outside) == before


# ---------------------------------------------------------------- a refused task change writes nothing


@pytest.mark.parametrize("args", [("task", "resume", "nope"), ("task", "done", "nope"),
                                  ("task", "release", "nope"), ("task", "start", "t2", "--from", "nope")])
def test_an_unknown_task_is_refused_before_the_state_exists(cli, repo, args):
    assert not (repo / ".ai").exists()
    assert_refused(cli, repo, args, 2, "no task `nope`")
    assert not (repo / ".ai").exists()


@pytest.mark.parametrize("args", [("task", "done"), ("task", "release")])
def test_no_task_here_is_refused_before_the_state_exists(cli, repo, args):
    assert_refused(cli, repo, args, 11, "no active task")
    assert not (repo / ".ai").exists()


def test_a_known_task_changes_at_the_edge(cli, repo):
    assert cli("task", "start", "t1").exit_code == 0
    assert cli("task", "start", "t2", "--from", "t1").exit_code == 0
    assert cli("task", "resume", "t1").exit_code == 0
    assert cli("task", "release", "t1").exit_code == 0
    assert cli("task", "done", "t1").exit_code == 0
    assert cli("task", "show", "t1").stdout.count("status: done") == 1


def test_an_unknown_task_is_refused_in_an_existing_state(cli, repo):
    assert cli("task", "start", "t1").exit_code == 0
    for args in (("task", "resume", "nope"), ("task", "done", "nope")):
        assert_refused(cli, repo, args, 2, "no task `nope`")


# ---------------------------------------------------------------- profile names are identifiers


@pytest.mark.parametrize("name", ["x", "A.b_c-9", "p" * 64])
def test_a_valid_profile_name_is_stored(cli, repo, name):
    assert cli("task", "start", "t1", "--profile", name).exit_code == 0
    assert f'profile: "{name}"\n' in (state_dir(repo) / "tasks" / "t1.yaml").read_text()


@pytest.mark.parametrize("name", ["../x", "../../etc/passwd", "default\n", "p" * 65, ".hidden", "a/b", ""])
def test_an_invalid_profile_name_is_refused_at_ingest(cli, repo, name):
    assert_refused(cli, repo, ("task", "start", "t1", "--profile", name), 10, "--profile", "not a valid profile name")
    assert not (repo / ".ai").exists()


@pytest.mark.parametrize("value", ['"default\\n"', '"../../etc/passwd"', '"p/q"', f'"{"p" * 65}"'])
def test_an_invalid_configured_profile_is_refused(cli, repo, value):
    (repo / ".ai").mkdir()
    (repo / ".ai" / "config.yaml").write_text(f"profile: {value}\n")
    result = assert_refused(cli, repo, ("task", "start", "t1"), 12, "`profile` must be a profile name")
    assert "config.yaml" in result.stderr
    assert not (repo / ".ai" / "local").exists()


def test_a_configured_profile_at_the_edge_is_used(cli, repo):
    (repo / ".ai").mkdir()
    (repo / ".ai" / "config.yaml").write_text(f'profile: "{"p" * 64}"\n')
    assert cli("task", "start", "t1").exit_code == 0
    assert f'profile: "{"p" * 64}"\n' in (state_dir(repo) / "tasks" / "t1.yaml").read_text()


def test_doctor_fails_a_stored_profile_that_breaks_the_grammar(cli, repo):
    assert cli("task", "start", "t1").exit_code == 0
    sound = cli("doctor")
    assert "task.profile-invalid" not in sound.stdout, sound
    record = state_dir(repo) / "tasks" / "t1.yaml"  # a record edited by hand, or written by an older version
    record.write_text(record.read_text().replace('profile: "default"', 'profile: "../../etc/passwd"'))
    before = snapshot(repo)
    result = cli("doctor")
    assert result.exit_code == 1, result
    assert "task.profile-invalid" in result.stdout and "../../etc/passwd" in result.stdout, result.stdout
    assert "profiles and ownership are sound" not in result.stdout
    assert snapshot(repo) == before


# ---------------------------------------------------------------- configured sizes have a minimum


@pytest.mark.parametrize("section,key,minimum", [
    ("journal", "rotate_bytes", 1), ("journal", "line_max_bytes", 1), ("checkpoint", "max_body_lines", 1),
    ("checkpoint", "max_body_bytes", 1), ("checkpoint", "retention_max_files", 1),
    ("checkpoint", "stale_after_minutes", 1), ("handoff", "max_bytes", 1), ("handoff", "retention_max_files", 1),
    ("continuity", "pin_max_bytes", 1), ("continuity", "max_bytes", 1), ("continuity", "render_max_bytes", 256),
    ("hooks", "max_context_chars", 256), ("hooks", "codex_max_tokens", 64),
])
def test_a_configured_size_below_its_minimum_is_refused(cli, repo, section, key, minimum):
    (repo / ".ai").mkdir()
    config = repo / ".ai" / "config.yaml"
    config.write_text(f"{section}:\n  {key}: {minimum}\n")  # the edge
    assert load(str(repo)).get(section, key) == minimum
    config.write_text(f"{section}:\n  {key}: {minimum - 1}\n")  # one past it
    for args in (("checkpoint",), ("task", "start", "t2")):
        assert_refused(cli, repo, args, 12, f"`{section}.{key}` must be at least {minimum}, not {minimum - 1}",
                       input="a note\n")
    doctor = cli("doctor")
    assert doctor.exit_code == 1 and f"{section}.{key}" in doctor.stdout, doctor


def test_zero_changed_files_is_a_valid_limit(cli, repo):
    (repo / ".ai").mkdir()
    (repo / ".ai" / "config.yaml").write_text("checkpoint:\n  max_changed_files: 0\n")
    assert cli("task", "start", "t1").exit_code == 0
    (repo / ".ai" / "config.yaml").write_text("checkpoint:\n  max_changed_files: -1\n")
    assert_refused(cli, repo, ("task", "start", "t2"), 12, "`checkpoint.max_changed_files` must be zero or more")


@pytest.mark.parametrize("tamper", [
    lambda d: d["values"].update(profile="../x"),
    lambda d: d["values"].update(profile="default\n"),
    lambda d: d["values"]["journal"].update(rotate_bytes=0),
])
def test_the_config_cache_is_not_trusted_past_the_rules(repo, tamper):
    import json

    from majordomus.config import remember
    from majordomus.lite import dotgit, limits

    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    place = dotgit.locate(str(repo))
    assert place is not None
    paths = place.state_paths()
    (repo / ".ai" / "config.yaml").write_text("journal:\n  rotate_bytes: 1\n")  # the edge
    remember(load(str(repo), paths.config_cache), paths.config_cache)
    assert limits.journal_limits(paths.config_file, paths.config_cache) == {"line_max_bytes": 16384, "rotate_bytes": 1}
    doc = json.loads(Path(paths.config_cache).read_text())
    tamper(doc)  # one past it: a cache majordomus did not write
    Path(paths.config_cache).write_text(json.dumps(doc))
    assert limits.journal_limits(paths.config_file, paths.config_cache) is None
