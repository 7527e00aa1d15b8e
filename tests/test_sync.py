"""`majordomus sync` (design §13) with local bare repositories as remotes: no network."""

from __future__ import annotations

import json
import stat
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from freezegun import freeze_time
from helpers import commit_file, events_named, git, run_here, snapshot, state_dir
from helpers.sync import (
    HANDOFF,
    clone,
    events,
    git_view,
    layout_path,
    machine_id,
    machine_ref,
    read_remote,
    record_files,
    remote_files,
    remote_refs,
    rewrite_ref,
    write_handoff,
)


@pytest.fixture
def b(tmp_path: Path, remote: Path) -> Path:
    return clone(tmp_path, remote, "b")


def test_records_travel_from_a_to_b_and_b_resumes(cli, repo, remote, b):
    with freeze_time("2026-03-01T10:00:00Z"):
        cli("task", "start", "t1", "--objective", "Fix login")
        cli("checkpoint", input="first note")
    with freeze_time("2026-03-01T10:05:00Z"):
        cli("checkpoint", input="second note")
    with freeze_time("2026-03-01T10:10:00Z"):
        handoff = write_handoff(repo, HANDOFF)
    a_checkpoints = sorted(p.name for p in (state_dir(repo) / "checkpoints").iterdir())
    pushed = cli("sync", "push", "--checkpoints")
    assert pushed.exit_code == 0, pushed.output
    assert f"pushed {machine_ref(repo)} to origin" in pushed.stdout
    assert "sent 1 task, 1 handoff, 2 checkpoints" in pushed.stdout

    pulled = cli("sync", "pull", cwd=b)
    assert pulled.exit_code == 0, pulled.output
    assert "imported from origin: 1 task, 1 handoff, 2 checkpoints" in pulled.stdout
    for name in a_checkpoints:
        mine = state_dir(b) / "checkpoints" / name
        assert mine.read_bytes() == (state_dir(repo) / "checkpoints" / name).read_bytes()
        assert stat.S_IMODE(mine.stat().st_mode) == 0o600
    copied = state_dir(b) / "handoffs" / handoff.name
    assert copied.read_bytes() == handoff.read_bytes() and stat.S_IMODE(copied.stat().st_mode) == 0o600
    imports = events(b, "sync.import")
    assert sorted(e["path"] for e in imports) == sorted(
        [f"checkpoints/{n}" for n in a_checkpoints] + [f"handoffs/{handoff.name}", "tasks/t1.yaml"])
    assert all(e["remote"] == "origin" and e["task"] == "t1" and len(e["sha256"]) == 64 for e in imports)
    assert {e["machine"] for e in imports} == {machine_ref(repo)}
    assert cli("ledger", "--verify", cwd=b).exit_code == 0  # the batched events keep the hash chain

    listed = json.loads(cli("checkpoint", "--list", "--json", cwd=b).stdout)
    assert sorted(item["name"] for item in listed) == a_checkpoints
    task = json.loads(cli("task", "show", "t1", "--json", cwd=b).stdout)
    assert task["status"] == "handed-off" and task["worktree"] == str(repo)

    # An imported task is never active on arrival; `task resume` takes it here.
    assert cli("checkpoint", input="not yet", cwd=b).exit_code == 11
    assert cli("task", "resume", "t1", cwd=b).exit_code == 0
    assert cli("checkpoint", "--show", cwd=b).stdout.endswith("second note\n")
    assert cli("checkpoint", input="B carries on", cwd=b).exit_code == 0
    assert cli("checkpoint", "--show", cwd=b).stdout.endswith("B carries on\n")


def test_one_ref_per_machine_in_the_split_layout(cli, repo, remote, b):
    with freeze_time("2026-03-01T10:00:00Z"):
        cli("task", "start", "t1")
        cli("checkpoint", input="march")
    with freeze_time("2026-04-02T10:00:00Z"):
        cli("checkpoint", input="april")
        handoff = write_handoff(repo)
    assert cli("sync", "push", "--checkpoints").exit_code == 0
    mid = machine_id(repo)
    assert (state_dir(repo) / "machine-id").read_text() == mid + "\n"
    assert stat.S_IMODE((state_dir(repo) / "machine-id").stat().st_mode) == 0o600
    assert remote_refs(remote) == ["refs/heads/main", f"refs/majordomus/machines/{mid}"]
    names = sorted(p.name for p in (state_dir(repo) / "checkpoints").iterdir())
    assert [n[:6] for n in names] == ["202603", "202604"]
    expected = sorted(["format", "tasks/t1.yaml", layout_path("handoffs", handoff.name)]
                      + [layout_path("checkpoints", n) for n in names])
    assert remote_files(remote, machine_ref(repo)) == expected
    assert read_remote(remote, machine_ref(repo), "format") == b"majordomus-state 2\n"
    # B pushes its own ref; A's is untouched, and the machine id stays what it was.
    cli("sync", "pull", cwd=b)
    cli("task", "start", "t2", cwd=b)
    a_ref = git(remote, "rev-parse", machine_ref(repo))
    assert cli("sync", "push", cwd=b).exit_code == 0
    assert machine_id(b) != mid
    assert remote_refs(remote) == sorted(["refs/heads/main", machine_ref(repo), machine_ref(b)])
    assert git(remote, "rev-parse", machine_ref(repo)) == a_ref
    assert cli("sync", "push", "--checkpoints").stdout.startswith("already up to date:")
    assert machine_id(repo) == mid


