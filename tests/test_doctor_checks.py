"""`majordomus doctor`: every finding of design §11 provoked for real in a scratch repository."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from freezegun import freeze_time
from helpers import HANDOFF_BODY, git, run, run_here, snapshot, start_task, state_dir

FINDING_KEYS = {"level", "code", "message", "path", "hint"}


def checkpoint(cli, text):
    result = cli("checkpoint", input=text)
    assert result.exit_code == 0, result.output
    return result.stdout.strip()


@pytest.fixture
def store(cli, repo):
    """A repository with one task and three checkpoints, all whole."""
    start_task(cli)
    paths = [checkpoint(cli, f"note {i}\nnext: step {i + 1}\n") for i in range(3)]
    return [repo / p for p in paths]


def doctor(cli, *args):
    result = cli("doctor", "--json", *args)
    report = json.loads(result.stdout)
    return result.exit_code, report


def codes(report, level=None):
    return [f["code"] for f in report["findings"] if level is None or f["level"] == level]


def only(report, code):
    found = [f for f in report["findings"] if f["code"] == code]
    assert found, f"no {code} finding in {codes(report)}"
    return found


def test_whole_store_is_all_ok_and_json_schema(cli, store):
    code, report = doctor(cli)
    assert code == 0
    assert set(report) == {"ok", "exit_code", "strict", "counts", "findings"}
    assert report["ok"] is True and report["exit_code"] == 0 and report["strict"] is False
    assert report["counts"] == {"fail": 0, "warn": 0, "ok": len(report["findings"])}
    for finding in report["findings"]:
        assert set(finding) == FINDING_KEYS
        assert finding["level"] == "ok"
        assert isinstance(finding["code"], str) and isinstance(finding["message"], str)
    assert {"config", "git", "store", "retention.checkpoints", "retention.handoffs", "ledger", "tasks",
            "continuity"} <= set(codes(report))
    assert "3 checkpoint records (limit 500)" in only(report, "retention.checkpoints")[0]["message"]


def test_doctor_writes_nothing(cli, repo, store):
    before = snapshot(repo)
    cli("doctor")
    cli("doctor", "--json")
    assert snapshot(repo) == before


def test_fresh_clone_without_state_is_ok_and_stays_without_state(cli, repo):
    code, report = doctor(cli)
    assert code == 0 and report["counts"]["fail"] == report["counts"]["warn"] == 0
    assert not (repo / ".ai" / "local").exists()


def test_edited_record_fails_digest_and_event(cli, store):
    path = store[1]
    path.write_bytes(path.read_bytes().replace(b"note 1", b"note X"))
    code, report = doctor(cli)
    assert code == 1 and report["ok"] is False and report["exit_code"] == 1
    digest = only(report, "record.digest")[0]
    assert digest["level"] == "fail" and digest["path"].endswith(path.name)
    assert "changed after it was written" in digest["message"]
    assert only(report, "record.changed")[0]["level"] == "fail"


def test_deleted_record_fails_missing(cli, store):
    store[0].unlink()
    code, report = doctor(cli)
    assert code == 1
    missing = only(report, "ledger.record-missing")
    assert len(missing) == 1 and missing[0]["level"] == "fail"
    assert store[0].name in missing[0]["message"] and "seq" in missing[0]["message"]


def test_record_mode_0644_fails(cli, store):
    os.chmod(store[2], 0o644)
    code, report = doctor(cli)
    assert code == 1
    perm = only(report, "perm.file")
    assert len(perm) == 1 and perm[0]["level"] == "fail" and "0644" in perm[0]["message"]
    assert perm[0]["hint"].startswith("chmod 600")


def test_directory_mode_0755_fails(cli, repo, store):
    os.chmod(state_dir(repo) / "checkpoints", 0o755)
    code, report = doctor(cli)
    assert code == 1
    assert "0755; state directories must be 0700" in only(report, "perm.directory")[0]["message"]


@pytest.mark.parametrize("name", [".lock", "ledger.jsonl", "active.json"])
def test_a_directory_where_a_state_file_belongs_is_not_a_file(cli, repo, store, name):
    """Not a mode to fix: a directory where the lock, the ledger or the index belongs is refused by name
    (the lock's hint removes it: every command makes it again)."""
    target = state_dir(repo) / name
    target.unlink()
    target.mkdir(mode=0o755)
    code, report = doctor(cli)
    assert code == 1
    [found] = only(report, "state.not-a-file")
    assert found["level"] == "fail" and found["path"].endswith(name)
    assert found["message"].endswith(f"{name} is a directory where majordomus keeps a file; no command can use it")
    assert ("rmdir" in found["hint"]) == (name == ".lock")
    assert not any(f["path"].endswith(name) for f in report["findings"] if f["code"].startswith("perm."))


@pytest.mark.parametrize("rel", ["tasks/t1.yaml", "context/t1/continuity.json", "cache/config.json",
                                 "context/t1/another", "cache/another"])
def test_a_directory_where_only_files_belong_is_not_a_file(cli, repo, store, rel):
    """tasks/, cache/ and each task's context/ID/ hold files only: a directory there (in place of the task's
    record, say, which every reader then refuses) is named, never walked into as a directory of the state.
    The edge: the same directory one level up, in the state itself, is walked (the test above)."""
    cli("context", "pin", "decision", "--", "keep it")
    target = state_dir(repo) / rel
    if target.exists():
        target.unlink()
    target.mkdir(mode=0o700)
    code, report = doctor(cli, "--strict")
    assert code == 1
    found = [f for f in only(report, "state.not-a-file") if f["path"].endswith(rel)]
    assert found and found[0]["level"] == "fail", report
    assert found[0]["message"].endswith("is a directory where majordomus keeps only files; a command that reads it "
                                        "refuses it")


def test_a_directory_in_the_state_named_like_no_file_is_still_walked(cli, repo, store):
    """One past it: a directory of another name is a directory like any other (its mode checked)."""
    (state_dir(repo) / ".lock2").mkdir(mode=0o755)
    code, report = doctor(cli)
    assert code == 1 and "state.not-a-file" not in codes(report)
    assert "0755; state directories must be 0700" in only(report, "perm.directory")[0]["message"]


def test_task_file_mode_is_checked_too(cli, repo, store):
    os.chmod(state_dir(repo) / "tasks" / "t1.yaml", 0o640)
    code, report = doctor(cli)
    assert code == 1 and only(report, "perm.file")[0]["path"].endswith("tasks/t1.yaml")


def test_force_added_record_fails_staged_tracked_committed(cli, repo, store):
    rel = str(store[0].relative_to(repo))
    git(repo, "add", "-f", rel)
    code, report = doctor(cli)
    assert code == 1
    found = only(report, "state.in-git")
    assert [f["path"] for f in found] == [rel] and "staged" in found[0]["message"]
    git(repo, "commit", "-q", "-m", "oops")
    code, report = doctor(cli)
    assert code == 1 and "tracked by git" in only(report, "state.in-git")[0]["message"]
    git(repo, "rm", "-q", "--cached", rel)
    code, report = doctor(cli)
    assert code == 1 and "HEAD's commit" in only(report, "state.in-git")[0]["message"]
    git(repo, "commit", "-q", "-m", "remove it again")
    code, report = doctor(cli)
    assert code == 0 and "state.in-git" not in codes(report)


def test_missing_ignore_file_warns(cli, repo, store):
    (repo / ".ai" / "local" / ".gitignore").unlink()
    code, report = doctor(cli)
    assert code == 0
    warn = only(report, "state.not-ignored")[0]
    assert warn["level"] == "warn" and "ledger.jsonl" in warn["message"]
    assert cli("doctor", "--strict").exit_code == 1


def test_torn_last_ledger_line_warns(cli, repo, store):
    ledger = state_dir(repo) / "ledger.jsonl"
    data = ledger.read_bytes()
    ledger.write_bytes(data[: len(data) - 40])  # the last event loses its end and its newline
    code, report = doctor(cli)
    assert code == 0 and report["ok"] is True
    dropped = only(report, "ledger.dropped")[0]
    assert dropped["level"] == "warn" and "1 torn or invalid line(s)" in dropped["message"]
    assert f"line {len(data.splitlines())}" in dropped["message"]
    # the record whose event was torn away has no event now
    no_event = only(report, "record.no-event")
    assert len(no_event) == 1 and no_event[0]["level"] == "warn"
    strict = cli("doctor", "--json", "--strict")
    assert strict.exit_code == 1 and json.loads(strict.stdout)["ok"] is False


@pytest.mark.parametrize("bad, shown", [(5, "line 2, 3, 4, 5, 6)"), (6, "line 2, 3, 4, 5, 6, …)")])
def test_dropped_lines_are_all_counted_and_the_first_five_named(cli, repo, bad, shown):
    """Counted, not kept: a ledger of millions of garbage lines must not hold a list of millions."""
    start_task(cli)
    ledger = state_dir(repo) / "ledger.jsonl"
    good = ledger.read_bytes()
    ledger.write_bytes(good + b"not an event\n" * bad)
    code, report = doctor(cli)
    assert code == 0
    dropped = only(report, "ledger.dropped")[0]["message"]
    assert f"{bad} torn or invalid line(s) skipped ({shown}" in dropped, dropped


def test_edited_ledger_line_fails_chain(cli, repo, store):
    ledger = state_dir(repo) / "ledger.jsonl"
    lines = ledger.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"t1"', b'"t2"')
    ledger.write_bytes(b"".join(lines))
    code, report = doctor(cli)
    assert code == 1
    chain = only(report, "ledger.chain")
    assert len(chain) == 1 and chain[0]["level"] == "fail" and "seq 3" in chain[0]["message"]


def test_removed_ledger_line_fails_chain_and_warns_record(cli, repo, store):
    ledger = state_dir(repo) / "ledger.jsonl"
    lines = ledger.read_bytes().splitlines(keepends=True)
    del lines[2]
    ledger.write_bytes(b"".join(lines))
    code, report = doctor(cli)
    assert code == 1
    assert only(report, "ledger.chain")[0]["level"] == "fail"
    assert len(only(report, "record.no-event")) == 1


def test_leftover_temp_file_warns(cli, repo, store):
    leftover = state_dir(repo) / "checkpoints" / ".tmp-4242-0"
    leftover.write_bytes(b"half a record")
    os.chmod(leftover, 0o600)
    code, report = doctor(cli)
    assert code == 0
    temp = only(report, "store.temp-file")
    assert len(temp) == 1 and temp[0]["level"] == "warn" and temp[0]["path"].endswith(".tmp-4242-0")
    assert cli("doctor", "--strict").exit_code == 1
    assert leftover.exists()  # reported, not removed


def test_retention_exceeded_by_two_warns_and_deletes_nothing(cli, repo, store):
    (repo / ".ai" / "config.yaml").write_text("checkpoint:\n  retention_max_files: 1\n")
    before = sorted(p.name for p in (state_dir(repo) / "checkpoints").iterdir())
    code, report = doctor(cli)
    assert code == 0
    warn = only(report, "retention.checkpoints")[0]
    assert warn["level"] == "warn"
    assert "3 checkpoint records" in warn["message"] and "(1)" in warn["message"]
    assert "nothing is deleted" in warn["message"]
    assert sorted(p.name for p in (state_dir(repo) / "checkpoints").iterdir()) == before
    assert cli("doctor", "--strict").exit_code == 1


def test_unknown_config_key_warns(cli, repo, store):
    (repo / ".ai" / "config.yaml").write_text("checkpoint:\n  max_body_line: 10\ncolour: blue\n")
    code, report = doctor(cli)
    assert code == 0
    unknown = only(report, "config.unknown-key")
    assert sorted(f["message"].split("`")[1] for f in unknown) == ["checkpoint.max_body_line", "colour"]
    assert all(f["level"] == "warn" for f in unknown)


def test_invalid_config_fails_and_other_checks_still_run(cli, repo, store):
    (repo / ".ai" / "config.yaml").write_text("checkpoint:\n  max_body_lines: -3\n")
    code, report = doctor(cli)
    assert code == 1
    bad = only(report, "config.invalid")[0]
    assert bad["level"] == "fail" and "checkpoint.max_body_lines" in bad["message"]
    assert "ledger" in codes(report, "ok") and "store" in codes(report, "ok")


def test_symlink_inside_state_fails(cli, repo, store, tmp_path):
    elsewhere = tmp_path / "elsewhere.md"
    elsewhere.write_text("x")
    (state_dir(repo) / "checkpoints" / "link.md").symlink_to(elsewhere)
    code, report = doctor(cli)
    assert code == 1
    assert only(report, "state.symlink")[0]["path"].endswith("link.md")


def test_state_directory_itself_a_symlink_fails(cli, repo, tmp_path):
    real = tmp_path / "real-local"
    real.mkdir()
    (repo / ".ai").mkdir()
    (repo / ".ai" / "local").symlink_to(real)
    code, report = doctor(cli)
    assert code == 1 and only(report, "state.symlink")


def test_record_copied_in_by_hand_warns_no_event(cli, repo, store):
    from majordomus.store import records

    data = b"---\nkind: \"checkpoint\"\n---\nfrom elsewhere\n"
    name = records.record_name("20260101T000000Z", "main", None, records.sha256(data))
    target = state_dir(repo) / "checkpoints" / name
    target.write_bytes(data)
    os.chmod(target, 0o600)
    code, report = doctor(cli)
    assert code == 0
    assert [f["path"].endswith(name) for f in only(report, "record.no-event")] == [True]


def test_stray_file_in_record_directory_warns(cli, repo, store):
    stray = state_dir(repo) / "checkpoints" / "notes.md"
    stray.write_text("mine")
    os.chmod(stray, 0o600)
    code, report = doctor(cli)
    assert code == 0 and only(report, "record.stray")[0]["level"] == "warn"


def test_stale_active_task_warns(cli, repo):
    with freeze_time("2026-09-03T10:00:00Z"):
        start_task(cli)
        checkpoint(cli, "one line\n")
    with freeze_time("2026-09-03T11:59:00Z"):
        code, report = doctor(cli)
        assert code == 0 and "task.stale" not in codes(report)
    with freeze_time("2026-09-03T12:01:00Z"):
        code, report = doctor(cli)
    assert code == 0
    stale = only(report, "task.stale")[0]
    assert stale["level"] == "warn" and "121 minutes ago" in stale["message"] and "`t1`" in stale["message"]


def test_never_checkpointed_task_counts_from_its_start(cli, repo):
    with freeze_time("2026-09-03T10:00:00Z"):
        start_task(cli)
    with freeze_time("2026-09-03T11:00:00Z"):
        assert "task.stale" not in codes(doctor(cli)[1])
    with freeze_time("2026-09-03T13:00:00Z"):
        stale = only(doctor(cli)[1], "task.stale")[0]
    assert "no checkpoint 180 minutes after it started" in stale["message"]


def test_done_task_is_never_stale(cli, repo):
    with freeze_time("2026-09-03T10:00:00Z"):
        start_task(cli)
        assert cli("task", "done").exit_code == 0
    with freeze_time("2026-09-04T10:00:00Z"):
        assert "task.stale" not in codes(doctor(cli)[1])


def test_unreadable_task_record_fails(cli, repo, store):
    task = state_dir(repo) / "tasks" / "t1.yaml"
    task.write_text("id: [unclosed\n")
    code, report = doctor(cli)
    assert code == 1 and only(report, "task.unreadable")[0]["level"] == "fail"


def test_handoff_records_are_checked_like_checkpoints(cli, repo, store):
    """Handoffs share the naming and front matter of checkpoints; written here through the core."""
    from majordomus import clock, identity, tasks
    from majordomus.store import commit, files
    from majordomus.workspace import Workspace

    ws = Workspace.open(str(repo))
    ws.ensure_state("handoffs")
    task = tasks.load(ws, "t1")
    written = []
    for i in range(3):
        at = clock.iso(clock.now())
        fields = identity.fields(ws, "handoff", task, at)
        name, data, digest = commit.rendered(fields, f"## State\nhandoff {i}")
        path, _created = files.link_in(ws.paths.directory("handoffs"), name, data)
        ws.event("task.handoff", task.id, at, path=ws.paths.relative(path), sha256=digest)
        written.append(Path(path))
    (repo / ".ai" / "config.yaml").write_text("handoff:\n  retention_max_files: 1\n")
    code, report = doctor(cli)
    assert code == 0
    warn = only(report, "retention.handoffs")[0]
    assert warn["level"] == "warn" and "3 handoff records" in warn["message"] and "(1)" in warn["message"]
    written[0].write_bytes(written[0].read_bytes() + b"tampered\n")
    written[1].unlink()
    code, report = doctor(cli)
    assert code == 1
    assert only(report, "record.digest")[0]["path"].endswith(written[0].name)
    assert only(report, "ledger.record-missing")[0]["message"].count(written[1].name) == 1


def test_strict_fails_on_warnings_only_when_asked(cli, repo, store):
    (repo / ".ai" / "config.yaml").write_text("surprise: 1\n")
    assert cli("doctor").exit_code == 0
    result = cli("doctor", "--strict")
    assert result.exit_code == 1 and "warnings fail under --strict (exit 1)" in result.stdout


def test_text_output_groups_by_level_with_next_steps(cli, repo, store):
    os.chmod(store[0], 0o644)
    (repo / ".ai" / "config.yaml").write_text("surprise: 1\n")
    out = cli("doctor").stdout
    fail, warn, ok = out.index("fail (1)"), out.index("warn (1)"), out.index("ok (")
    assert fail < warn < ok
    assert "perm.file:" in out[fail:warn] and "next: chmod 600" in out[fail:warn]
    assert "config.unknown-key:" in out[warn:ok] and "next:" in out[warn:ok]
    assert out.rstrip().endswith("1 fail, 1 warn, 7 ok: problems found (exit 1)")


def test_text_output_caps_a_flood_of_one_code(cli, repo):
    start_task(cli)
    for i in range(13):
        checkpoint(cli, f"note {i}\n")
    for path in (state_dir(repo) / "checkpoints").iterdir():
        os.chmod(path, 0o644)
    out = cli("doctor").stdout
    assert out.count("has mode 0644") == 10
    assert "perm.file: … and 3 more (see `majordomus doctor --json`)" in out
    assert len(only(doctor(cli)[1], "perm.file")) == 13


def test_github_format(repo, cli, store):
    os.chmod(store[0], 0o644)
    (repo / ".ai" / "config.yaml").write_text("surprise: 1\n")
    result = run_here("doctor", "--format", "github", cwd=repo)
    assert result.returncode == 1
    lines = result.stdout.decode().splitlines()
    error = [line for line in lines if line.startswith("::error ")]
    warning = [line for line in lines if line.startswith("::warning ")]
    assert len(error) == 1 and len(warning) == 1
    rel = str(store[0].relative_to(repo))
    assert error[0].startswith(f"::error file={rel},title=majordomus perm.file::")
    assert "Next%3A" not in error[0] and "Next: chmod 600" in error[0]
    assert warning[0].startswith("::warning file=.ai/config.yaml,title=majordomus config.unknown-key::")
    assert lines[-1] == "majordomus doctor: 1 fail, 1 warn, 7 ok: problems found (exit 1)"
    strict = run_here("doctor", "--format", "github", "--strict", cwd=repo).stdout.decode()
    assert strict.count("::error ") == 2 and "::warning" not in strict


def test_github_format_escapes_newlines_and_percent():
    from majordomus.doctor.findings import Finding, render_github

    out = render_github([Finding("fail", "x.y", "100% broken\nreally", "a,b:c.md", None)], strict=False)
    assert out.splitlines()[0] == "::error file=a%2Cb%3Ac.md,title=majordomus x.y::100%25 broken%0Areally"


def test_json_and_another_format_is_a_usage_error(cli, repo):
    before = snapshot(repo)
    result = cli("doctor", "--json", "--format", "github")
    assert result.exit_code == 2 and "do not go together" in result.stderr
    assert snapshot(repo) == before


def test_real_process_exit_codes(repo, cli, store):
    assert run("doctor", cwd=repo).returncode == 0
    store[0].unlink()
    result = run("doctor", "--json", cwd=repo)
    assert result.returncode == 1 and json.loads(result.stdout)["exit_code"] == 1


def test_outside_a_repository_exits_12(tmp_path):
    outside = tmp_path / "plain"
    outside.mkdir()
    result = run("doctor", cwd=outside)
    assert result.returncode == 12 and b"not inside a git work tree" in result.stderr


def test_linked_worktree_sees_the_shared_store(cli, repo, store, tmp_path):
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "side", str(linked))
    result = cli("doctor", "--json", cwd=linked)
    report = json.loads(result.stdout)
    assert result.exit_code == 0 and "3 checkpoint records" in only(report, "retention.checkpoints")[0]["message"]
    rel = str(store[0].relative_to(repo))
    git(repo, "add", "-f", rel)  # staged in the main worktree, seen from the linked one
    result = cli("doctor", "--json", cwd=linked)
    assert result.exit_code == 1 and only(json.loads(result.stdout), "state.in-git")[0]["path"] == rel


