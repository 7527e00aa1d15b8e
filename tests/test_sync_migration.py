"""Remotes in the layout of majordomus before the per-machine layout (one shared `refs/majordomus/state`, format 1, records
flat in `checkpoints/NAME.md`) are read, and migrated on the first push (design §13)."""

from __future__ import annotations

import json
from pathlib import Path

from freezegun import freeze_time
from helpers import git, state_dir
from helpers.sync import (
    FORMAT_1,
    build_tree,
    clone,
    commit_tree,
    events,
    layout_path,
    machine_ref,
    read_remote,
    remote_files,
    remote_refs,
    write_handoff,
)

STATE = "refs/majordomus/state"


def old_layout(repo: Path, tmp: Path, *, checkpoints: bool = True) -> dict[str, bytes]:
    """The tree the single-ref layout pushed for this store: `format`, tasks/, handoffs/, checkpoints/."""
    state = state_dir(repo)
    files = {"format": FORMAT_1}
    for directory in ("tasks", "handoffs") + (("checkpoints",) if checkpoints else ()):
        for path in sorted((state / directory).iterdir()) if (state / directory).exists() else []:
            files[f"{directory}/{path.name}"] = path.read_bytes()
    return files


def push_old(repo: Path, remote: Path, tmp: Path, parents: list[str] | None = None) -> str:
    """What an old `sync push --checkpoints` leaves: the state ref on the remote, and the same ref here."""
    commit = commit_tree(repo, build_tree(repo, old_layout(repo, tmp), tmp), parents, "majordomus state")
    git(repo, "push", "-q", str(remote), f"{commit}:{STATE}")
    git(repo, "update-ref", STATE, commit)
    git(repo, "update-ref", "refs/majordomus/remotes/origin/state", commit)
    return commit


def test_a_pull_reads_the_old_layout(cli, repo, remote, tmp_path):
    with freeze_time("2026-03-01T10:00:00Z"):
        cli("task", "start", "t1")
        cli("checkpoint", input="written by an old majordomus")
        write_handoff(repo)
    push_old(repo, remote, tmp_path)
    assert remote_refs(remote) == ["refs/heads/main", STATE]
    b = clone(tmp_path, remote, "b")
    result = cli("sync", "pull", cwd=b)
    assert result.exit_code == 0, result.output
    assert "imported from origin: 1 task, 1 handoff, 1 checkpoint" in result.stdout
    for directory in ("tasks", "handoffs", "checkpoints"):
        for path in (state_dir(repo) / directory).iterdir():
            assert (state_dir(b) / directory / path.name).read_bytes() == path.read_bytes()
    assert {e["machine"] for e in events(b, "sync.import")} == {STATE}
    status = json.loads(cli("sync", "status", "--json", cwd=b).stdout)
    assert [(m["ref"], m["format"]) for m in status["machines"]] == [(STATE, 1)]


def test_the_first_push_migrates_the_remote(cli, repo, remote, tmp_path):
    with freeze_time("2026-03-01T10:00:00Z"):
        cli("task", "start", "t1")
        cli("checkpoint", input="old")
        handoff = write_handoff(repo)
    legacy = push_old(repo, remote, tmp_path)
    checkpoint = next((state_dir(repo) / "checkpoints").iterdir()).name
    b = clone(tmp_path, remote, "b")
    cli("task", "start", "t2", cwd=b)
    pushed = cli("sync", "push", cwd=b)
    assert pushed.exit_code == 0, pushed.output
    assert "migrated refs/majordomus/state on origin to format 2" in pushed.stdout
    assert remote_refs(remote) == sorted(["refs/heads/main", STATE, machine_ref(b)])
    # The state keeps every entry of the old one, in the new layout, as a child of the old commit: an older
    # majordomus can no longer push over it (not a fast-forward), and reading it, it asks to be upgraded.
    assert read_remote(remote, STATE, "format") == b"majordomus-state 2\n"
    assert git(remote, "log", "-1", "--format=%P", STATE) == legacy
    assert remote_files(remote, STATE) == sorted(["format", "tasks/t1.yaml", layout_path("handoffs", handoff.name),
                                                  layout_path("checkpoints", checkpoint)])
    assert read_remote(remote, STATE, layout_path("checkpoints", checkpoint)) == (
        state_dir(repo) / "checkpoints" / checkpoint).read_bytes()
    assert events(b, "sync.push")[-1]["migrated"] is True
    again = json.loads(cli("sync", "push", "--json", cwd=b).stdout)
    assert again["migrated"] is False and not again["pushed"]
    # A fresh machine reads the migrated state and B's ref in one pull.
    c = clone(tmp_path, remote, "c")
    result = cli("sync", "pull", cwd=c)
    assert "imported from origin: 2 tasks, 1 handoff, 1 checkpoint" in result.stdout