def test_head_index_work_tree_and_branches_untouched(cli, repo, remote, b):
    git(repo, "tag", "-a", "v1", "-m", "a tag that must not travel")
    (repo / "dirty.txt").write_text("uncommitted\n")
    git(repo, "add", "dirty.txt")
    (repo / "untracked.txt").write_text("untracked\n")
    cli("task", "start", "t1")
    cli("checkpoint", input="note")
    write_handoff(repo, HANDOFF)
    before_a, before_b = git_view(repo), git_view(b)
    remote_before = git(remote, "for-each-ref", "refs/heads")
    assert cli("sync", "push", "--checkpoints").exit_code == 0
    assert cli("sync", "pull", cwd=b).exit_code == 0
    cli("task", "resume", "t1", cwd=b)
    cli("checkpoint", input="from b", cwd=b)
    assert cli("sync", "push", "--checkpoints", cwd=b).exit_code == 0
    assert cli("sync", "pull").exit_code == 0
    assert git_view(repo) == before_a and git_view(b) == before_b
    assert git(remote, "for-each-ref", "refs/heads") == remote_before
    assert remote_refs(remote) == sorted(["refs/heads/main", machine_ref(repo), machine_ref(b)])


def test_push_sends_checkpoints_only_when_asked(cli, repo, remote):
    cli("task", "start", "t1")
    cli("checkpoint", input="note")
    assert cli("sync", "push").exit_code == 0
    assert remote_files(remote, machine_ref(repo)) == ["format", "tasks/t1.yaml"]
    assert read_remote(remote, machine_ref(repo), "tasks/t1.yaml") == (state_dir(repo) / "tasks" / "t1.yaml").read_bytes()
    assert cli("sync", "push", "--checkpoints").exit_code == 0
    assert record_files(remote, machine_ref(repo), "checkpoints") == [
        p.name for p in (state_dir(repo) / "checkpoints").iterdir()]


def test_what_the_push_says_it_sent_is_what_the_remote_did_not_have(cli, repo, remote):
    """The count is of what the remote lacked, not of what is new since this machine's last commit: a push
    stopped after its local commit, or a remote that lost the ref, sends everything again, and says so.
    The edge: a push after a push that landed sends the new checkpoint alone."""
    cli("task", "start", "t1")
    cli("checkpoint", input="note")
    assert "sent 1 task, 0 handoffs, 1 checkpoint" in cli("sync", "push", "--checkpoints").stdout
    cli("checkpoint", input="a second note")
    assert "sent 1 task, 0 handoffs, 1 checkpoint" in cli("sync", "push", "--checkpoints").stdout  # t1 moved too
    git(remote, "update-ref", "-d", machine_ref(repo))  # the remote lost it (or never got the last push)
    again = cli("sync", "push", "--checkpoints")
    assert again.exit_code == 0 and "sent 1 task, 0 handoffs, 2 checkpoints" in again.stdout, again.stdout
    assert record_files(remote, machine_ref(repo), "checkpoints") == sorted(
        p.name for p in (state_dir(repo) / "checkpoints").iterdir())


def test_two_clones_pushing_without_pulling_both_land_at_once(cli, repo, remote, b):
    with freeze_time("2026-03-01T10:00:00Z"):
        cli("task", "start", "from-a")
        cli("checkpoint", input="a's note")
        cli("task", "start", "from-b", cwd=b)
        cli("checkpoint", input="b's note", cwd=b)
    first = json.loads(cli("sync", "push", "--checkpoints", "--json").stdout)
    second = json.loads(cli("sync", "push", "--checkpoints", "--json", cwd=b).stdout)
    assert first["pushed"] and second["pushed"]
    assert first["attempts"] == second["attempts"] == 1  # distinct refs: nothing to race for
    assert second["sent"] == {"tasks": 1, "handoffs": 0, "checkpoints": 1, "runs": 0}
    assert "imported from origin: 1 task, 0 handoffs, 1 checkpoint" in cli("sync", "pull").stdout
    assert {t["id"] for t in json.loads(cli("task", "list", "--json").stdout)} == {"from-a", "from-b"}


