"""The remote is held to local rules (design §2a "the remote").

A machine ref is built by hand with git plumbing — hash-object, update-index on a temporary index,
write-tree, commit-tree, update-ref — holding every bad entry next to good ones. A pull imports the good
ones, refuses each bad one by name, and writes nothing outside the store.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest
from helpers import git, snapshot, state_dir
from helpers.sync import build_tree, clone, commit_tree, events, hash_blob, layout_path

MALLORY = "refs/majordomus/machines/mallory-0001"
HEAD = "abcdef0123456789abcdef0123456789abcdef01"


def record(kind: str, body: str, *, stamp: str = "2026-03-01T10:00:00Z", extra: str = "",
           task: str = "good") -> tuple[str, bytes]:
    """(name, bytes) of a record as design §4 and §6 describe one: front matter, body, content-named."""
    front = (f'schema_version: 1\nkind: "{kind}"\ntimestamp: "{stamp}"\ntask: "{task}"\nprofile: "default"\n'
             f'owner: "mallory@example.com"\nrepo_id: null\nworktree: "/elsewhere"\nbranch: "main"\n'
             f'head: "{HEAD}"\nworktree_state: "clean"\nchanged_files: []\n{extra}')
    data = f"---\n{front}---\n{body}\n".encode()
    compact = stamp.replace("-", "").replace(":", "")
    return f"{compact}--main--{HEAD[:7]}--{hashlib.sha256(data).hexdigest()[:16]}.md", data


def task(task_id: str, **change: str) -> bytes:
    fields = {"id": f'"{task_id}"', "title": '"Good"', "objective": '"o"', "profile": '"default"',
              "owner": '"mallory@example.com"', "status": '"paused"', "worktree": '"/elsewhere"',
              "branch": '"main"', "started_at": '"2026-03-01T09:00:00Z"', "updated_at": '"2026-03-01T09:00:00Z"',
              "checkpoint_at": "null", "handoff_at": "null", "checkpoint": "null", "handoff": "null"}
    fields.update(change)
    return "".join(f"{k}: {v}\n" for k, v in fields.items()).encode()


def claim(**change: str) -> str:
    """A claim list of one, as a YAML flow sequence, with `change` written into its strings as given."""
    fields = {"id": "0123456789abcdef", "owner": "m", "host": "h", "worktree": "/elsewhere",
              "at": "2026-03-01T09:00:00Z", **change}
    return "[{" + ", ".join(f'"{k}": "{v}"' for k, v in fields.items()) + "}]"


HANDOFF_BODY = "## State\ns\n\n## Decisions\nd\n\n## Open items\no\n\n## Next actions\nn"
BOMB = ('a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
        + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8))
        + 'id: "bomb"\ntitle: *i\nobjective: "o"\nprofile: "default"\nowner: "m"\nstatus: "paused"\n'
        'started_at: "2026-03-01T09:00:00Z"\nupdated_at: "2026-03-01T09:00:00Z"\n')


def literal_tree(repo: Path, entries: list[tuple[str, str, bytes]]) -> str:
    """A tree object written byte for byte (`hash-object -t tree --literally`): any entry name at all."""
    raw = b"".join(mode.encode() + b" " + name + b"\0" + bytes.fromhex(oid) for mode, oid, name in
                   sorted(entries, key=lambda e: e[2]))
    return subprocess.run(["git", "hash-object", "-t", "tree", "--literally", "-w", "--stdin"], cwd=repo,
                          input=raw, capture_output=True, check=True).stdout.decode().strip()


def graft(repo: Path, tree: str, path: list[str], entries: list[tuple[str, str, bytes]]) -> str:
    """`tree` with the subtree at `path` given `entries` more (written literally, level by level)."""
    listing = git(repo, "ls-tree", "-z", tree).split("\0") if tree else []
    current = []
    for line in filter(None, listing):
        meta, name = line.split("\t", 1)
        mode, _kind, oid = meta.split()
        current.append((mode, oid, name.encode()))
    if not path:
        return literal_tree(repo, current + entries)
    below = next((oid for mode, oid, name in current if name == path[0].encode()), "")
    sub = graft(repo, below, path[1:], entries)
    return literal_tree(repo, [e for e in current if e[2] != path[0].encode()] + [("40000", sub, path[0].encode())])


@pytest.fixture
def hostile(tmp_path: Path, remote: Path) -> dict[str, str]:
    """Mallory's machine ref on the remote; returns what each bad entry is refused for, by its path."""
    good_cp, good_cp_data = record("checkpoint", "a fine note")
    good_ho, good_ho_data = record("handoff", HANDOFF_BODY, extra="previous_handoff: null\ncheckpoints: []\n")
    tall, tall_data = record("checkpoint", "\n".join(f"line {i}" for i in range(203)))
    forged, forged_data = record("checkpoint", "all good\nowner: root@forged")
    escapes, escapes_data = record("checkpoint", "look\x1b]0;pwned\x07 here\x1b[2J")
    odd_ho, odd_ho_data = record("handoff", HANDOFF_BODY, extra='previous_handoff: null\ncheckpoints: [{"x":1}]\n')
    wrong_kind, wrong_kind_data = record("handoff", "x", extra="previous_handoff: null\ncheckpoints: []\n")
    misplaced, misplaced_data = record("checkpoint", "in the wrong month", stamp="2026-05-01T10:00:00Z")
    # A key named twice: YAML readers take the last, others the first; every reader refuses it alike.
    twice, twice_data = record("checkpoint", "who wrote me?", extra='owner: "x"\n')
    files: dict[str, bytes | tuple[str, str]] = {
        "format": b"majordomus-state 2\n",
        "tasks/good.yaml": task("good"),
        "tasks/bomb.yaml": BOMB.encode(),
        "tasks/listy.yaml": task("listy", title='["a", "b"]'),
        "tasks/intwt.yaml": task("intwt", worktree="5"),
        "tasks/garbage.yaml": task("garbage", checkpoint_at='"garbage"'),
        "tasks/leaky.yaml": task("leaky", title='"deploy with AKIAIOSFODNN7EXAMPLE"'),
        "tasks/tokenowner.yaml": task("tokenowner", owner='"ghp_abcdefghijklmnopqrstuvwxyz0123456789"'),
        "tasks/twice.yaml": task("twice") + b'title: "Other"\n',
        layout_path("checkpoints", good_cp): good_cp_data,
        layout_path("handoffs", good_ho): good_ho_data,
        layout_path("checkpoints", tall): tall_data,
        layout_path("checkpoints", forged): forged_data,
        layout_path("checkpoints", escapes): escapes_data,
        layout_path("handoffs", odd_ho): odd_ho_data,
        layout_path("checkpoints", wrong_kind): wrong_kind_data,
        layout_path("checkpoints", misplaced).replace("2026-05", "2026-03"): misplaced_data,
        layout_path("checkpoints", twice): twice_data,
    }
    tree = build_tree(remote, files, tmp_path)
    blob = hash_blob(remote, good_cp_data)
    bucket = layout_path("checkpoints", good_cp).split("/")[1:3]
    link = hash_blob(remote, b"../../../../../etc/passwd")
    # Names no update-index would take: a path in a name, `..`, a terminal escape; a link; a tree as a record.
    tree = graft(remote, tree, ["checkpoints", *bucket], [
        ("100644", blob, good_cp[:-3].encode() + b"/../../../../escaped.md"),
        ("100644", blob, b".."),
        ("100644", blob, b"\x1b[2J" + good_cp.encode()),
        ("120000", link, good_cp.replace("main", "link").encode()),
        ("40000", literal_tree(remote, [("100644", blob, b"x")]), good_cp.replace("main", "dir").encode()),
    ])
    tree = graft(remote, tree, ["tasks"], [("100644", hash_blob(remote, task("good")), b"../../evil.yaml")])
    git(remote, "update-ref", MALLORY, commit_tree(remote, tree, message="mallory"))
    where = f"checkpoints/{bucket[0]}/{bucket[1]}/"
    return {
        "good": good_cp, "good_handoff": good_ho,
        "tasks/bomb.yaml": "uses a YAML alias or anchor",
        "tasks/listy.yaml": "`title` is missing or not a string",
        "tasks/intwt.yaml": "`worktree` is not a string",
        "tasks/garbage.yaml": "`checkpoint_at` 'garbage' is not a UTC time",
        "tasks/leaky.yaml": "its `title` looks like it carries a secret (an AWS access key)",
        "tasks/tokenowner.yaml": "its `owner` looks like it carries a secret (a GitHub token)",
        "tasks/twice.yaml": "names `title` twice",
        "tasks/../../evil.yaml": "not a task record name",
        layout_path("checkpoints", tall): "has 203 lines; the limit is 40",
        layout_path("checkpoints", forged): "sets the identity field `owner` on line 2",
        layout_path("checkpoints", escapes): "has a control character U+001B on line 1",
        layout_path("handoffs", odd_ho): "its front matter `checkpoints` is not of its type",
        layout_path("checkpoints", wrong_kind): "a record of kind `handoff` does not belong in checkpoints/",
        layout_path("checkpoints", misplaced).replace("2026-05", "2026-03"): "not where its name puts it",
        layout_path("checkpoints", twice): "names `owner` twice",
        where + good_cp[:-3] + "/../../../../escaped.md": "not a record name",
        where + "..": "not a record name",
        where + "\\x1b[2J" + good_cp: "not a record name",
        where + good_cp.replace("main", "link"): "not a regular file",
        where + good_cp.replace("main", "dir"): "not a regular file",
    }


