"""`majordomus sync compact` (design §13): retired machines' refs folded into refs/majordomus/state (union,
one commit) and deleted on the remote, atomically and without losing what a machine pushed meanwhile."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers import MAJORDOMUS, git, snapshot, state_dir
from helpers.sync import clone, machine_id, machine_ref, record_files, remote_files, remote_refs

STATE = "refs/majordomus/state"


@pytest.fixture
def machines(cli, repo: Path, remote: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    """A (repo), B and C, each with a task and a checkpoint pushed."""
    b, c = clone(tmp_path, remote, "b"), clone(tmp_path, remote, "c")
    for where, name in ((repo, "ta"), (b, "tb"), (c, "tc")):
        assert cli("task", "start", name, cwd=where).exit_code == 0
        assert cli("checkpoint", input=f"note of {name}", cwd=where).exit_code == 0
        assert cli("sync", "push", "--checkpoints", cwd=where).exit_code == 0
    return repo, b, c


def test_compact_folds_a_machine_into_the_state_and_deletes_its_ref(cli, remote, tmp_path, machines):
    a, b, c = machines
    c_commit = git(remote, "rev-parse", machine_ref(c))
    result = cli("sync", "compact", "--machine", machine_id(c), cwd=a)
    assert result.exit_code == 0, result.output
    assert "folded 1 machine into refs/majordomus/state on origin" in result.stdout
    assert remote_refs(remote) == sorted(["refs/heads/main", STATE, machine_ref(a), machine_ref(b)])
    assert git(remote, "log", "-1", "--format=%P", STATE) == c_commit  # one commit, C's as its parent
    assert {"format", "tasks/tc.yaml"} <= set(remote_files(remote, STATE))
    assert record_files(remote, STATE, "checkpoints") == [p.name for p in (state_dir(c) / "checkpoints").iterdir()]
    # A fresh machine gets all three from A's ref, B's ref and the state, in one pull.
    d = clone(tmp_path, remote, "d")
    pulled = cli("sync", "pull", cwd=d)
    assert "imported from origin: 3 tasks, 0 handoffs, 3 checkpoints" in pulled.stdout
    # C's tracking ref went with it on A; C pushing again makes its ref anew, and nothing is lost.
    assert machine_ref(c) not in git(a, "for-each-ref", "--format=%(refname)")
    cli("checkpoint", input="C is back", cwd=c)
    assert cli("sync", "push", "--checkpoints", cwd=c).exit_code == 0
    assert len(record_files(remote, machine_ref(c), "checkpoints")) == 2


def test_compact_by_idleness_leaves_the_active_machines(cli, remote, tmp_path, machines):
    a, b, c = machines
    # C last pushed long ago: its commit says so (a clock the test sets, as any writer's clock could).
    old = subprocess.run(["git", "commit-tree", f"{machine_ref(c)}^{{tree}}", "-p", machine_ref(c), "-m", "old"],
                         cwd=remote, capture_output=True, text=True, check=True,
                         env=dict(os.environ, GIT_COMMITTER_DATE="2020-01-01T00:00:00Z")).stdout.strip()
    git(remote, "update-ref", machine_ref(c), old)
    status = json.loads(cli("sync", "status", "--json", cwd=a).stdout)
    assert {m["id"]: m["pushed_at"] for m in status["machines"]}[machine_id(c)] == "2020-01-01T00:00:00Z"
    result = json.loads(cli("sync", "compact", "--idle-days", "30", "--json", cwd=a).stdout)
    assert result["folded"] == [machine_id(c)]
    assert remote_refs(remote) == sorted(["refs/heads/main", STATE, machine_ref(a), machine_ref(b)])
    assert cli("sync", "compact", "--idle-days", "30", cwd=a).stdout == "nothing to fold on origin\n"


@pytest.mark.parametrize("args, code, message", [
    ([], 2, "name the machines to fold"),
    (["--machine", "no-such-machine"], 2, "no machine `no-such-machine` on origin"),
    (["--machine", "x\nowner: evil"], 2, "no machine `x\\x0aowner: evil` on origin"),  # echoed escaped
    (["--machine", "{own}"], 10, "is this machine"),
])
def test_compact_refusals_change_nothing(cli, remote, machines, args, code, message):
    a = machines[0]
    args = [arg.replace("{own}", machine_id(a)) for arg in args]
    before = snapshot(remote), git(remote, "for-each-ref")
    result = cli("sync", "compact", *args, cwd=a)
    assert result.exit_code == code and message in result.stderr
    assert (snapshot(remote), git(remote, "for-each-ref")) == before


def test_a_machine_that_pushes_during_the_compaction_loses_nothing(cli, remote, tmp_path, machines):
    a, _b, c = machines
    # While A compacts, C pushes once more (a pre-push hook of A's lets it in first).
    counter = tmp_path / "c-pushed"
    hook = a / ".git" / "hooks" / "pre-push"
    hook.write_text(f"""#!/bin/sh
cat >/dev/null
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_PREFIX
[ -e {counter} ] && exit 0
touch {counter}
cd {c} && echo "pushed during the compaction" | {MAJORDOMUS} checkpoint >/dev/null && {MAJORDOMUS} sync push --checkpoints >/dev/null
""")
    hook.chmod(0o755)
    done = cli("sync", "compact", "--machine", machine_id(c), "--json", cwd=a)
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout)
    assert counter.exists() and result["attempts"] == 2 and result["folded"] == [machine_id(c)]
    assert machine_ref(c) not in remote_refs(remote)
    assert sorted(record_files(remote, STATE, "checkpoints")) == sorted(
        p.name for p in (state_dir(c) / "checkpoints").iterdir())


def test_a_fetch_that_fails_after_the_fold_landed_says_it_landed(cli, remote, machines):
    """The compaction is on the remote and its event written when git cannot move the tracking refs here (a
    lock file left in .git, a full disk): exit 12 saying the fold landed, and what to run; the pull after it
    brings the refs, and nothing is folded twice."""
    a, _b, c = machines
    hook = a / ".git" / "hooks" / "reference-transaction"  # git refuses to drop the folded machine's ref here
    hook.write_text("#!/bin/sh\n[ \"$1\" = prepared ] || exit 0\nwhile read old new ref; do\n"
                    "  case \"$ref\" in */machines/*) [ \"$new\" = " + "0" * 40 + " ] && exit 1;; esac\n"
                    "done\nexit 0\n")
    hook.chmod(0o755)
    result = cli("sync", "compact", "--machine", machine_id(c), cwd=a)
    assert result.exit_code == 12, result.output
    assert result.stderr.startswith("majordomus: the compaction landed on origin and its event is written"), result.stderr
    assert "`majordomus sync pull`" in result.stderr and "nothing needs folding again" in result.stderr
    assert machine_ref(c) not in remote_refs(remote)  # it did land
    assert len([e for e in map(json.loads, (state_dir(a) / "ledger.jsonl").read_text().splitlines())
                if e["event"] == "sync.compact"]) == 1
    hook.unlink()
    assert cli("sync", "pull", cwd=a).exit_code == 0
    assert machine_ref(c) not in git(a, "for-each-ref", "--format=%(refname)")
    again = cli("sync", "compact", "--machine", machine_id(c), cwd=a)
    assert again.exit_code != 0 or "folded 1 machine" not in again.stdout  # no second fold of it