def test_repeated_pull_imports_nothing_and_writes_nothing(cli, repo, remote, b):
    cli("task", "start", "t1")
    cli("checkpoint", input="note")
    write_handoff(repo, HANDOFF)
    cli("sync", "push", "--checkpoints")
    first = cli("sync", "pull", cwd=b)
    assert "imported" in first.stdout
    before, refs = snapshot(b), git(b, "for-each-ref")
    again = cli("sync", "pull", cwd=b)
    assert again.exit_code == 0 and again.stdout == "nothing new from origin\n"
    assert snapshot(b) == before and git(b, "for-each-ref") == refs


def test_tampered_record_is_refused_and_the_rest_imported(cli, repo, remote, b, tmp_path):
    cli("task", "start", "t1")
    cli("checkpoint", input="honest note")
    handoff = write_handoff(repo, HANDOFF)
    cli("sync", "push", "--checkpoints")
    ref, path = machine_ref(repo), layout_path("handoffs", handoff.name)
    forged = read_remote(remote, ref, path).replace(b"Keep the cache.", b"Drop the cache.")
    rewrite_ref(remote, ref, {path: forged}, tmp_path)
    result = cli("sync", "pull", cwd=b)
    assert result.exit_code == 10
    assert f"{path} ({ref}): its content does not match its name" in result.stderr
    assert not (state_dir(b) / "handoffs" / handoff.name).exists()
    assert len(list((state_dir(b) / "checkpoints").iterdir())) == 1  # what verifies is imported
    assert f"handoffs/{handoff.name}" not in [e["path"] for e in events(b, "sync.import")]
    assert cli("sync", "pull", cwd=b).exit_code == 10  # every pull that sees it refuses it again
    # A's next push folds the remote's copy of its own ref: the forgery is refused there too, and A's ref
    # carries its honest record again; B's next pull imports it.
    pushed = cli("sync", "push", "--checkpoints")
    assert pushed.exit_code == 10 and "does not match its name" in pushed.stderr
    assert read_remote(remote, ref, path) == handoff.read_bytes()
    assert cli("sync", "pull", cwd=b).exit_code == 0
    assert (state_dir(b) / "handoffs" / handoff.name).read_bytes() == handoff.read_bytes()


def test_tampered_new_record_alone_writes_nothing(cli, repo, remote, b, tmp_path):
    cli("task", "start", "t1")
    cli("checkpoint", input="note")
    cli("sync", "push", "--checkpoints")
    cli("sync", "pull", cwd=b)
    existing = next((state_dir(repo) / "checkpoints").iterdir())
    forged_name = existing.name.replace(existing.name[:8], "20990101")
    forged = existing.read_bytes().replace(b"note", b"forged")
    rewrite_ref(remote, machine_ref(repo), {layout_path("checkpoints", forged_name): forged}, tmp_path)
    before, ledger = snapshot(b), (state_dir(b) / "ledger.jsonl").read_bytes()
    result = cli("sync", "pull", cwd=b)
    assert result.exit_code == 10 and "does not match its name" in result.stderr
    # Nothing but the ledger's account of the refusal (design §13): one event appended, the rest as it was.
    after = (state_dir(b) / "ledger.jsonl").read_bytes()
    assert after.startswith(ledger) and after.count(b"\n") == ledger.count(b"\n") + 1
    [refused] = events(b, "sync.refused")
    assert refused["count"] == 1 and refused["refused"][0]["path"].endswith(forged_name)
    now = snapshot(b)
    assert {k for k in set(now) | set(before) if now.get(k) != before.get(k)} == {".ai/local/state/ledger.jsonl"}


@pytest.mark.parametrize("old, new, reason", [
    (b'id: "t1"', b'id: "t2"', "it names task `t2`, not `t1`"),
    (b"handoff: null", b'handoff: "handoffs/../../../etc/passwd"', "its `handoff` is not a record in handoffs/"),
    (b'status: "active"', b'status: "owned"', "unreadable (`status` 'owned' is not one of active"),
    (b'id: "t1"', b"id: [t1", "unreadable"),
])
def test_invalid_task_record_on_the_remote_is_refused(cli, repo, remote, b, tmp_path, old, new, reason):
    cli("task", "start", "t1")
    cli("sync", "push")
    task = (state_dir(repo) / "tasks" / "t1.yaml").read_bytes()
    assert old in task
    rewrite_ref(remote, machine_ref(repo), {"tasks/t1.yaml": task.replace(old, new)}, tmp_path)
    before = snapshot(b)
    result = cli("sync", "pull", cwd=b)
    assert result.exit_code == 10 and f"tasks/t1.yaml ({machine_ref(repo)}): {reason}" in result.stderr
    assert not (state_dir(b) / "tasks").exists() or list((state_dir(b) / "tasks").iterdir()) == []
    assert events(b, "sync.import") == [] and [e["count"] for e in events(b, "sync.refused")] == [1]
    assert {k for k in snapshot(b)} - set(before) <= {".ai/", ".ai/local/", ".ai/local/.gitignore",
                                                      ".ai/local/state/", ".ai/local/state/.sync-lock",
                                                      ".ai/local/state/cache/", ".ai/local/state/ledger.jsonl"}