@pytest.mark.skipif(shutil.which("git") is None, reason="git is needed")
def test_state_in_bare_common_dir_is_checked(tmp_path):
    """A bare main worktree keeps the state in <common dir>/majordomus/local/state; doctor walks it there."""
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    seed = tmp_path / "seed"
    git(tmp_path, "clone", "-q", str(bare), str(seed))
    (seed / "f").write_text("x")
    git(seed, "add", "f")
    git(seed, "commit", "-q", "-m", "i")
    git(seed, "push", "-q", "origin", "HEAD:main")
    work = tmp_path / "work"
    git(bare, "worktree", "add", "-q", str(work), "main")
    assert run_here("task", "start", "b1", cwd=work).returncode == 0
    assert run_here("checkpoint", cwd=work, input="bare note\n").returncode == 0
    records = list((bare / "majordomus" / "local" / "state" / "checkpoints").iterdir())
    assert len(records) == 1
    assert run_here("doctor", cwd=work).returncode == 0
    os.chmod(records[0], 0o644)
    result = run_here("doctor", "--json", cwd=work)
    assert result.returncode == 1 and only(json.loads(result.stdout), "perm.file")


def test_edited_continuity_fails_integrity(cli, repo):
    result = cli("task", "start", "c1", "--objective", "Keep the login callback correct")
    assert result.exit_code == 0, result.output
    assert doctor(cli)[0] == 0
    path = state_dir(repo) / "context" / "c1" / "continuity.json"
    doc = json.loads(path.read_text())
    doc["objective"] = "Something nobody decided"
    path.write_text(json.dumps(doc, indent=2))
    code, report = doctor(cli)
    assert code == 1
    found = only(report, "continuity.integrity")
    assert len(found) == 1 and found[0]["level"] == "fail" and "`c1`" in found[0]["message"]
    assert found[0]["path"].endswith("context/c1/continuity.json")