def test_good_entries_imported_each_bad_one_refused_by_name(cli, tmp_path, remote, hostile):
    b = clone(tmp_path, remote, "b")
    before = snapshot(tmp_path)
    result = cli("sync", "pull", cwd=b)
    assert result.exit_code == 10, result.output
    assert "imported from origin: 1 task, 1 handoff, 1 checkpoint" in result.stdout
    for path, reason in hostile.items():
        if path.startswith("good"):
            continue
        [line] = [line for line in result.stderr.splitlines() if line.startswith(f"  {path} ({MALLORY}): ")]
        assert reason in line, line
    assert "\x1b" not in result.stderr + result.stdout and "\x07" not in result.stderr
    assert f"{len(hostile) - 2} entries refused" in result.stderr
    # Only the good ones are in the store, and nothing was written outside it.
    assert sorted(p.name for p in (state_dir(b) / "tasks").iterdir()) == ["good.yaml"]
    assert [p.name for p in (state_dir(b) / "checkpoints").iterdir()] == [hostile["good"]]
    assert [p.name for p in (state_dir(b) / "handoffs").iterdir()] == [hostile["good_handoff"]]
    changed = {k for k, v in snapshot(tmp_path).items() if before.get(k) != v} | (set(before) - set(snapshot(tmp_path)))
    assert changed and all(k.startswith("b/.ai/local/") or k in ("b/.ai/",) for k in changed), sorted(changed)
    assert not (tmp_path / "escaped.md").exists() and not list(tmp_path.rglob("escaped.md"))
    assert sorted(e["path"] for e in events(b, "sync.import")) == sorted(
        ["tasks/good.yaml", f"checkpoints/{hostile['good']}", f"handoffs/{hostile['good_handoff']}"])
    # What was imported reads everywhere it is read.
    for args in (["task", "list"], ["task", "show", "good", "--json"], ["checkpoint", "--list"], ["doctor"]):
        shown = cli(*args, cwd=b)
        assert shown.exit_code in (0, 1) and "Traceback" not in shown.stderr, (args, shown.output)
    assert json.loads(cli("task", "show", "good", "--json", cwd=b).stdout)["title"] == "Good"
    # A second pull refuses the same entries again and imports nothing more.
    again = cli("sync", "pull", cwd=b)
    assert again.exit_code == 10 and "nothing new from origin" in again.stdout