def test_remote_without_majordomus_refs_is_a_clear_error(cli, repo, remote, b):
    before = snapshot(b)
    result = cli("sync", "pull", cwd=b)
    assert result.exit_code == 2
    assert "origin has no majordomus state to pull" in result.stderr
    assert "majordomus sync push origin" in result.stderr
    assert snapshot(b) == before and not git(b, "for-each-ref", "refs/majordomus")
    status = json.loads(cli("sync", "status", "--json", cwd=b).stdout)
    assert status["machines"] == [] and status["behind"]["tasks"] == []


@pytest.mark.parametrize("command", ["push", "pull", "status", "compact"])
def test_no_remote_at_all_is_a_clear_error(cli, repo, command):
    cli("task", "start", "t1")
    extra = ["--idle-days", "1"] if command == "compact" else []
    before, refs = snapshot(repo), git(repo, "for-each-ref")
    result = cli("sync", command, *extra)
    assert result.exit_code == 2
    assert "this repository has no remote to sync with" in result.stderr
    assert "git remote add origin URL" in result.stderr
    named = cli("sync", command, "elsewhere", *extra)
    assert named.exit_code == 2 and "no remote named `elsewhere`" in named.stderr
    assert snapshot(repo) == before and git(repo, "for-each-ref") == refs


def test_default_remote_is_the_upstream_remote(cli, repo, remote, tmp_path):
    other = tmp_path / "other.git"
    git(tmp_path, "init", "-q", "--bare", str(other))
    git(repo, "remote", "add", "upstream", str(other))
    git(repo, "push", "-q", "-u", "upstream", "main")
    cli("task", "start", "t1")
    assert "to upstream" in cli("sync", "push").stdout
    assert machine_ref(repo) in remote_refs(other) and machine_ref(repo) not in remote_refs(remote)


def test_a_remote_whose_hook_rejects_the_push(cli, repo, remote):
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'refs/majordomus are not welcome here' >&2\nexit 1\n")
    hook.chmod(0o755)
    cli("task", "start", "t1")
    result = cli("sync", "push")
    assert result.exit_code == 12
    assert f"origin rejected {machine_ref(repo)}" in result.stderr
    assert "refs/majordomus are not welcome here" in result.stderr
    assert "ask its owner" in result.stderr
    assert remote_refs(remote) == ["refs/heads/main"]
    assert events(repo, "sync.push") == []


def test_task_active_on_another_machine_is_not_active_here(cli, repo, remote, b):
    cli("task", "start", "t1")
    # Same path on both machines (CI runners, sandboxes): only this machine's index makes a task active here.
    record = state_dir(repo) / "tasks" / "t1.yaml"
    record.write_bytes(record.read_bytes().replace(f'"{repo}"'.encode(), f'"{b}"'.encode()))
    cli("sync", "push")
    cli("sync", "pull", cwd=b)
    assert json.loads(cli("task", "show", "t1", "--json", cwd=b).stdout)["worktree"] == str(b)
    assert cli("checkpoint", input="x", cwd=b).exit_code == 11
    before = snapshot(b)
    refused = cli("task", "resume", "t1", cwd=b)
    assert refused.exit_code == 10 and "on another machine" in refused.stderr and "--force" in refused.stderr
    assert snapshot(b) == before
    assert cli("task", "resume", "t1", "--force", cwd=b).exit_code == 0
    assert events(b, "task.resume")[-1]["takeover"] is True
    assert cli("checkpoint", input="taken over", cwd=b).exit_code == 0


def test_pointer_to_an_unshared_checkpoint(cli, repo, remote, b):
    cli("task", "start", "t1")
    cli("checkpoint", input="kept on a")
    write_handoff(repo, HANDOFF)
    cli("sync", "push")  # no --checkpoints: the task points at a record B will not have
    cli("sync", "pull", cwd=b)
    cli("task", "resume", "t1", cwd=b)
    shown = cli("checkpoint", "--show", cwd=b)
    assert shown.exit_code == 0 and shown.stdout == ""
    assert json.loads(cli("checkpoint", "--list", "--json", cwd=b).stdout) == []


