"""`--help` of every command and subcommand: exits 0, says in one line what it does, and agrees
with what the command does."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers import BIN, assert_refused, require_tool, run, run_here, snapshot

from majordomus.commands import COMMANDS


def usage_end(lines: list[str]) -> int:
    """The index of the first line after the usage line and the lines that continue it."""
    start = next(i for i, line in enumerate(lines) if line.lower().startswith("usage:"))
    end = start + 1
    while end < len(lines) and lines[end].startswith(" ") and lines[end].strip():
        end += 1
    return end


def description(text: str) -> str:
    """The first line after the usage: what the command does."""
    lines = text.splitlines()
    rest = [line.strip() for line in lines[usage_end(lines):] if line.strip()]
    return rest[0] if rest else ""


def subcommands(name: str, text: str) -> dict[str, str]:
    """{subcommand: its one line} from a click group's `Commands:` list, or from the usage lines (`hook`)."""
    if "Commands:" in text:
        block = text.split("Commands:", 1)[1]
        return {line.split(None, 1)[0]: line.split(None, 1)[1] for line in block.splitlines()
                if line.startswith("  ") and line.strip()}
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lower().startswith("usage:"))
    usage = [lines[start].split(None, 1)[1]] + [line.strip() for line in lines[start + 1:usage_end(lines)]]
    words = [u.split()[2] for u in usage if len(u.split()) > 2 and u.split()[1] == name]
    return {w: "" for w in words if not w.startswith(("-", "[")) and "|" not in w}


def every_help() -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    for name in COMMANDS:
        found.append((name,))
        found += [(name, sub) for sub in subcommands(name, run_here(name, "--help", text=True).stdout)]
    return found


@pytest.mark.parametrize("words", every_help(), ids=" ".join)
def test_every_help_exits_0_and_says_what_it_does(words: tuple[str, ...]) -> None:
    for flag in ("--help", "-h"):
        result = run_here(*words, flag, text=True)
        assert result.exit_code == 0 and result.stderr == "", (words, flag, result)
        first = result.stdout.splitlines()[0].lower()
        assert first.startswith(f"usage: majordomus {' '.join(words)}"), (words, first)
        line = description(result.stdout)
        assert len(line) >= 15 and not line.startswith("-") and not line.lower().startswith("options"), (words, line)


def test_the_groups_list_each_subcommand_in_one_whole_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")  # click wraps to the terminal: hold it to the usual 80 columns
    for name in COMMANDS:
        listed = subcommands(name, run_here(name, "--help", text=True).stdout)
        for sub, line in listed.items():
            assert not line.endswith("..."), f"`majordomus {name} --help` cuts the line of {sub}: {line}"


def test_the_top_level_help_lists_every_command_with_its_line() -> None:
    text = run_here("--help", text=True).stdout
    for name, (_module, _function, summary) in COMMANDS.items():
        assert f"  {name}" in text and summary in text


def test_handoff_help_says_task_goes_with_show_only(cli: Any, repo: Path, handoff_body: str) -> None:
    text = cli("handoff", "--help").stdout
    assert "majordomus handoff --show [TASK]" in " ".join(text.split())
    assert "TASK goes with --show only" in " ".join(text.split())
    assert "{path, sha256, created} when writing" in " ".join(text.split())
    # ... and that is what it does: TASK alone is refused and writes nothing; --json writing prints the record
    assert cli("task", "start", "t1").exit_code == 0
    before = snapshot(repo)
    result = cli("handoff", "t1", input="## State\nx\n")
    assert result.exit_code == 2 and result.stdout == "" and "TASK goes with --show only" in result.stderr
    assert snapshot(repo) == before
    written = cli("handoff", "--json", input=handoff_body)
    assert written.exit_code == 0, written
    doc = json.loads(written.stdout)
    assert set(doc) == {"path", "sha256", "created"} and doc["created"] is True
    assert hashlib.sha256((repo / doc["path"]).read_bytes()).hexdigest() == doc["sha256"]


def test_hooks_uninstall_help_says_what_it_removes() -> None:
    install = " ".join(run_here("hooks", "install", "--help", text=True).stdout.split())
    uninstall = " ".join(run_here("hooks", "uninstall", "--help", text=True).stdout.split())
    assert "Where to install:" in install
    assert "Where to remove from:" in uninstall and "install:" not in uninstall


