"""`majordomus checkpoint`: every step of design §6, in-process through click and on real repositories."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest
from freezegun import freeze_time
from helpers import (
    BIN,
    HANDOFF_BODY,
    assert_refused,
    commit_file,
    events_named,
    git,
    ledger_events,
    records_in,
    run,
    run_here,
    snapshot,
    start_task,
    state_dir,
)

NAME = re.compile(r"^\.ai/local/state/checkpoints/(\d{8}T\d{6}Z)--([A-Za-z0-9._-]+)--([0-9a-f]{7})--([0-9a-f]{16})\.md$")


def test_writes_record_with_identity_and_event(cli, repo):
    start_task(cli)
    with freeze_time("2026-09-03T19:45:00Z"):
        result = cli("checkpoint", input="State reproduced.\nNext: regression test.\n")
    assert result.exit_code == 0, result.output
    rel = result.stdout.strip()
    match = NAME.match(rel)
    assert match, rel
    head = git(repo, "rev-parse", "HEAD")
    assert match.group(1) == "20260903T194500Z"
    assert match.group(2) == "main"
    assert match.group(3) == head[:7]
    data = (repo / rel).read_bytes()
    import hashlib

    assert match.group(4) == hashlib.sha256(data).hexdigest()[:16]
    text = data.decode()
    assert text.startswith("---\n")
    import yaml

    front, body = text[4:].split("---\n", 1)
    meta = yaml.load(front, Loader=yaml.CSafeLoader)
    assert list(meta) == ["schema_version", "kind", "timestamp", "task", "profile", "owner", "repo_id",
                          "worktree", "branch", "head", "worktree_state", "changed_files"]
    assert meta["schema_version"] == 1 and meta["kind"] == "checkpoint"
    assert meta["timestamp"] == "2026-09-03T19:45:00Z"
    assert meta["task"] == "t1" and meta["profile"] == "default" and meta["owner"] == "test@example.com"
    assert meta["repo_id"] == git(repo, "rev-list", "--max-parents=0", "HEAD")
    assert meta["worktree"] == str(repo) and meta["branch"] == "main" and meta["head"] == head
    assert meta["worktree_state"] == "clean" and meta["changed_files"] == []
    assert body == "State reproduced.\nNext: regression test.\n"
    ev = ledger_events(repo)[-1]
    assert ev["event"] == "task.checkpoint" and ev["task"] == "t1"
    assert ev["path"] == rel[len(".ai/local/state/"):]
    assert ev["sha256"] == hashlib.sha256(data).hexdigest()
    task = json.loads(cli("task", "show", "--json").stdout)
    assert task["checkpoint"] == ev["path"] and task["checkpoint_at"] == "2026-09-03T19:45:00Z"


def test_forty_lines_pass_forty_one_refused(cli, repo):
    start_task(cli)
    ok = cli("checkpoint", input="".join(f"line {i}\n" for i in range(40)))
    assert ok.exit_code == 0
    before = snapshot(repo)
    refused = cli("checkpoint", input="".join(f"line {i}\n" for i in range(41)))
    assert refused.exit_code == 10
    assert "41 lines" in refused.stderr and "limit is 40" in refused.stderr
    assert "write a handoff instead" in refused.stderr
    assert snapshot(repo) == before


def test_byte_cap_refused(cli, repo):
    start_task(cli)
    before = snapshot(repo)
    refused = cli("checkpoint", input="x" * 16385)
    assert refused.exit_code == 10
    assert "16384" in refused.stderr and "write a handoff instead" in refused.stderr
    assert snapshot(repo) == before
    assert cli("checkpoint", input="y" * 16384).exit_code == 0


@pytest.mark.parametrize("kind", ["checkpoint", "handoff"])
def test_a_record_over_what_any_reader_reads_is_refused_whatever_the_configured_cap(cli, repo, kind, monkeypatch):
    """The configured caps go up to 2**31, every reader stops at a record's bound (16 MiB): an 18 MB checkpoint
    was stored (exit 0) and then unreadable by `--show`, `--list`, `brief` and sync. The write holds the
    whole record, front matter included, to that bound: over it, exit 10 and nothing written; at it, stored.
    (The bound made 4 KiB here, under the configured caps, so that the walk reads no 16 MiB body.)"""
    from majordomus.store import records

    monkeypatch.setattr(records, "MAX_RECORD_BYTES", 4096)
    start_task(cli)
    extra = HANDOFF_BODY + "\n" if kind == "handoff" else ""
    before = snapshot(repo)
    refused = cli(kind, input=extra + ("x" * 200 + "\n") * 25)  # 5 KiB: under the caps of lines and bytes
    assert refused.exit_code == 10, refused.output
    assert "bytes with its front matter, over the 4,096 a record can be; nothing was written" in refused.stderr
    assert snapshot(repo) == before
    assert cli(kind, input=extra + "a short note\n").exit_code == 0


def test_configured_cap_of_five(cli, repo):
    (repo / ".ai").mkdir()
    (repo / ".ai" / "config.yaml").write_text("checkpoint:\n  max_body_lines: 5\n")
    start_task(cli)
    assert cli("checkpoint", input="1\n2\n3\n4\n5\n").exit_code == 0
    before = snapshot(repo)
    refused = cli("checkpoint", input="1\n2\n3\n4\n5\n6\n")
    assert refused.exit_code == 10 and "6 lines" in refused.stderr and "limit is 5" in refused.stderr
    assert snapshot(repo) == before


@pytest.mark.parametrize("body,field,line", [
    ("Repo ID: abc\n", "repo_id", 1),
    ("- task: other\n", "task", 1),
    ("note\n  * Branch: main\n", "branch", 2),
    ("HEAD: 1234\n", "head", 1),
    ("ok\nworktree-state: clean\n", "worktree_state", 2),
    ("Changed Files: a.py\n", "changed_files", 1),
    ("timestamp : now\n", "timestamp", 1),
    ("\tschema_version: 2\n", "schema_version", 1),
    ("-owner: me\n", "owner", 1),
    ("Profile: reviewer\n", "profile", 1),
    ("ok\n* KIND: handoff\n", "kind", 2),
    ("Worktree: /elsewhere\n", "worktree", 1),
    ("changed files omitted: 0\n", "changed_files_omitted", 1),
])
def test_identity_fields_refused(cli, repo, body, field, line):
    start_task(cli)
    before = snapshot(repo)
    result = cli("checkpoint", input=body)
    assert result.exit_code == 10
    assert f"`{field}`" in result.stderr and f"line {line}" in result.stderr
    assert snapshot(repo) == before
    assert_refused(cli, repo, ["checkpoint"], 10, f"`{field}`", input=body)


def test_front_matter_body_refused(cli, repo):
    start_task(cli)
    before = snapshot(repo)
    result = cli("checkpoint", input="---\nfoo: bar\n---\nhello\n")
    assert result.exit_code == 10 and "front matter" in result.stderr
    assert snapshot(repo) == before


def test_prose_passes(cli, repo):
    start_task(cli)
    body = "Next: write the test.\nThe task: tricky.\nState of the branch is fine.\nheadline: ok\n"
    result = cli("checkpoint", input=body)
    assert result.exit_code == 0, result.stderr


@pytest.mark.parametrize("raw,words", [
    (b"ok\n\xff\xfe bad\n", "not valid UTF-8 (line 2"),
    (b"ok\nnul\x00here\n", "U+0000 on line 2"),
    (b"\x1b[31mred\x1b[0m\n", "U+001B on line 1"),
    (b"a\rb\n", "U+000D on line 1"),
])
def test_encoding_and_control_characters_refused(cli, repo, raw, words):
    start_task(cli)
    before = snapshot(repo)
    result = cli("checkpoint", input=raw)
    assert result.exit_code == 10
    assert words in result.stderr
    assert snapshot(repo) == before


def test_crlf_normalised_and_blank_edges_dropped(cli, repo):
    start_task(cli)
    result = cli("checkpoint", input=b"\r\n\r\nfirst\r\n\tsecond\r\n\r\n")
    assert result.exit_code == 0
    data = (repo / result.stdout.strip()).read_bytes()
    assert data.endswith(b"---\nfirst\n\tsecond\n") and b"\r" not in data


def test_empty_body_moves_checkpoint_at_only(cli, repo):
    with freeze_time("2026-09-03T10:00:00Z"):
        start_task(cli)
    ledger_before = (state_dir(repo) / "ledger.jsonl").read_bytes()
    before = snapshot(repo)
    with freeze_time("2026-09-03T11:00:00Z"):
        result = cli("checkpoint", input="\n  \n")
    assert result.exit_code == 0 and result.stdout == ""
    after = snapshot(repo)
    changed = {path for path in set(before) | set(after) if before.get(path) != after.get(path)}
    assert changed == {".ai/local/state/tasks/t1.yaml"}  # "Nothing else" (design §6 step 5)
    assert records_in(repo) == []
    assert (state_dir(repo) / "ledger.jsonl").read_bytes() == ledger_before
    task = json.loads(cli("task", "show", "--json").stdout)
    assert task["checkpoint_at"] == "2026-09-03T11:00:00Z" and task["checkpoint"] is None


def test_check_checkpoint_is_the_same_operation(cli, repo):
    with freeze_time("2026-09-03T10:00:00Z"):
        start_task(cli)
        assert cli("check").exit_code == 1
    ledger_before = (state_dir(repo) / "ledger.jsonl").read_bytes()
    with freeze_time("2026-09-03T11:00:00Z"):
        assert cli("check", "--checkpoint").exit_code == 0
        assert cli("check").exit_code == 0
    assert (state_dir(repo) / "ledger.jsonl").read_bytes() == ledger_before
    with freeze_time("2026-09-03T13:01:00Z"):
        stale = cli("check")
    assert stale.exit_code == 1 and "121 minutes" in stale.stderr


def test_identical_record_is_not_duplicated(cli, repo):
    start_task(cli)
    with freeze_time("2026-09-03T19:45:00Z"):
        first = cli("checkpoint", input="same\n")
        second = cli("checkpoint", input="same\n")
    assert first.exit_code == 0 and second.exit_code == 0
    assert first.stdout == second.stdout
    assert "already stored" in second.stderr
    assert len(list((state_dir(repo) / "checkpoints").iterdir())) == 1
    assert len(events_named(repo, "task.checkpoint")) == 1


def test_no_active_task_exit_11(cli, repo):
    result = cli("checkpoint", input="hello\n")
    assert result.exit_code == 11
    assert "no active task" in result.stderr and "majordomus task start" in result.stderr
    assert not (repo / ".ai").exists()


def test_show_scoped_to_branch_and_empty_after_new_task(cli, repo):
    start_task(cli, "t1")
    cli("checkpoint", input="on main\n")
    git(repo, "checkout", "-q", "-b", "feature/x")
    assert cli("checkpoint", "--show").exit_code == 11
    start_task(cli, "t2")
    assert cli("checkpoint", "--show").stdout == ""
    cli("checkpoint", input="on feature\n")
    assert cli("checkpoint", "--show").stdout.endswith("---\non feature\n")
    git(repo, "checkout", "-q", "main")
    assert cli("checkpoint", "--show").stdout.endswith("---\non main\n")
    start_task(cli, "t3")
    shown = cli("checkpoint", "--show")
    assert shown.exit_code == 0 and shown.stdout == ""
    listed = cli("checkpoint", "--list", "--json")
    assert [r["task"] for r in json.loads(listed.stdout)] == ["t2", "t1"]


def test_list_json_fields_newest_first(cli, repo):
    start_task(cli)
    with freeze_time("2026-09-03T10:00:00Z"):
        cli("checkpoint", input="one\n")
    with freeze_time("2026-09-03T10:00:05Z"):
        cli("checkpoint", input="two\nlines\n")
    data = json.loads(cli("checkpoint", "--list", "--json").stdout)
    assert [d["timestamp"] for d in data] == ["2026-09-03T10:00:05Z", "2026-09-03T10:00:00Z"]
    for key in ("path", "timestamp", "task", "branch", "head", "worktree", "lines", "sha256"):
        assert key in data[0]
    assert data[0]["lines"] == 2 and data[1]["lines"] == 1
    shown = json.loads(cli("checkpoint", "--show", "--json").stdout)
    assert shown["sha256"] == data[0]["sha256"]
    human = cli("checkpoint", "--list").stdout.splitlines()
    assert len(human) == 2 and human[0].startswith("2026-09-03T10:00:05Z")


def test_dirty_state_and_changed_files(cli, repo):
    start_task(cli)
    (repo / "README").write_text("changed\n")
    (repo / "new.txt").write_text("untracked\n")
    result = cli("checkpoint", input="dirty now\n")
    text = (repo / result.stdout.strip()).read_text()
    assert 'worktree_state: "dirty"' in text
    assert 'changed_files:\n- "README"\n- "new.txt"\n' in text


def test_changed_files_capped_with_omitted_count(cli, repo):
    (repo / ".ai").mkdir()
    (repo / ".ai" / "config.yaml").write_text("checkpoint:\n  max_changed_files: 2\n")
    start_task(cli)
    for name in ("a", "b", "c", "d"):
        (repo / name).write_text(name)
    result = cli("checkpoint", input="many\n")
    import yaml

    meta = yaml.load((repo / result.stdout.strip()).read_text().split("---\n")[1], Loader=yaml.CSafeLoader)
    # .ai/config.yaml itself is untracked, so five changed paths in all
    assert meta["changed_files"] == [".ai/config.yaml", "a"]
    assert meta["changed_files_omitted"] == 3


def test_modes_under_permissive_umask(cli, repo):
    old = os.umask(0)
    try:
        start_task(cli)
        result = cli("checkpoint", input="modes\n")
    finally:
        os.umask(old)
    record = repo / result.stdout.strip()
    assert oct(record.stat().st_mode & 0o777) == "0o600"
    for d in (repo / ".ai" / "local", state_dir(repo), state_dir(repo) / "checkpoints", state_dir(repo) / "tasks"):
        assert oct(d.stat().st_mode & 0o777) == "0o700", d
    for f in (state_dir(repo) / "ledger.jsonl", next((state_dir(repo) / "tasks").iterdir())):
        assert oct(f.stat().st_mode & 0o777) == "0o600", f


def test_state_never_staged(cli, repo):
    start_task(cli)
    cli("checkpoint", input="x\n")
    git(repo, "add", "-A")
    staged = git(repo, "diff", "--cached", "--name-only").splitlines()
    assert not [p for p in staged if p.startswith(".ai/local")]
    assert (repo / ".ai" / "local" / ".gitignore").read_text() == "*\n"


def test_symlinked_checkpoints_dir_refused(cli, repo, tmp_path):
    start_task(cli)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (state_dir(repo) / "checkpoints").mkdir(exist_ok=True)
    os.rmdir(state_dir(repo) / "checkpoints")
    os.symlink(elsewhere, state_dir(repo) / "checkpoints")
    before = snapshot(repo)
    result = cli("checkpoint", input="through a link\n")
    assert result.exit_code == 12
    assert "symbolic link" in result.stderr and "checkpoints" in result.stderr
    assert list(elsewhere.iterdir()) == []
    assert snapshot(repo) == before


def test_state_path_that_is_a_file_refused(cli, repo):
    (repo / ".ai").mkdir()
    (repo / ".ai" / "local").write_text("not a dir")
    before = snapshot(repo)
    result = cli("task", "start", "t1")
    assert result.exit_code == 12 and "not a directory" in result.stderr
    assert snapshot(repo) == before


def test_unborn_branch(cli, unborn_repo):
    assert cli("task", "start", "t1", cwd=unborn_repo).exit_code == 0
    result = cli("checkpoint", input="nothing committed yet\n", cwd=unborn_repo)
    assert result.exit_code == 0, result.stderr
    rel = result.stdout.strip()
    assert "--main--0000000--" in rel
    text = (unborn_repo / rel).read_text()
    assert "repo_id: null\n" in text and "head: null\n" in text and 'branch: "main"' in text


def test_detached_head(cli, repo):
    commit_file(repo, "b.txt", "b")
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    start_task(cli)
    result = cli("checkpoint", input="detached\n")
    rel = result.stdout.strip()
    assert "--detached--" in rel
    assert "branch: null\n" in (repo / rel).read_text()


def test_repo_id_follows_first_parents_and_is_cached(cli, repo):
    root = git(repo, "rev-parse", "HEAD")
    # a second root, merged in as a second parent, must not change the id
    git(repo, "checkout", "-q", "--orphan", "other")
    git(repo, "rm", "-q", "-rf", ".")
    commit_file(repo, "o.txt", "o")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--allow-unrelated-histories", "-m", "merge", "other")
    start_task(cli)
    text = (repo / cli("checkpoint", input="x\n").stdout.strip()).read_text()
    assert f'repo_id: "{root}"' in text
    cache = state_dir(repo) / "cache" / "root-commit"
    assert cache.read_text().split() == [git(repo, "rev-parse", "HEAD"), root]
    commit_file(repo, "c.txt", "c")
    text = (repo / cli("checkpoint", input="y\n").stdout.strip()).read_text()
    assert f'repo_id: "{root}"' in text
    assert cache.read_text().split() == [git(repo, "rev-parse", "HEAD"), root]


def test_from_a_subdirectory_the_printed_path_is_relative_to_it(cli, repo):
    """design §6 step 8: printed as git prints paths, so `cat "$(… | majordomus checkpoint)"` works anywhere."""
    start_task(cli)
    sub = repo / "src" / "deep"
    sub.mkdir(parents=True)
    result = cli("checkpoint", input="from below\n", cwd=sub)
    assert result.exit_code == 0, result
    printed = result.stdout.strip()
    assert printed.startswith("../../.ai/local/state/checkpoints/")
    assert (sub / printed).read_bytes().endswith(b"---\nfrom below\n")
    shell = subprocess.run(["sh", "-c", 'cat "$(echo shell note | majordomus checkpoint)"'], cwd=sub,
                           capture_output=True, env=dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}"), check=False)
    assert shell.returncode == 0 and shell.stdout.endswith(b"---\nshell note\n"), shell.stderr
    as_json = json.loads(cli("checkpoint", "--show", "--json", cwd=sub).stdout)
    assert (sub / as_json["path"]).exists()


def test_the_console_script_from_a_subdirectory_prints_the_same_path(repo):
    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    (repo / "sub").mkdir()
    result = run("checkpoint", cwd=repo / "sub", input="console\n")
    assert result.returncode == 0 and result.stdout.startswith(b"../.ai/local/state/checkpoints/")
    assert (repo / "sub" / result.stdout.decode().strip()).exists()


@pytest.mark.parametrize("edit", [lambda text: text.replace("the note", "REPLACED"),  # the body
                                  lambda text: text.replace('kind: "checkpoint"', 'kind: "checkpoint" ')])
@pytest.mark.parametrize("args", [("checkpoint", "--show"), ("checkpoint", "--show", "--json")])
def test_show_refuses_a_record_whose_content_was_replaced(cli, repo, edit, args):
    """`--show` prints what was written or nothing: a record whose bytes no longer hash to the digest in its
    name is refused naming it (exit 12), as brief names it instead of showing it."""
    start_task(cli)
    first = cli("checkpoint", input="an older note\n").stdout.strip()
    path = repo / cli("checkpoint", input="the note\n").stdout.strip()
    assert first and cli(*args).exit_code == 0  # the edge: as written, it is shown
    text = path.read_text()
    path.write_text(edit(text))
    assert path.read_text() != text
    assert_refused(cli, repo, args, 12, path.name, "no longer matches the digest in its name", "hint: ")


@pytest.mark.parametrize("as_json", [False, True])
def test_list_names_a_replaced_record_and_shows_none_of_its_fields(cli, repo, as_json):
    """`--list` gives a record as it was written or only its path and why: the edge, an intact one, is listed
    with its fields; one whose bytes no longer hash to its name is listed as replaced."""
    start_task(cli)
    path = repo / cli("checkpoint", input="the note\n").stdout.strip()
    args = ("checkpoint", "--list", "--json") if as_json else ("checkpoint", "--list")
    before = cli(*args).stdout
    assert "no longer matches" not in before
    path.write_text(path.read_text().replace('task: "', 'task: "x', 1).replace("the note", "another"))
    listed = cli(*args)
    assert listed.exit_code == 0 and "no longer matches the digest in its name" in listed.output
    if as_json:
        [entry] = json.loads(listed.stdout)
        assert entry["name"] == path.name and "task" not in entry and "error" in entry


@pytest.mark.parametrize("there", ["other bytes", "a directory"])
def test_already_stored_is_said_only_of_the_very_bytes_under_the_records_name(cli, repo, there):
    """The same checkpoint in the same second has the same name, and is "already stored" — but only when the
    file under that name holds its very bytes: one changed by hand or replaced by a directory made the
    command say so (exit 0) while the record never landed. It is exit 12 naming it, nothing written; one
    past the edge, moved away, the same command stores it."""
    start_task(cli)
    with freeze_time("2026-12-02T03:00:00Z"):
        first = cli("checkpoint", input="same\n")
        assert first.exit_code == 0, first.output
        path = repo / first.stdout.strip()
        path.unlink()
        if there == "a directory":
            path.mkdir()
        else:
            path.write_text("tampered\n")
        before, events = snapshot(repo), len(ledger_events(repo))
        again = cli("checkpoint", input="same\n")
        assert again.exit_code == 12, again.output
        assert "is already there" in again.stderr and "nothing was written" in again.stderr, again.stderr
        after = snapshot(repo)
        assert "identical" not in again.output and len(ledger_events(repo)) == events
        assert after == before, {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
        if there == "a directory":
            path.rmdir()
        else:
            path.unlink()
        assert cli("checkpoint", input="same\n").exit_code == 0 and path.read_text().endswith("same\n")
