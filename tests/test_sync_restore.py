"""A pull brings back what this machine settled on and lost since (design §13): a record deleted by hand, the
whole state removed; `sync pull --full` reads every entry of every ref; doctor names the command."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from helpers import git, snapshot, state_dir
from helpers.sync import HANDOFF, clone, events, layout_path, machine_ref, rewrite_ref, write_handoff


@pytest.fixture
def b(tmp_path: Path, remote: Path) -> Path:
    return clone(tmp_path, remote, "b")


def _shared(cli, repo: Path, b: Path) -> list[Path]:
    """A task, two checkpoints and a handoff on A, pushed, and pulled on B: B's records."""
    cli("task", "start", "t1")
    cli("checkpoint", input="first note")
    cli("checkpoint", input="second note")
    write_handoff(repo, HANDOFF)
    assert cli("sync", "push", "--checkpoints").exit_code == 0
    pulled = cli("sync", "pull", cwd=b)
    assert "imported from origin: 1 task, 1 handoff, 2 checkpoints" in pulled.stdout, pulled.output
    return sorted((state_dir(b) / "checkpoints").iterdir()) + sorted((state_dir(b) / "handoffs").iterdir())


def test_nothing_lost_is_nothing_new_and_nothing_written(cli, repo, remote, b):
    _shared(cli, repo, b)
    before, refs = snapshot(b), git(b, "for-each-ref")
    again = cli("sync", "pull", cwd=b)
    assert again.exit_code == 0 and again.stdout == "nothing new from origin\n"
    assert snapshot(b) == before and git(b, "for-each-ref") == refs


def test_a_record_deleted_here_is_brought_back_by_the_next_pull(cli, repo, remote, b):
    records = _shared(cli, repo, b)
    lost = records[0]
    data = lost.read_bytes()
    lost.unlink()
    doctor = cli("doctor", cwd=b)
    assert "ledger.record-missing" in doctor.output or "not in the store" in doctor.output
    assert "`majordomus sync pull --full`" in doctor.output
    refs = git(b, "for-each-ref")
    status = json.loads(cli("sync", "status", "--no-fetch", "--json", cwd=b).stdout)
    assert status["behind"]["checkpoints"] == [f"checkpoints/{lost.name}"]  # what the pull will bring back
    pulled = cli("sync", "pull", cwd=b)
    assert pulled.exit_code == 0, pulled.output
    assert pulled.stdout == ("imported from origin: 0 tasks, 0 handoffs, 1 checkpoint "
                             "(1 of them lost here since the last pull)\n")
    assert lost.read_bytes() == data
    assert [e["path"] for e in events(b, "sync.import")][-1] == f"checkpoints/{lost.name}"
    assert git(b, "for-each-ref") == refs  # the settled state held it already
    assert "not in the store" not in cli("doctor", cwd=b).output
    before = snapshot(b)
    assert cli("sync", "pull", cwd=b).stdout == "nothing new from origin\n"
    assert snapshot(b) == before


def test_a_lost_record_is_found_with_new_records_here_too(cli, repo, remote, b):
    records = _shared(cli, repo, b)
    assert cli("task", "resume", "t1", "--force", cwd=b).exit_code == 0
    for n in range(5):  # this machine's own records, never shared: the buckets here change
        assert cli("checkpoint", input=f"b's note {n}", cwd=b).exit_code == 0
    records[1].unlink()
    pulled = cli("sync", "pull", cwd=b)
    assert pulled.exit_code == 0 and "1 of them lost here" in pulled.stdout, pulled.output
    assert records[1].exists()


def test_a_lost_record_is_found_without_the_cache(cli, repo, remote, b):
    records = _shared(cli, repo, b)
    (state_dir(b) / "cache" / "sync-pull.json").unlink()
    records[2].unlink()
    pulled = cli("sync", "pull", cwd=b)
    assert "1 handoff" in pulled.stdout and "1 of them lost here" in pulled.stdout, pulled.output
    assert records[2].exists()