def test_context_pin_help_names_the_four_kinds() -> None:
    text = run_here("context", "pin", "--help", text=True).stdout
    assert "decision, constraint, open-item or next-action" in text  # design §8's four kinds


# ---------------------------------------------------------------- one usage-error format, whatever parses

# (arguments, words of the message, the command whose usage the hint gives): main's global parser,
# argv.Spec (the hot commands, `help`), and click.
USAGE_ERRORS = [
    (["-C"], "-C needs a directory", "majordomus"),
    (["--bogus"], "unknown option `--bogus`", "majordomus"),
    ([], "a command is needed", "majordomus"),
    (["checkpoint", "--nope"], "unexpected argument `--nope`", "majordomus checkpoint"),
    (["checkpoint", "--show", "--list"], "--show and --list do not go together", "majordomus checkpoint"),
    (["check", "--json=yes"], "unexpected argument `--json=yes`", "majordomus check"),
    (["help", "task", "extra"], "unexpected argument `extra`", "majordomus help"),
    (["task", "start"], "Missing argument 'ID'", "majordomus task start"),
    (["doctor", "--bogus"], "No such option '--bogus'", "majordomus doctor"),
    (["hooks", "install", "--runtime", "vim"], "'vim' is not one of 'claude', 'codex', 'gemini', 'copilot', 'git'",
     "majordomus hooks install"),
    (["task"], "`majordomus task` needs a subcommand: start, show, list, resume, release, done", "majordomus task"),
    (["sync", "nope"], "No such command 'nope'", "majordomus sync"),
]


@pytest.mark.parametrize(("args", "words", "command"), USAGE_ERRORS, ids=[" ".join(e[0]) or "-" for e in USAGE_ERRORS])
def test_every_parser_says_a_usage_error_in_one_format(repo: Path, args: list[str], words: str, command: str) -> None:
    before = snapshot(repo)
    result = run_here(*args, cwd=repo, text=True)
    assert result.exit_code == 2 and result.stdout == "", result
    first, hint = result.stderr.splitlines()
    assert first.startswith("majordomus: ") and words in first, result.stderr
    # the hint gives the usage line of the command the error is about, and where its help is
    assert hint.startswith(f"hint: usage: {command} ") and hint.endswith(f"; see `{command} --help`"), hint
    assert snapshot(repo) == before and not (repo / ".ai").exists()


def test_no_parser_prints_clicks_own_format(repo: Path) -> None:
    for args, _words, _command in USAGE_ERRORS:
        stderr = run_here(*args, cwd=repo, text=True).stderr
        assert "Usage:" not in stderr and "Error:" not in stderr and "Try '" not in stderr, (args, stderr)


def test_an_unknown_hook_says_so_in_the_one_format_and_still_exits_0(repo: Path) -> None:
    result = run_here("hook", "nope", cwd=repo, text=True)
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr == ("majordomus: unknown hook `nope`\n"
                             "hint: usage: majordomus hook session-start|stop|compact|rewrite; see `majordomus hook --help`\n")


def test_a_hooks_usage_error_is_in_the_one_format_and_exits_0(repo: Path) -> None:
    result = run_here("hook", "session-start", "--runtime", "vim", cwd=repo, input="{}", text=True)
    assert result.exit_code == 0 and result.stdout == ""
    first, hint = result.stderr.splitlines()
    assert first == ("majordomus: hook session-start: --runtime must be claude or codex or gemini or copilot, not `vim` "
                     "(the session goes on)")
    assert hint == ("hint: usage: majordomus hook session-start [--runtime claude|codex|gemini|copilot]; "
                    "see `majordomus hook session-start --help`")


# ---------------------------------------------------------------- majordomus help

def no_man_path(tmp_path: Path) -> str:
    """A PATH with git and the console script but no `man`."""
    bare = tmp_path / "bin-without-man"
    bare.mkdir()
    git_exe = shutil.which("git")
    assert git_exe is not None
    (bare / "git").symlink_to(git_exe)
    return str(bare)