def test_nothing_to_push_writes_nothing(cli, repo, remote):
    before = snapshot(repo)
    result = cli("sync", "push")
    assert result.exit_code == 0 and "nothing to push" in result.stderr
    assert snapshot(repo) == before and remote_refs(remote) == ["refs/heads/main"]


def test_a_corrupted_local_record_is_not_shared(cli, repo, remote):
    cli("task", "start", "t1")
    cli("checkpoint", input="one")
    commit_file(repo, "x", "x")
    cli("checkpoint", input="two")
    [victim] = [p for p in (state_dir(repo) / "checkpoints").iterdir() if p.read_bytes().endswith(b"one\n")]
    victim.write_bytes(victim.read_bytes().replace(b"one", b"uno"))
    result = cli("sync", "push", "--checkpoints")
    assert result.exit_code == 10 and f"checkpoints/{victim.name} (here)" in result.stderr
    assert "pushed" in result.stdout
    assert victim.name not in record_files(remote, machine_ref(repo), "checkpoints")
    assert len(record_files(remote, machine_ref(repo), "checkpoints")) == 1


def test_sync_subcommands_have_help(cli):
    for sub in ("push", "pull", "status", "compact"):
        result = cli("sync", sub, "--help")
        assert result.exit_code == 0 and "Usage:" in result.stdout


def test_append_many_chains_like_append(tmp_path):
    from majordomus.store import ledger

    path = str(tmp_path / "ledger.jsonl")
    ledger.append(path, "one", {"task": "t"}, "2026-01-01T00:00:00Z")
    with open(path, "ab") as fh:
        fh.write(b'{"v":1,"seq":2,"torn')  # a writer killed mid-append
    written = ledger.append_many(path, [("two", {"n": 2}), ("three", {"n": 3})], "2026-01-01T00:00:01Z")
    assert [e["seq"] for e in written] == [2, 3]
    assert ledger.append_many(path, [], "2026-01-01T00:00:02Z") == []
    replayed = ledger.replay(path)
    assert [e["event"] for e in replayed.events] == ["one", "two", "three"] and replayed.dropped_lines == 1
    assert ledger.verify(path).ok


def test_console_script_exit_codes_and_json(repo, remote, b):
    from helpers import run

    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    missing = run("sync", "pull", cwd=b)
    assert missing.returncode == 2 and b"no majordomus state to pull" in missing.stderr and not missing.stdout
    pushed = run("sync", "push", "--json", cwd=repo)
    assert pushed.returncode == 0, pushed.stderr
    report = json.loads(pushed.stdout)
    assert report["pushed"] and report["sent"] == {"tasks": 1, "handoffs": 0, "checkpoints": 0, "runs": 0}
    assert report["ref"] == machine_ref(repo) and report["attempts"] == 1
    pulled = run("sync", "pull", "--json", cwd=b)
    assert pulled.returncode == 0
    assert [i["path"] for i in json.loads(pulled.stdout)["imported"]] == ["tasks/t1.yaml"]
    status = run("sync", "status", "--json", cwd=b)
    assert status.returncode == 0 and json.loads(status.stdout)["behind"]["tasks"] == []


def test_sync_from_a_linked_worktree_shares_one_state(cli, repo, remote, b, tmp_path):
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt), "-b", "side")
    cli("task", "start", "t1", cwd=wt)
    assert cli("sync", "push", cwd=wt).exit_code == 0  # branch `side` has no upstream: origin
    assert cli("sync", "push").stdout.startswith("already up to date:")  # one machine, one ref
    assert remote_refs(remote) == ["refs/heads/main", machine_ref(repo)]
    assert "imported from origin: 1 task" in cli("sync", "pull", cwd=b).stdout


def test_entries_this_version_does_not_know_are_left_alone(cli, repo, remote, b, tmp_path):
    cli("task", "start", "t1")
    cli("sync", "push")
    rewrite_ref(remote, machine_ref(repo), {"notes/n1.txt": b"from a newer majordomus\n", "extra": b"x\n"}, tmp_path)
    assert cli("sync", "pull", cwd=b).exit_code == 0
    assert not (state_dir(b) / "notes").exists() and not (state_dir(b) / "extra").exists()
    assert (state_dir(b) / "tasks" / "t1.yaml").exists()


def test_a_newer_format_is_refused_and_the_other_machines_imported(cli, repo, remote, b, tmp_path):
    cli("task", "start", "t1")
    cli("sync", "push")
    c = clone(tmp_path, remote, "c")
    cli("task", "start", "t2", cwd=c)
    cli("sync", "push", cwd=c)
    rewrite_ref(remote, machine_ref(c), {"format": b"majordomus-state 3\n"}, tmp_path, "format 3")
    result = cli("sync", "pull", cwd=b)
    assert result.exit_code == 12
    assert f"{machine_ref(c)}: written by a newer majordomus" in result.stderr and "upgrade majordomus" in result.stderr
    assert (state_dir(b) / "tasks" / "t1.yaml").exists() and not (state_dir(b) / "tasks" / "t2.yaml").exists()