@pytest.mark.parametrize("what", ["blob", "tree"])
def test_a_ref_that_is_not_a_commit_is_exit_12_and_the_rest_is_imported(cli, tmp_path, remote, repo, what):
    cli("task", "start", "honest")
    assert cli("sync", "push").exit_code == 0
    blob = hash_blob(remote, b"not a commit\n")
    target = blob if what == "blob" else build_tree(remote, {"tasks/x.yaml": b"x"}, tmp_path)
    git(remote, "update-ref", "refs/majordomus/state", target)
    git(remote, "update-ref", "refs/majordomus/machines/broken-0002", target)
    b = clone(tmp_path, remote, "b")
    result = cli("sync", "pull", cwd=b)
    assert result.exit_code == 12, result.output
    assert "origin has majordomus refs this machine cannot read" in result.stderr
    assert f"refs/majordomus/state: points at a {what}, not a commit" in result.stderr
    assert f"refs/majordomus/machines/broken-0002: points at a {what}, not a commit" in result.stderr
    assert (state_dir(b) / "tasks" / "honest.yaml").exists()
    status = cli("sync", "status", cwd=b)
    assert status.exit_code == 0 and f"unreadable: refs/majordomus/state: points at a {what}" in status.stdout


def test_a_ref_under_a_name_that_is_no_machine_id_is_refused(cli, tmp_path, remote, repo):
    cli("task", "start", "honest")
    cli("sync", "push")
    commit = git(remote, "rev-parse", f"refs/majordomus/machines/{(state_dir(repo) / 'machine-id').read_text().strip()}")
    git(remote, "update-ref", "refs/majordomus/machines/Not_An_Id", commit)
    b = clone(tmp_path, remote, "b")
    result = cli("sync", "pull", cwd=b)
    assert result.exit_code == 10
    assert "refs/majordomus/machines/Not_An_Id (origin): not a machine id" in result.stderr
    assert (state_dir(b) / "tasks" / "honest.yaml").exists()


