"""Where a push can still lose a race (design §13, §14): the remote is asked first, the loser folds and retries
with backoff inside a time bound, and exit 75 (busy, nothing lost) — never 12 — when the race stays lost."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import MAJORDOMUS, git, run_here, snapshot, state_dir
from helpers.sync import clone, events, machine_ref, record_files, remote_files


def _racing_hook(repo: Path, racer: Path, remote: Path, ref: str, races: int) -> None:
    """A pre-push hook (the user's own, which sync honours) that lets another writer move `ref` on the
    remote first, `races` times: what two copies of one state pushing at once look like."""
    counter = repo.parent / "races"
    hook = repo / ".git" / "hooks" / "pre-push"
    hook.write_text(f"""#!/bin/sh
cat >/dev/null
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_PREFIX
n=$(cat {counter} 2>/dev/null || echo 0); n=$((n + 1)); echo $n > {counter}
[ "$n" -le {races} ] || exit 0
cd {racer} || exit 1
if git fetch -q {remote} +{ref}:refs/racer 2>/dev/null; then
  c=$(git commit-tree "refs/racer^{{tree}}" -p refs/racer -m "race $n") || exit 1
else
  c=$(git commit-tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904 -m "race $n") || exit 1
fi
git push -q {remote} "$c:{ref}"
""")
    hook.chmod(0o755)


@pytest.fixture
def racer(tmp_path: Path, remote: Path) -> Path:
    return clone(tmp_path, remote, "racer")


def test_a_lost_race_folds_and_retries(cli, repo, remote, racer):
    cli("task", "start", "t1")
    cli("checkpoint", input="note")
    assert cli("sync", "push").exit_code == 0
    ref = machine_ref(repo)
    cli("task", "start", "t2")
    _racing_hook(repo, racer, remote, ref, races=2)
    result = cli("sync", "push", "--checkpoints")
    assert result.exit_code == 0, result.output
    assert "after 3 attempts" in result.stdout
    assert {"tasks/t1.yaml", "tasks/t2.yaml"} <= set(remote_files(remote, ref))
    assert len(record_files(remote, ref, "checkpoints")) == 1
    parents = git(remote, "log", "-1", "--format=%P", ref).split()
    assert len(parents) == 2  # ours and the racer's, folded
    assert git(remote, "log", "--format=%s", ref).count("race ") == 2  # nothing of the racer's was lost
    assert [e["attempts"] for e in events(repo, "sync.push")][-1] == 3


def test_still_busy_after_the_time_bound_is_exit_75_and_loses_nothing(cli, repo, remote, racer, tmp_path):
    cli("task", "start", "t1")
    cli("checkpoint", input="note")
    assert cli("sync", "push").exit_code == 0
    ref = machine_ref(repo)
    _racing_hook(repo, racer, remote, ref, races=10_000)
    cli("task", "start", "t2")
    result = cli("sync", "push", "--checkpoints", "--timeout", "1")
    assert result.exit_code == 75, result.output
    assert f"origin kept changing {ref}" in result.stderr and "still busy" in result.stderr
    assert "Nothing was lost" in result.stderr and "run `majordomus sync push` again" in result.stderr
    # Each lost round is one race of the hook; how many fit in the bound is the machine's speed (a loaded CI
    # machine may fit one), and the message counts them.
    races = int((tmp_path / "races").read_text())
    assert races >= 1 and f"({races} attempt" in result.stderr, (races, result.stderr)
    # What this push was for is committed on the local ref; the remote has only what it had.
    local = remote_files(repo, ref)
    assert "tasks/t2.yaml" in local and len([p for p in local if p.startswith("checkpoints/")]) == 1
    assert "tasks/t2.yaml" not in remote_files(remote, ref)
    assert events(repo, "sync.push")[-1]["attempts"] == 1  # only the first push was an event
    (repo / ".git" / "hooks" / "pre-push").unlink()
    again = cli("sync", "push", "--checkpoints")
    assert again.exit_code == 0 and "tasks/t2.yaml" in remote_files(remote, ref)


def test_busy_is_75_from_the_console_script_too(repo, remote, racer, tmp_path):
    from helpers import run

    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    assert run_here("sync", "push", cwd=repo).returncode == 0
    _racing_hook(repo, racer, remote, machine_ref(repo), races=10_000)
    run_here("task", "start", "t2", cwd=repo)
    done = run("sync", "push", "--timeout", "0.5", cwd=repo)
    assert done.returncode == 75 and b"still busy" in done.stderr and not done.stdout


def test_two_copies_of_one_state_pushing_at_once_both_land(cli, repo, remote, tmp_path):
    """A copied checkout carries the same machine id: two writers of one ref, as after `cp -r`."""
    cli("task", "start", "t1")
    assert cli("sync", "push").exit_code == 0
    twin = tmp_path / "twin"
    shutil.copytree(repo, twin, symlinks=True)
    for i in range(3):
        cli("checkpoint", input=f"original {i}")
    git(twin, "commit", "-q", "--allow-empty", "-m", "twin moves")  # another head: other record names
    cli("task", "start", "t-twin", cwd=twin)
    for i in range(3):
        cli("checkpoint", input=f"twin {i}", cwd=twin)
    assert machine_ref(twin) == machine_ref(repo)
    procs = [subprocess.Popen([str(MAJORDOMUS), "sync", "push", "--checkpoints", "--json"], cwd=where,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for where in (repo, twin)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    ref = machine_ref(repo)
    ours = {p.name for p in (state_dir(repo) / "checkpoints").iterdir()}
    theirs = {p.name for p in (state_dir(twin) / "checkpoints").iterdir()}
    assert len(ours | theirs) == 6
    # Whichever pushed second was rejected or saw the first's commit, and folded it: the union landed.
    assert set(record_files(remote, ref, "checkpoints")) == ours | theirs
    assert {"tasks/t1.yaml", "tasks/t-twin.yaml"} <= set(remote_files(remote, ref))
    assert sorted(json.loads(o[0])["pushed"] for o in outs) == [True, True]


def test_the_remote_is_asked_before_anything_is_uploaded(cli, repo, remote, racer, tmp_path):
    cli("task", "start", "t1")
    assert cli("sync", "push").exit_code == 0
    ref = machine_ref(repo)
    # Someone rewound this machine's ref on the remote (a forced push): the next push sees it first,
    # folds what is there, and pushes once.
    empty = git(racer, "commit-tree", "4b825dc642cb6eb9a060e54bf8d69288fbee4904", "-m", "rewound")
    git(racer, "push", "-q", "--force", str(remote), f"{empty}:{ref}")
    cli("task", "start", "t2")
    before = snapshot(remote)
    pushed = json.loads(cli("sync", "push", "--json").stdout)
    assert pushed["pushed"] and pushed["attempts"] == 1
    assert snapshot(remote) != before
    assert {"tasks/t1.yaml", "tasks/t2.yaml"} <= set(remote_files(remote, ref))
    assert empty in git(remote, "log", "--format=%H", ref).split()