def test_unborn_repository_is_ok(unborn_repo):
    result = run_here("doctor", "--json", cwd=unborn_repo)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["counts"]["fail"] == 0


def test_staged_state_in_unborn_repository_fails(unborn_repo):
    assert run_here("task", "start", "u1", cwd=unborn_repo).returncode == 0
    git(unborn_repo, "add", "-f", ".ai/local/state/tasks/u1.yaml")
    result = run_here("doctor", "--json", cwd=unborn_repo)
    assert result.returncode == 1
    found = only(json.loads(result.stdout), "state.in-git")
    assert found[0]["path"] == ".ai/local/state/tasks/u1.yaml" and "staged" in found[0]["message"]




def test_handoff_written_by_the_command_is_checked(cli, repo, store):
    result = cli("handoff", input=HANDOFF_BODY)
    assert result.exit_code == 0, result.output
    path = repo / result.stdout.strip()
    assert path.parent.name == "handoffs"
    code, report = doctor(cli)
    assert code == 0 and "1 handoff records (limit 200)" in only(report, "retention.handoffs")[0]["message"]
    os.chmod(path, 0o640)
    path.write_bytes(path.read_bytes().replace(b"half done", b"all done!"))
    code, report = doctor(cli)
    assert code == 1
    assert {"perm.file", "record.digest", "record.changed"} <= set(codes(report, "fail"))