def test_a_ref_whose_name_is_not_utf8_is_refused_and_logged_never_exit_70(cli, tmp_path, remote, repo):
    """git keeps a ref name's bytes as they are: `bad\\xff\\xfe` is refused by name like any other (exit 10,
    named escaped), the rest imported, and its `sync.refused` event lands (the ledger line is ASCII JSON
    there: the same value read back), pull after pull."""
    cli("task", "start", "honest")
    cli("sync", "push")
    commit = git(remote, "rev-parse", f"refs/majordomus/machines/{(state_dir(repo) / 'machine-id').read_text().strip()}")
    git(remote, "update-ref", "refs/majordomus/machines/bad\udcff\udcfe", commit)  # the bytes ff fe
    b = clone(tmp_path, remote, "b")
    for _ in range(2):
        result = cli("sync", "pull", cwd=b)
        assert result.exit_code == 10, result.output
        assert "refs/majordomus/machines/bad\\xff\\xfe (origin): not a machine id" in result.stderr
    assert (state_dir(b) / "tasks" / "honest.yaml").exists()
    first, second = events(b, "sync.refused")  # one a pull
    assert first["refused"] == second["refused"]
    assert first["refused"][0]["path"] == "refs/majordomus/machines/bad\udcff\udcfe" and first["count"] == 1
    assert cli("ledger", "--verify", cwd=b).exit_code == 0
    shown = cli("log", "--all", cwd=b)
    assert shown.exit_code == 0 and "bad\\xff\\xfe" in shown.stdout


@pytest.mark.parametrize("command", ["push", "pull", "status"])
def test_a_remote_whose_name_is_not_utf8_is_exit_12_before_anything_is_fetched_or_pushed(cli, repo, remote, command):
    """The remote's name goes into the ledger's events: a name git keeps that is not UTF-8 is refused first,
    as a branch name that is not (one past: renamed, it syncs)."""
    cli("task", "start", "t1")
    git(repo, "remote", "rename", "origin", "o\udcff")
    before, refs = snapshot(repo), git(remote, "for-each-ref")
    result = cli("sync", command, "o\udcff")
    assert result.exit_code == 12, result.output
    assert "the remote name o\\xff holds a byte that is not UTF-8 (\\xff) at character 2" in result.stderr
    assert "nothing was fetched or pushed" in result.stderr and "git remote rename" in result.stderr
    assert snapshot(repo) == before and git(remote, "for-each-ref") == refs
    git(repo, "remote", "rename", "o\udcff", "origin")
    if command == "pull":
        assert cli("sync", "push", "origin").exit_code == 0
    assert cli("sync", command, "origin").exit_code == 0