@pytest.mark.parametrize(("content", "shown"), [
    (b"garbage\n", '"garbage\\n"'), (b"", "empty"), (b"majordomus-state 02x\n", "majordomus-state 02x"),
    (b"majordomus-state 0\n", "majordomus-state 0"), (b"x" * 65, "65 bytes"),
])
def test_a_format_file_no_majordomus_writes_is_said_so_not_newer(cli, repo, remote, b, tmp_path, content, shown):
    """`majordomus-state N` with N above what this version reads is newer (the edge: 3, above); anything else
    in `format` is not a format at all, and no upgrade would read it."""
    cli("task", "start", "t1")
    cli("sync", "push")
    c = clone(tmp_path, remote, "c")
    cli("task", "start", "t2", cwd=c)
    cli("sync", "push", cwd=c)
    rewrite_ref(remote, machine_ref(c), {"format": content}, tmp_path, "odd format")
    result = cli("sync", "pull", cwd=b)
    assert result.exit_code == 12
    assert f"{machine_ref(c)}: its `format` file (" in result.stderr and "is not one majordomus writes" in result.stderr
    assert shown in result.stderr and "newer" not in result.stderr, result.stderr
    assert (state_dir(b) / "tasks" / "t1.yaml").exists() and not (state_dir(b) / "tasks" / "t2.yaml").exists()


def test_a_symlinked_store_directory_is_refused(cli, repo, remote, tmp_path):
    cli("task", "start", "t1")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (state_dir(repo) / "handoffs").symlink_to(elsewhere)
    for command in ("push", "status"):
        result = cli("sync", command)
        assert result.exit_code == 12 and "symbolic link" in result.stderr
    assert remote_refs(remote) == ["refs/heads/main"]


@pytest.mark.parametrize("command, message", [("push", "cannot reach broken"),
                                              ("pull", "cannot fetch refs/majordomus/* from broken"),
                                              ("status", "cannot fetch refs/majordomus/* from broken")])
def test_an_unreachable_remote_is_a_clear_error(cli, repo, tmp_path, command, message):
    git(repo, "remote", "add", "broken", str(tmp_path / "no-such-repository"))
    cli("task", "start", "t1")
    before = snapshot(repo)
    result = cli("sync", command, "broken")
    assert result.exit_code == 12 and message in result.stderr
    assert "no-such-repository" in result.stderr  # what git said
    if command != "push":  # a push has committed its snapshot on its local ref and made its machine id
        assert snapshot(repo) == before


def test_only_majordomus_refs_leave_whatever_the_push_configuration(cli, repo, remote):
    git(repo, "config", "push.followTags", "true")
    git(repo, "config", "push.default", "matching")
    git(repo, "config", "remote.origin.push", "refs/heads/*:refs/heads/*")
    remote_main = git(remote, "rev-parse", "refs/heads/main")
    commit_file(repo, "ahead.txt", "a local commit the remote must not get\n")
    git(repo, "tag", "-a", "v2", "-m", "annotated, on a local commit")
    git(repo, "branch", "side")
    cli("task", "start", "t1")
    assert cli("sync", "push").exit_code == 0
    assert remote_refs(remote) == ["refs/heads/main", machine_ref(repo)]
    assert git(remote, "rev-parse", "refs/heads/main") == remote_main


def _run_record(repo: Path, body: str, kind: str = "run") -> str:
    """An execution record (design §17) as `majordomus run` stores one: the §4 identity, its own fields."""
    import hashlib

    from majordomus import clock, identity, tasks
    from majordomus.lite import names
    from majordomus.store import records
    from majordomus.workspace import Workspace

    ws = Workspace.open(str(repo))
    at = clock.now_iso()
    fields = [(k, kind if k == "kind" else v) for k, v in identity.fields(ws, "checkpoint", tasks.active(ws), at)]
    fields += [("argv", ["pytest", "-q"]), ("label", "pytest"), ("exit_status", 0), ("started_at", at),
               ("duration_ms", 1234), ("output_sha256", "0" * 64), ("output_bytes", 42)]
    data = records.render(fields, body)
    meta = dict(fields)
    name = names.record_name(clock.compact_of(at), meta["branch"], meta["head"], hashlib.sha256(data).hexdigest())
    (state_dir(repo) / "runs").mkdir(mode=0o700, exist_ok=True)
    (state_dir(repo) / "runs" / name).write_bytes(data)
    return name