def test_a_record_over_the_bound_is_named_and_never_read(cli, repo):
    from majordomus.store import records

    start_task(cli)
    path = repo / checkpoint(cli, "a note\n")
    os.truncate(path, records.MAX_RECORD_BYTES + 1)  # sparse: a torn tail no record of ours has
    code, report = doctor(cli)
    assert code == 1
    [oversize] = only(report, "record.oversize")
    assert oversize["level"] == "fail" and path.name in oversize["message"]
    assert "record.digest" not in codes(report)  # not hashed: not read
    path.unlink()


@pytest.mark.parametrize("where", [".ai", ".ai/profiles", ".claude", ".codex", ".gemini", ".github/hooks", "."])
def test_a_temporary_file_left_in_the_committed_ai_is_a_warning(cli, repo, where):
    """`init` or `hooks install` killed part way leaves its temporary file in the committed `.ai/` (or its
    profiles), a runtime's settings directory or the top of the work tree (`.mcp.json`'s), where `git add
    -A` would commit it: doctor warns (so --strict fails) and names the way out; nothing else."""
    assert cli("init").exit_code == 0
    (repo / where).mkdir(parents=True, exist_ok=True)
    temp = repo / where / ".tmp-4242-0"
    temp.write_bytes(b"")
    code, report = doctor(cli, "--strict")
    assert code == 1
    [found] = only(report, "config.temp-file")
    assert found["level"] == "warn" and ".tmp-4242-0" in found["message"] and "rm '" in found["hint"]
    temp.unlink()
    assert doctor(cli, "--strict")[0] == 0