@pytest.mark.parametrize("bad", [20, 21, 45])
def test_a_pull_shows_at_most_twenty_refusals_and_counts_the_rest(cli, tmp_path, remote, bad):
    """A remote with thousands of bad entries must not print thousands of lines: 20, then a count; `--json`
    lists every one. At 20 there is nothing to count; at 21 one more."""
    files: dict[str, bytes | tuple[str, str]] = {"format": b"majordomus-state 2\n", "tasks/good.yaml": task("good")}
    files.update({f"tasks/bad{i:02d}.yaml": task(f"bad{i:02d}", worktree="5") for i in range(bad)})
    git(remote, "update-ref", MALLORY, commit_tree(remote, build_tree(remote, files, tmp_path), message="many"))
    b = clone(tmp_path, remote, "b")
    result = cli("sync", "pull", cwd=b)
    assert result.exit_code == 10, result.output
    assert f"{bad} entries refused, not imported and not shared" in result.stderr
    shown = [line for line in result.stderr.splitlines() if line.startswith("  tasks/bad")]
    assert len(shown) == min(bad, 20), result.stderr
    rest = [line for line in result.stderr.splitlines() if line.startswith("  … and ")]
    assert rest == ([] if bad <= 20 else [f"  … and {bad - 20} more; `--json` lists every one"])
    assert sorted(p.name for p in (state_dir(b) / "tasks").iterdir()) == ["good.yaml"]
    listed = cli("sync", "pull", "--json", cwd=b)
    assert listed.exit_code == 10
    every = json.loads(listed.stdout)["refused"]
    assert len(every) == bad
    # design §13 "all are in the ledger": one bounded event per pull, the first 20 named, the whole list's
    # digest (of what `--json` lists, one compact line each) to check the rest against.
    first, second = events(b, "sync.refused")
    assert first["task"] is None and first["remote"] == "origin" and first["count"] == bad
    assert first["refused"] == every[:20] and {k: v for k, v in first.items() if k not in ("seq", "at", "prev")} \
        == {k: v for k, v in second.items() if k not in ("seq", "at", "prev")}
    lines = "\n".join(json.dumps(r, sort_keys=True, separators=(",", ":")) for r in every)
    assert first["sha256"] == hashlib.sha256(lines.encode()).hexdigest()
    more = f"; and {bad - 1} more" if bad > 1 else ""
    assert (f"sync.refused     -  {bad} entries refused from origin: tasks/bad00.yaml ({MALLORY}): "
            f"{every[0]['reason']}{more} (sha256 {first['sha256'][:16]})") in cli("ledger", cwd=b).stdout
    assert f" refused     -------  {bad} entries refused from origin: tasks/bad00.yaml" in cli("log", "--all", cwd=b).stdout


def test_a_remote_claim_that_names_a_key_twice_is_refused(cli, tmp_path, remote):
    """Which of the two values counts would be the reader's choice: the first is a line break and a heading
    here, the last a fine host. The edge: the same claim with the key once is imported."""
    twice = claim(host="x\\n# INJ")[:-2] + ', "host": "vm"}]'
    files: dict[str, bytes | tuple[str, str]] = {"format": b"majordomus-state 2\n",
                                                  "tasks/twice.yaml": task("twice", claims=twice),
                                                  "tasks/once.yaml": task("once", claims=claim(host="vm"))}
    git(remote, "update-ref", MALLORY, commit_tree(remote, build_tree(remote, files, tmp_path), message="mallory"))
    b = clone(tmp_path, remote, "b")
    result = cli("sync", "pull", cwd=b)
    assert result.exit_code == 10 and "imported from origin: 1 task" in result.stdout, result.output
    [line] = [line for line in result.stderr.splitlines() if line.startswith(f"  tasks/twice.yaml ({MALLORY}): ")]
    assert "names `host` twice" in line, line
    assert sorted(p.name for p in (state_dir(b) / "tasks").iterdir()) == ["once.yaml"]