def test_run_records_travel_with_the_checkpoints(cli, repo, remote, b):
    cli("task", "start", "t1")
    run = _run_record(repo, "3 passed in 0.12s")
    odd = _run_record(repo, "not a run", kind="checkpoint")
    assert cli("sync", "push").exit_code == 0
    assert record_files(remote, machine_ref(repo), "runs") == []
    pushed = cli("sync", "push", "--checkpoints")
    assert pushed.exit_code == 10 and f"runs/{odd} (here): a record of kind `checkpoint` does not belong" in pushed.stderr
    assert remote_files(remote, machine_ref(repo)).count(layout_path("runs", run)) == 1
    assert "imported from origin: 1 task, 0 handoffs, 0 checkpoints, 1 run" in cli("sync", "pull", cwd=b).stdout
    assert (state_dir(b) / "runs" / run).read_bytes() == (state_dir(repo) / "runs" / run).read_bytes()
    assert [e["kind"] for e in events(b, "sync.import") if e["path"].startswith("runs/")] == ["run"]


@pytest.mark.parametrize("content", [b"Not An Id\n", b"../../x\n", b"a\nb\n", b""])
def test_a_machine_id_file_that_is_not_one_is_exit_12(cli, repo, remote, content):
    cli("task", "start", "t1")
    (state_dir(repo) / "machine-id").write_bytes(content)
    before = snapshot(repo), git(repo, "for-each-ref")
    for command in ("push", "status"):
        result = cli("sync", command)
        assert result.exit_code == 12 and "machine-id does not hold a machine id" in result.stderr
        assert "move it away" in result.stderr
    assert (snapshot(repo), git(repo, "for-each-ref")) == before
    assert remote_refs(remote) == ["refs/heads/main"]


def test_a_remote_name_holding_a_line_break_of_unicode_is_printed_escaped(cli, repo, remote):
    """git lets a remote's name hold U+2028: push, pull and status print it escaped, as messages do."""
    odd = "or\u2028gin"
    git(repo, "remote", "rename", "origin", odd)
    cli("task", "start", "t1")
    for args in (("sync", "push", odd), ("sync", "pull", odd), ("sync", "status", odd)):
        result = cli(*args)
        assert "\u2028" not in result.output and "or\\u2028gin" in result.output, (args, result.output)


@pytest.mark.parametrize("directory", ["runs", "checkpoints", "handoffs"])
@pytest.mark.parametrize("command", [("sync", "push", "--checkpoints"), ("sync", "pull")])
def test_a_store_directory_that_is_a_file_is_exit_12_not_an_internal_error(cli, repo, remote, directory, command):
    cli("task", "start", "t1")
    assert cli("sync", "push").exit_code == 0
    target = state_dir(repo) / directory
    if target.exists():
        target.rmdir()
    target.write_text("x\n")
    result = cli(*command)
    assert result.exit_code == 12 and result.stderr.startswith("majordomus: ") and "internal error" not in result.stderr, \
        result.output


def test_a_sha256_repository_that_pygit2_cannot_open_says_so_and_what_still_works(tmp_path):
    """git works in a sha256 repository (checkpoints do); the libgit2 under pygit2 may not: sync is exit 12
    naming that, not a hint to ask git, which is fine. One past the edge: the checkpoint there works."""
    repo = tmp_path / "s256"
    git(tmp_path, "init", "-q", "--object-format=sha256", str(repo))
    git(repo, "commit", "-q", "--allow-empty", "-m", "first")
    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    assert run_here("checkpoint", cwd=repo, input="a note\n").returncode == 0
    try:
        import pygit2

        pygit2.Repository(str(repo / ".git"))
    except pygit2.GitError:
        done = run_here("sync", "status", "--no-fetch", cwd=repo)
        assert done.returncode == 12 and b"cannot read this object format, which git can" in done.stderr, done
    else:  # a pygit2 built with sha256: sync just works
        assert run_here("sync", "status", "--no-fetch", cwd=repo).returncode in (0, 2)


@pytest.mark.parametrize("detail, cause", [
    ("remote: fatal: unable to write loose object file: No space left on device\nerror: remote unpack failed: "
     "unpack-objects abnormal exit\n ! [remote rejected] HEAD -> refs/majordomus/machines/x (unpacker error)", "store"),
    (" ! [remote rejected] refs/majordomus/machines/x (pre-receive hook declined)", "rule"),
])
def test_a_rejected_push_is_told_apart_a_remote_that_could_not_store_it_from_one_that_refused_it(detail, cause):
    """git's words say which: a full disk or an unpacker error is the remote's trouble, run again once it can;
    a hook's decline is a rule to ask its owner about."""
    from majordomus.sync import transport

    hint = transport.rejection_hint(detail, "a hook or rule on the remote refuses refs/majordomus/*")
    assert ("could not store what was sent" in hint) == (cause == "store"), hint
    assert ("a hook or rule" in hint) == (cause == "rule"), hint