def test_the_whole_state_removed_is_brought_back(cli, repo, remote, b):
    records = _shared(cli, repo, b)
    task = (state_dir(b) / "tasks" / "t1.yaml").read_bytes()
    shutil.rmtree(b / ".ai" / "local")
    pulled = cli("sync", "pull", cwd=b)
    assert pulled.exit_code == 0, pulled.output
    assert pulled.stdout == ("imported from origin: 1 task, 1 handoff, 2 checkpoints "
                             "(4 of them lost here since the last pull)\n")
    assert all(p.exists() for p in records)
    assert (state_dir(b) / "tasks" / "t1.yaml").read_bytes() == task
    listed = json.loads(cli("task", "list", "--json", cwd=b).stdout)
    assert [t["id"] for t in (listed if isinstance(listed, list) else listed["tasks"])] == ["t1"]


def test_a_task_record_deleted_here_is_brought_back(cli, repo, remote, b):
    _shared(cli, repo, b)
    cli("task", "start", "t2")
    assert cli("sync", "push").exit_code == 0
    assert "1 task" in cli("sync", "pull", cwd=b).stdout
    path = state_dir(b) / "tasks" / "t1.yaml"
    data = path.read_bytes()
    path.unlink()
    pulled = cli("sync", "pull", cwd=b)
    assert pulled.stdout == ("imported from origin: 1 task, 0 handoffs, 0 checkpoints "
                             "(1 of them lost here since the last pull)\n"), pulled.output
    assert path.read_bytes() == data


def test_full_reads_every_entry_of_every_ref(cli, repo, remote, b):
    records = _shared(cli, repo, b)
    cache = state_dir(b) / "cache" / "sync-pull.json"
    kept = cache.read_bytes()
    records[0].unlink()
    # A cache that says the bucket is whole without it (the names here now): only --full looks past it.
    found = json.loads(kept)
    bucket = f"checkpoints/{records[0].name[0:4]}-{records[0].name[4:6]}/{records[0].name[-19:-17]}"
    names = sorted(p.name for p in records[0].parent.iterdir() if p.name[-19:-17] == records[0].name[-19:-17])
    found["buckets"][bucket] = hashlib.sha1("\n".join(names).encode()).hexdigest()
    cache.write_text(json.dumps(found))
    assert cli("sync", "pull", cwd=b).stdout == "nothing new from origin\n"
    before = snapshot(b)
    full = cli("sync", "pull", "--full", "--json", cwd=b)
    assert full.exit_code == 0, full.output
    out = json.loads(full.stdout)
    assert [i["path"] for i in out["imported"]] == [f"checkpoints/{records[0].name}"] and out["restored"] == 1
    assert records[0].exists()
    changed = {k for k in snapshot(b) if snapshot(b).get(k) != before.get(k)}
    assert {k for k in changed if not k.endswith(("ledger.jsonl", ".json", ".idx"))} == {
        str(records[0].relative_to(b))}
    again = cli("sync", "pull", "--full", cwd=b)
    assert again.exit_code == 0 and again.stdout == "nothing new from origin\n"


def test_full_with_nothing_missing_writes_nothing(cli, repo, remote, b):
    _shared(cli, repo, b)
    before, refs = snapshot(b), git(b, "for-each-ref")
    again = cli("sync", "pull", "--full", cwd=b)
    assert again.exit_code == 0 and again.stdout == "nothing new from origin\n"
    assert snapshot(b) == before and git(b, "for-each-ref") == refs


def test_a_lost_record_no_ref_holds_any_more_is_named(cli, repo, remote, b, tmp_path):
    records = _shared(cli, repo, b)
    lost = records[0]
    lost.unlink()
    rewrite_ref(remote, machine_ref(repo), {layout_path("checkpoints", lost.name): None}, tmp_path)
    pulled = cli("sync", "pull", cwd=b)
    assert pulled.exit_code == 0 and pulled.stdout == "nothing new from origin\n", pulled.output
    assert (f"1 entry this machine settled on is missing here and no ref of origin holds it any more: "
            f"checkpoints/{lost.name}") in pulled.stderr
    out = json.loads(cli("sync", "pull", "--json", cwd=b).stdout)
    assert out["missing"] == [f"checkpoints/{lost.name}"] and out["imported"] == []
    assert not lost.exists()