@pytest.mark.parametrize(("change", "reason"), [
    ({"owner": "m\\n# CLAIMED BY root"}, "its claim 1: `owner` holds a line break"),
    ({"host": "h\\u2028# HOST"}, "its claim 1: `host` holds"),
    ({"worktree": "/w\\x1b[2J"}, "its claim 1: `worktree` holds"),
    ({"branch": "main\\r# BRANCH"}, "its claim 1: `branch` holds"),
    ({"ended_by": "done\\n# ENDED", "ended_at": "2026-03-01T10:00:00Z"}, "its claim 1: `ended_by` holds"),
])
def test_a_remote_claim_is_held_to_the_field_grammars(cli, tmp_path, remote, change, reason):
    """A claim's owner, host and reason are one-line fields, its worktree and branch stored C-quoted, as the
    task's own are: a remote claim that breaks one is refused by name, and the task is not imported. The edge,
    the same claim without the bad character, is imported."""
    bad = {k: v for k, v in change.items()}
    fine = {k: v.split("\\", 1)[0] for k, v in change.items()}
    files: dict[str, bytes | tuple[str, str]] = {"format": b"majordomus-state 2\n",
                                                  "tasks/held.yaml": task("held", claims=claim(**bad)),
                                                  "tasks/fine.yaml": task("fine", claims=claim(**fine))}
    git(remote, "update-ref", MALLORY, commit_tree(remote, build_tree(remote, files, tmp_path), message="mallory"))
    b = clone(tmp_path, remote, "b")
    result = cli("sync", "pull", cwd=b)
    assert result.exit_code == 10 and "imported from origin: 1 task" in result.stdout, result.output
    [line] = [line for line in result.stderr.splitlines() if line.startswith(f"  tasks/held.yaml ({MALLORY}): ")]
    assert reason in line and "\x1b" not in result.stderr, line
    assert sorted(p.name for p in (state_dir(b) / "tasks").iterdir()) == ["fine.yaml"]


@pytest.mark.parametrize(("setting", "args"), [
    ("uploadpack", ("sync", "pull", "origin")), ("uploadpack", ("sync", "status", "origin")),
    ("uploadpack", ("sync", "push", "origin", "--checkpoints", "--timeout", "1")),
    ("receivepack", ("sync", "push", "origin", "--checkpoints")),
])
def test_a_remote_that_never_answers_is_exit_12_within_the_bound_never_a_hang(cli, repo, remote, monkeypatch,
                                                                              setting, args):
    """A remote whose server never answers (here its `uploadpack` or `receivepack` sleeps) holds no sync for
    ever: each git call to a remote is bounded (`REMOTE_SECONDS`, 1 s here), and the command says which
    call got no answer, with what to look at; what it had not done is not done. One past the edge: the
    same commands against the remote when it answers."""
    import time

    from helpers import run_here

    from majordomus.git import run as git_run

    monkeypatch.setattr(git_run, "REMOTE_SECONDS", 1.0)
    assert cli("task", "start", "t1").exit_code == 0
    assert cli("checkpoint", input="a note").exit_code == 0
    assert cli("sync", "push", "origin", "--checkpoints").exit_code == 0
    assert cli("checkpoint", input="a second note").exit_code == 0  # something for the push to send
    git(repo, "config", f"remote.origin.{setting}", "sh -c 'sleep 30' stalled")
    before = snapshot(remote)
    began = time.monotonic()
    done = run_here(*args, cwd=repo, text=True)
    assert time.monotonic() - began < 10, "waited on the remote"
    assert done.exit_code == 12 and "got no answer from the remote within 1 s" in done.stderr, done
    assert "git ls-remote origin" in done.stderr.splitlines()[-1]
    assert snapshot(remote) == before
    git(repo, "config", "--unset", f"remote.origin.{setting}")
    assert run_here(*args, cwd=repo).returncode == 0
