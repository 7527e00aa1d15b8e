"""design §2a, §6 step 4, §12 and §14, held where the issue found them unheld: identity fields however they are
written, line breaks a YAML reader sees, secrets, links and FIFOs in the store, and the hooks' fail-open
boundary. Expected values are the design's words, never the module's constants.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from helpers import (
    HANDOFF_BODY,
    assert_refused,
    ledger_bytes,
    run,
    run_here,
    snapshot,
    start_task,
    start_task_at,
    state_dir,
)

IDENTITY_KEYS = ("schema_version", "kind", "timestamp", "task", "profile", "owner", "repo_id", "worktree", "branch",
             "head", "worktree_state", "changed_files", "changed_files_omitted")


def spellings(key: str) -> list[str]:
    """A key as a writer might put it in prose (design §6 step 4 and §2a)."""
    words = key.split("_")
    return [f"{' '.join(w.capitalize() for w in words)}: x",  # `Repo ID:`
            f"  - {'-'.join(words).upper()} : x",  # bullet, dashes, upper case, space before the colon
            f"**{key}**: x",  # Markdown emphasis
            f"{key}\u00a0: x",  # a no-break space
            f"{key}\uff1a x",  # a full-width colon
            f"{key[0]}\u200b{key[1:]}: x"]  # a zero-width space inside the key


@pytest.mark.parametrize("key", IDENTITY_KEYS)
def test_every_identity_key_is_refused_in_a_checkpoint_however_written(cli, repo, key):
    start_task(cli)
    for line in spellings(key):
        assert_refused(cli, repo, ["checkpoint"], 10, f"identity field `{key}` on line 2", "nothing was written",
                       input=f"A note.\n{line}\n")


@pytest.mark.parametrize("key", ["profile", "changed_files_omitted", "kind", "worktree"])
def test_identity_keys_are_refused_in_a_handoff_too(cli, repo, key):
    start_task(cli)
    assert_refused(cli, repo, ["handoff"], 10, f"identity field `{key}`", input=HANDOFF_BODY + f"* {key}: forged\n")


@pytest.mark.parametrize("char,name", [("\u2028", "U+2028"), ("\u2029", "U+2029"), ("\x85", "U+0085"),
                                       ("\x0b", "U+000B"), ("\x0c", "U+000C"), ("\x1b", "U+001B"),
                                       ("\x7f", "U+007F"), ("\x00", "U+0000")])
@pytest.mark.parametrize("command", ["checkpoint", "handoff"])
def test_line_breaks_a_yaml_reader_sees_are_refused_with_their_line(cli, repo, char, name, command):
    """One line here can never be two lines for a YAML or Markdown reader (design §2a): refused, not split."""
    start_task(cli)
    body = (HANDOFF_BODY if command == "handoff" else "first\n") + f"ok{char}Owner: forged\n"
    line = body.count("\n")
    assert_refused(cli, repo, [command], 10, name, f"line {line}", input=body)


def test_a_tab_and_a_body_that_only_looks_like_front_matter_later_are_kept(cli, repo):
    start_task(cli)
    result = cli("checkpoint", input="first\tcolumn\nthen\n---\nnot front matter\n")
    assert result.exit_code == 0, result
    assert_refused(cli, repo, ["checkpoint"], 10, "`---`", input="---\nbody\n")


# ---------------------------------------------------------------- secrets (§2a, §8)

SECRETS = [
    "AKIAIOSFODNN7EXAMPLE",
    "aws_secret_access_key=wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY",
    "ghp_" + "a" * 36, "gho_" + "b" * 36, "github_pat_" + "c" * 40,
    "sk_live_" + "d" * 24,
    "AIza" + "e" * 35,
    "xoxb-123456789012-abcdefghijkl",
    "npm_" + "f" * 36,
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "Bearer abcdefghijklmnopqrstuvwxyz0123456789",
    "password=hunter2hunter2", "passwd=hunter2hunter2", "secret=s3cr3tv4lu3", "token=abcdef123456",
    "-----BEGIN RSA PRIVATE KEY-----", "-----BEGIN OPENSSH PRIVATE KEY-----", "-----BEGIN PRIVATE KEY-----",
    # a key that ends in one of the words, a JSON-quoted key, OpenPGP, a URL's password, a full-width token
    "client_secret=abc123xyz", "api_token=abc123xyz", '{"access_token": "abc123xyz"}', "X-Api-Key: abcd1234",
    "-----BEGIN PGP PRIVATE KEY BLOCK-----", "https://user:hunter22@example.com/r.git",
    "\uff47\uff48\uff50_" + "a" * 36,
]


@pytest.mark.parametrize("secret", SECRETS)
def test_every_secret_pattern_is_refused_in_pins_titles_and_objectives(cli, repo, secret):
    assert_refused(cli, repo, ["task", "start", "t1", "--title", f"Fix it with {secret} today"], 10, "secret")
    assert_refused(cli, repo, ["task", "start", "t1", "--objective", f"Use {secret}"], 10, "secret")
    start_task(cli)
    assert_refused(cli, repo, ["context", "pin", "constraint", "--", f"Remember {secret} for later."], 10, "secret")


def test_prose_about_secrets_is_not_a_secret(cli, repo):
    start_task(cli, "t1", "--title", "Rotate the password and the token", "--objective", "Bearer tokens expire")
    assert cli("context", "pin", "decision", "--", "The secret lives in the vault, not here.").exit_code == 0
    for prose in ("the token expired", "password reset flow", "max_tokens=1000 is the budget", "tokens: 12345",
                  "clone https://user@example.com/r.git or git@example.com:o/r.git", "see https://h:8080/x@y",
                  "api_token: n/a", "the ｔｏｋｅｎ expired"):
        assert cli("context", "pin", "decision", "--", prose).exit_code == 0, prose


# ---------------------------------------------------------------- identifiers (§2a, §5)


@pytest.mark.parametrize("task_id,ok", [("a" * 64, True), ("a" * 65, False), ("0.x_y-z", True), ("t1\n", False),
                                        ("_t1", False), (".t1", False), ("T1", False), ("../t1", False), ("", False)])
def test_task_id_grammar_is_a_full_match(cli, repo, task_id, ok):
    if ok:
        start_task(cli, task_id)
    else:
        assert_refused(cli, repo, ["task", "start", task_id], 2, "is not a valid task id")


# ---------------------------------------------------------------- links and FIFOs in the store (§2a)


def test_list_does_not_follow_a_link_named_like_a_record(cli, repo, tmp_path):
    start_task(cli)
    assert cli("checkpoint", input="real\n").exit_code == 0
    secret = tmp_path / "outside.md"
    secret.write_text("---\ntask: \"t1\"\n---\nOUTSIDE THE STORE\n")
    link = state_dir(repo) / "checkpoints" / "20990101T000000Z--main--0000000--0000000000000000.md"
    link.symlink_to(secret)
    before = snapshot(repo)
    for args in (["checkpoint", "--list"], ["checkpoint", "--list", "--json"]):
        result = cli(*args)
        assert "OUTSIDE" not in result.stdout
        assert result.exit_code == 12 and "symbolic link" in result.stderr and link.name in result.stderr, result
    assert snapshot(repo) == before


def test_list_does_not_wait_on_a_fifo_named_like_a_record(repo):
    start_task_at(repo)
    fifo = state_dir(repo) / "checkpoints"
    fifo.mkdir(mode=0o700, exist_ok=True)
    os.mkfifo(fifo / "20990101T000000Z--main--0000000--0000000000000000.md", 0o600)
    result = run_here("checkpoint", "--list", cwd=repo, timeout=60)  # a wait would be the timeout, not an exit
    assert result.returncode == 12 and b"FIFO" in result.stderr


def test_a_task_record_that_is_a_link_is_not_read(cli, repo, tmp_path):
    start_task(cli)
    record = state_dir(repo) / "tasks" / "t1.yaml"
    elsewhere = tmp_path / "t1.yaml"
    elsewhere.write_bytes(record.read_bytes())
    record.unlink()
    record.symlink_to(elsewhere)
    assert_refused(cli, repo, ["checkpoint"], 12, "symbolic link", input="note\n")


# ---------------------------------------------------------------- the hooks are fail-open (§12, §14)


def corrupt_index(repo: Path) -> None:
    (state_dir(repo) / "active.json").write_text('{"not": "a slot"')


@pytest.mark.parametrize("args", [["hook", "compact", "--phase", "pre", "--runtime", "claude"],
                                  ["hook", "compact", "--phase", "post", "--runtime", "codex"],
                                  ["hook", "stop"], ["hook", "session-start"]])
def test_hooks_exit_0_whatever_goes_wrong(repo, args):
    start_task_at(repo)
    corrupt_index(repo)
    journal_dir = state_dir(repo) / "context" / "t1"
    before = sorted(os.listdir(journal_dir))
    result = run(*args, cwd=repo, input=b'{"session_id":"s","trigger":"auto"}')
    assert result.returncode == 0, result.stderr
    assert b"Traceback" not in result.stderr
    assert sorted(os.listdir(journal_dir)) == before  # nothing journaled for a task it cannot know
    # and an internal error, the worst case, is 0 for a hook and 70 for any other command
    crashed = run(*args, cwd=repo, input=b"{}", env={"MAJORDOMUS_FAULT": "internal-error"})
    assert crashed.returncode == 0
    assert run("task", "list", cwd=repo, env={"MAJORDOMUS_FAULT": "internal-error"}).returncode == 70


def test_hook_compact_in_process_is_fail_open_too(cli, repo):
    start_task(cli)
    corrupt_index(repo)
    ledger = ledger_bytes(repo)
    result = cli("hook", "compact", "--phase", "pre", "--runtime", "claude", input='{"session_id":"s"}')
    assert result.exit_code == 0 and "not recorded" in result.stderr
    assert ledger_bytes(repo) == ledger
    assert not (state_dir(repo) / "context" / "t1" / "compact-events.jsonl").exists()


def test_hook_compact_takes_phase_and_runtime_from_argv_never_the_payload(cli, repo):
    start_task(cli)
    payload = json.dumps({"phase": "post", "runtime": "codex", "session_id": "s", "prompt": "secret words",
                          "trigger": "manual"})
    assert cli("hook", "compact", "--phase", "pre", "--runtime", "claude", input=payload).exit_code == 0
    line = json.loads((state_dir(repo) / "context" / "t1" / "compact-events.jsonl").read_text())
    assert line["phase"] == "pre" and line["runtime"] == "claude"
    assert "prompt" not in line and "secret words" not in json.dumps(line)
    assert line["session_id"] == "s" and line["trigger"] == "manual"


@pytest.mark.parametrize("value,kept", [("v" * 256, "v" * 256), ("w" * 257, "w" * 256)])
def test_a_journal_value_is_cut_at_256_characters(cli, repo, value, kept):
    start_task(cli)
    assert cli("hook", "compact", "--phase", "pre", "--runtime", "claude",
               input=json.dumps({"model": value})).exit_code == 0
    line = json.loads((state_dir(repo) / "context" / "t1" / "compact-events.jsonl").read_text())
    assert line["model"] == kept


def test_no_active_task_compact_is_silent_and_writes_nothing(cli, repo):
    before = snapshot(repo)
    result = cli("hook", "compact", "--phase", "pre", "--runtime", "claude", input="{}")
    assert result.exit_code == 0 and result.stdout == "" and result.stderr == ""
    assert snapshot(repo) == before


# ---------------------------------------------------------------- every task id a command takes

BAD_ID = "Bad\x1b[31mID\n# not an id"
# What a command needs besides the id to reach it (its other required arguments and flags).
AROUND = {("search",): ["x"], ("run",): ["--list"], ("handoff",): ["--show"], ("task", "start", "--from"): ["t9"]}


def _task_id_places() -> list[tuple[tuple[str, ...], str | None]]:
    """Every option and argument of every command whose value is a task id, from the declared options that
    completion reads (a command that gains one joins this walk by itself)."""
    from majordomus import commands
    from majordomus.cli import completion

    found: list[tuple[tuple[str, ...], str | None]] = []

    def walk(path: tuple[str, ...], node: Any) -> None:
        if node is None:
            return
        found.extend((path, opt) for opt, (_takes, kind, _help) in node.options.items() if kind == "task")
        found.extend((path, None) for kind in node.arguments if kind == "task")
        for sub in node.subcommands if node.child is not None else ():
            walk((*path, sub), node.child(sub))

    table = commands.summaries()
    for name in table:
        walk((name,), completion.command_node(name, table, commands.lookup))
    return found


def test_the_walk_finds_the_task_ids_of_the_commands():
    places = _task_id_places()
    assert (("ledger",), "--task") in places and (("task", "show"), None) in places and len(places) >= 12


@pytest.mark.parametrize("path, option", _task_id_places(), ids=lambda v: " ".join(v) if isinstance(v, tuple) else str(v))
def test_every_task_id_a_command_takes_is_checked_by_one_grammar(repo, path, option):
    """A task id given anywhere is checked by a full match before anything is read or written: exit 2, the
    id shown escaped (never an ESC or a line of its own), nothing written. One past the edge: a valid id
    that names no task is no usage error of its grammar."""
    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    before = snapshot(repo)
    given = [option, BAD_ID] if option is not None else [BAD_ID]
    around = AROUND.get((*path, option) if option else path, AROUND.get(path, []))
    done = run_here(*path, *around, *given, cwd=repo)
    err = done.stderr.decode()
    assert done.returncode == 2 and "is not a valid task id" in err, (path, option, done)
    assert "\x1b" not in err and "\n# not an id" not in err and "Bad\\x1b[31mID" in err
    assert snapshot(repo) == before
    valid = run_here(*path, *around, *([option, "no-such-task"] if option else ["no-such-task"]), cwd=repo)
    assert "is not a valid task id" not in valid.stderr.decode()
    if option == "--task":  # an option naming a task: one that is there (exit-codes.md, 2)
        assert valid.returncode == 2 and "no task `no-such-task`" in valid.stderr.decode(), (path, valid)


@pytest.mark.parametrize("args", [("task", "start", "t1", "extra\n# an instruction"), ("task", "list", "--bogus\n# x"),
                                  ("log", "--format", "yaml\n# x")])
def test_a_usage_error_quoting_an_argument_keeps_it_on_its_line(repo, args):
    """The argument parser's own messages quote what was given: a line break in it is shown `\\x0a` (or as
    click's repr shows it, `\\n`), so the error is its two lines (`majordomus: …`, `hint: …`) whatever the
    argument holds; nothing is written."""
    before = snapshot(repo)
    done = run_here(*args, cwd=repo)
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 2 and len(lines) == 2 and lines[1].startswith("hint: "), lines
    assert ("\\x0a# " in lines[0] or "\\n# " in lines[0]) and snapshot(repo) == before  # ours, or click's repr