def test_a_clone_that_synced_with_the_old_version_carries_on(cli, repo, remote, tmp_path):
    """Its local refs/majordomus/state (what it settled on) is its starting point: nothing it had is
    imported again, no task it did not change is a conflict, and the old ref is folded away."""
    with freeze_time("2026-03-01T10:00:00Z"):
        cli("task", "start", "t1")
        cli("checkpoint", input="mine")
    legacy = push_old(repo, remote, tmp_path)
    other = clone(tmp_path, remote, "other")
    cli("sync", "pull", cwd=other)
    with freeze_time("2026-03-01T11:00:00Z"):
        cli("task", "start", "t2", cwd=other)
    push_old(other, remote, tmp_path, parents=[legacy])  # another old-version machine pushed after us
    result = cli("sync", "pull")
    assert result.exit_code == 0, result.output
    assert "imported from origin: 1 task, 0 handoffs, 0 checkpoints" in result.stdout
    assert events(repo, "sync.conflict") == []
    assert git(repo, "for-each-ref", "--format=%(refname)", "refs/majordomus") .splitlines() == [
        "refs/majordomus/remotes/origin/state", "refs/majordomus/synced"]
    pushed = cli("sync", "push")
    assert pushed.exit_code == 0 and "migrated" in pushed.stdout


def _old_client_races(repo: Path, remote: Path, tmp: Path, extra: bytes) -> None:
    """A pre-push hook: an older majordomus pushes the old-layout state first, once."""
    counter = repo.parent / "old-races"
    hook = repo / ".git" / "hooks" / "pre-push"
    index = tmp / "racer-index"
    hook.write_text(f"""#!/bin/sh
cat >/dev/null
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_PREFIX
[ -e {counter} ] && exit 0
touch {counter}
cd {remote} || exit 1
blob=$(printf '%s' '{extra.decode()}' | git hash-object -w --stdin)
export GIT_INDEX_FILE={index}
git read-tree {STATE} && git update-index --add --cacheinfo 100644,$blob,tasks/late.yaml || exit 1
c=$(git commit-tree $(git write-tree) -p {STATE} -m "an old majordomus pushed") || exit 1
git update-ref {STATE} $c
""")
    hook.chmod(0o755)


def test_an_older_majordomus_pushing_during_the_migration_loses_nothing(cli, repo, remote, tmp_path):
    with freeze_time("2026-03-01T10:00:00Z"):
        cli("task", "start", "t1")
    push_old(repo, remote, tmp_path)
    late = (state_dir(repo) / "tasks" / "t1.yaml").read_bytes().replace(b'"t1"', b'"late"')
    b = clone(tmp_path, remote, "b")
    cli("task", "start", "t2", cwd=b)
    _old_client_races(b, remote, tmp_path, late)
    done = cli("sync", "push", "--json", cwd=b)
    assert done.exit_code == 0, done.output
    pushed = json.loads(done.stdout)
    assert pushed["migrated"] and pushed["attempts"] == 2
    assert read_remote(remote, STATE, "format") == b"majordomus-state 2\n"
    assert {"tasks/t1.yaml", "tasks/late.yaml"} <= set(remote_files(remote, STATE))