@pytest.mark.parametrize("command, ref", [(("sync", "push", "--checkpoints"), "refs/majordomus/machines/{id}"),
                                          (("sync", "pull"), "refs/majordomus/remotes/origin/machines/{id}")])
def test_a_ref_lock_a_stopped_git_left_is_named_with_how_to_remove_it(repo, remote, command, ref):
    """A git killed while it moved a ref (a power loss, the OOM killer) leaves `REF.lock`, and every later git
    that moves the ref fails until it is removed: the message names the file and how to remove it, never a
    `git fsck` that does not. One past the edge: with it removed, the same command lands."""
    from helpers.sync import clone, machine_id

    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    assert run_here("checkpoint", cwd=repo, input="a note\n").returncode == 0
    assert run_here("sync", "push", cwd=repo).returncode == 0
    assert run_here("checkpoint", cwd=repo, input="a second note\n").returncode == 0
    other = clone(repo.parent, remote, "other")  # a machine whose ref the pull brings in
    assert run_here("task", "start", "t2", cwd=other).returncode == 0
    assert run_here("sync", "push", cwd=other).returncode == 0
    lock = repo / ".git" / (ref.format(id=machine_id(repo if command[1] == "push" else other)) + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("")
    done = run_here(*command, cwd=repo)
    err = done.stderr.decode()
    assert done.returncode == 12 and f"a git command that was stopped left {lock}" in err and f"rm '{lock}'" in err, err
    lock.unlink()
    assert run_here(*command, cwd=repo).returncode == 0


def test_a_task_let_go_on_the_other_machine_is_said_so_and_resumed_without_force(repo, remote, tmp_path):
    """Two machines held one task (a conflict kept each one's record); doctor's advice for the one that lets it
    go — release, push — pauses it on the other at its next pull too. That pull says it was let go there
    (never that another machine holds it: nobody does), the ledger's reason says so, and a plain resume takes
    it; doctor is then whole. One past the edge: a newer record that is active elsewhere still says --force."""
    from helpers.sync import clone

    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    assert run_here("sync", "push", cwd=repo).returncode == 0
    b = clone(tmp_path, remote, "b")
    assert run_here("sync", "pull", cwd=b).returncode == 0
    assert run_here("task", "resume", "t1", "--force", cwd=b).returncode == 0
    assert run_here("sync", "push", cwd=b).returncode == 0
    later = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(seconds=2)
    with freeze_time(later) as clock:  # each step a second after the one before
        assert run_here("checkpoint", cwd=repo, input="A2\n").returncode == 0  # a later change here: a conflict
        assert b"kept the local record" in run_here("sync", "pull", cwd=repo).stdout
        clock.tick(1)
        assert run_here("task", "release", "t1", cwd=repo).returncode == 0
        assert run_here("sync", "push", cwd=repo).returncode == 0
        clock.tick(1)
        pulled = run_here("sync", "pull", cwd=b).stdout.decode()
        assert "saying it was let go there (resume it here with `majordomus task resume t1`)" in pulled, pulled
        assert "--force" not in pulled
        [pause] = [e for e in events_named(b, "task.pause") if e.get("by") == "sync"]
        assert pause["reason"].endswith("it was let go there (it is paused now)"), pause
        clock.tick(1)
        assert run_here("task", "resume", "t1", cwd=b).returncode == 0
        doctor = run_here("doctor", "--strict", cwd=b)
        assert doctor.returncode == 0, doctor.stdout


def test_a_task_resumed_here_in_the_second_it_was_started_elsewhere_is_no_unfinished_start(repo, remote, tmp_path):
    """The record of a task started on one machine and resumed on another in the same second has its start
    and its last change at one time, as an unfinished start here would: its first claim, the other machine's,
    tells them apart, and doctor is whole. One past the edge: the start's own record, here, is whole too."""
    from helpers.sync import clone

    b = clone(tmp_path, remote, "b")
    with freeze_time(datetime.now(timezone.utc).replace(microsecond=0) + timedelta(seconds=2)):
        assert run_here("task", "start", "t1", cwd=repo).returncode == 0
        assert run_here("sync", "push", cwd=repo).returncode == 0
        assert run_here("sync", "pull", cwd=b).returncode == 0
        assert run_here("task", "resume", "t1", "--force", cwd=b).returncode == 0
        for where in (b, repo):
            doctor = run_here("doctor", "--strict", "--json", cwd=where)
            codes = [f["code"] for f in json.loads(doctor.stdout)["findings"] if f["level"] != "ok"]
            assert "task.no-event" not in codes, (where, codes)