def packaged_page(name: str) -> Path:
    import majordomus

    return Path(majordomus.__file__).resolve().parent / "man" / f"{name}.1"


@pytest.mark.parametrize("command", [None, "checkpoint", "task", "hook", "help"])
def test_help_without_man_prints_the_help_text_and_names_the_page(repo: Path, tmp_path: Path,
                                                                  command: str | None) -> None:
    words = [command] if command else []
    before = snapshot(repo)
    result = run_here("help", *words, cwd=repo, env={"PATH": no_man_path(tmp_path)}, text=True)
    assert result.exit_code == 0, result
    assert result.stdout == run_here(*words, "--help", cwd=repo, text=True).stdout
    page = packaged_page(f"majordomus-{command}" if command else "majordomus")
    assert page.is_file()
    assert result.stderr == (f"majordomus: `man` is not installed here: this is the --help text; the manual page "
                             f"is {page}\n")
    assert snapshot(repo) == before


def test_help_opens_the_packaged_page_with_man_even_where_man_finds_none(repo: Path, tmp_path: Path) -> None:
    """As after `uv tool install .`: man's own search finds no majordomus page, `majordomus help` still opens
    the one inside the package. stdout is a pipe here: man prints the page without a pager."""
    man = require_tool("man")
    empty = tmp_path / "no-pages"
    empty.mkdir()
    env = {"MANPATH": str(empty), "PATH": f"{BIN}:/usr/bin:/bin", "MANPAGER": "cat", "PAGER": "cat",
           "LANG": "C.UTF-8", "MANWIDTH": "80"}
    searched = subprocess.run([man, "-w", "majordomus-checkpoint"], env=dict(os.environ, **env),
                              capture_output=True, check=False)
    assert searched.returncode != 0, "man's own search must find nothing here, as after uv tool install"
    result = run("help", "checkpoint", cwd=repo, env=env, text=True)
    assert result.returncode == 0, result.stderr
    text = re.sub(".\b", "", result.stdout)  # overstrike (bold, underline), should man keep it
    assert text.lstrip().startswith("MAJORDOMUS-CHECKPOINT(1)") and "majordomus checkpoint --show" in text
    assert result.stderr == ""


def test_help_of_an_unknown_command_is_a_usage_error(cli: Any, repo: Path) -> None:
    result = assert_refused(cli, repo, ["help", "chekpoint"], 2, "`chekpoint` is not a majordomus command")
    assert result.stderr.splitlines()[1] == "hint: did you mean `majordomus help checkpoint`?"


def test_every_command_has_its_page_for_help() -> None:
    for name in COMMANDS:
        assert packaged_page(f"majordomus-{name}").is_file(), name


@pytest.mark.parametrize(("args", "words", "hint"), [
    (("help", "nonexist"), "`nonexist` is not a majordomus command", "hint: see `majordomus --help`"),
    (("help", "chekpoint"), "`chekpoint` is not a majordomus command", "hint: did you mean `majordomus help checkpoint`?"),
    (("help", "task", "nope"), "unexpected argument `nope`: `majordomus task` has no such subcommand (it has "
     "done, list, release, resume, show, start)", "hint: usage: majordomus help [COMMAND [SUBCOMMAND]]"),
    (("help", "brief", "x"), "`majordomus brief` has no subcommands", "hint: usage: majordomus help"),
    (("nonexist",), "`nonexist` is not a majordomus command", "hint: see `majordomus --help`"),
])
def test_help_suggests_only_alike_names_and_checks_a_subcommand(cli: Any, repo: Path, args: tuple[str, ...],
                                                                words: str, hint: str) -> None:
    result = assert_refused(cli, repo, args, 2, words)
    assert result.stderr.splitlines()[1].startswith(hint), result.stderr


def test_one_past_help_of_a_subcommand_opens_its_command_s_page(cli: Any, repo: Path, tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    os.environ["PATH"], saved = str(empty), os.environ["PATH"]  # no `man`: the subcommand's --help is printed
    try:
        result = cli("help", "task", "start")
    finally:
        os.environ["PATH"] = saved
    assert result.exit_code == 0 and "task start" in result.stdout, result
    assert "majordomus-task.1" in result.stderr
