"""`majordomus completion bash|zsh|fish`: the scripts, loaded in the real shells, complete commands,
subcommands, options, their values, task ids, pin ids and remotes; what they offer matches each `--help`."""

from __future__ import annotations

import functools
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers import BIN, git, require_tool, run_here, snapshot

from majordomus.commands import COMMANDS

RUNTIMES = ["claude", "codex", "gemini", "copilot", "git"]  # design §12, §23: hooks install|uninstall --runtime
KINDS = ["decision", "constraint", "open-item", "next-action"]  # design §8


def shell_env() -> dict[str, str]:
    return dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")


@functools.cache
def bash_script() -> str:
    """What `majordomus completion bash` prints, from the installed console script (once per test process)."""
    return subprocess.run(["majordomus", "completion", "bash"], env=shell_env(), capture_output=True, text=True,
                          check=True, timeout=60).stdout


def bash_complete(cwd: Path, *words: str) -> list[str]:
    """COMPREPLY after the bash script's function runs on `majordomus WORDS…` (the last is being typed): the
    script is loaded as `eval "$(majordomus completion bash)"` would load it, and the candidates come from
    the installed console script that its function calls."""
    script = ('eval "$COMPLETION_SCRIPT"\n'
              'COMP_WORDS=(majordomus "$@"); COMP_CWORD=$#\n'
              '_majordomus\nprintf "%s\\n" "${COMPREPLY[@]}"\n')
    done = subprocess.run([require_tool("bash"), "-c", script, "bash", *words], cwd=cwd, capture_output=True, text=True,
                          env=dict(shell_env(), COMPLETION_SCRIPT=bash_script()), timeout=60, check=False)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return [line for line in done.stdout.splitlines() if line]


@pytest.fixture
def tasks(cli: Any, repo: Path) -> Path:
    for task in ("fix-login", "fix-logout"):
        assert cli("task", "start", task).exit_code == 0
    return repo


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_prints_a_script(cli: Any, shell: str) -> None:
    result = cli("completion", shell)
    assert result.exit_code == 0 and "majordomus completion --complete " + shell in result.stdout


@pytest.mark.parametrize("args", [(), ("tcsh",), ("bash", "zsh")])
def test_an_unknown_shell_is_a_usage_error(cli: Any, repo: Path, args: tuple[str, ...]) -> None:
    before = snapshot(repo)
    result = cli("completion", *args)
    assert result.exit_code == 2 and "completion needs one shell: bash, zsh or fish" in result.stderr
    assert result.stdout == "" and snapshot(repo) == before


def test_bash_completes_commands_subcommands_and_options(repo: Path) -> None:
    assert bash_complete(repo, "") == list(COMMANDS)
    assert bash_complete(repo, "ch") == ["checkpoint", "check"]
    assert bash_complete(repo, "task", "") == ["start", "show", "list", "resume", "release", "done"]
    assert bash_complete(repo, "checkpoint", "--") == ["--help", "--show", "--list", "--json"]
    assert bash_complete(repo, "hooks", "install", "--runtime", "") == RUNTIMES
    assert bash_complete(repo, "context", "pin", "") == KINDS
    assert bash_complete(repo, "completion", "") == ["bash", "zsh", "fish"]
    # bash splits `--runtime=co` at the `=` and replaces only what follows it
    assert bash_complete(repo, "hooks", "uninstall", "--runtime", "=", "c") == ["claude", "codex", "copilot"]
    assert bash_complete(repo, "hooks", "uninstall", "--runtime", "=") == RUNTIMES


def test_bash_completes_task_ids_pin_ids_and_remotes(cli: Any, tasks: Path, remote: Path) -> None:
    assert bash_complete(tasks, "task", "resume", "") == ["fix-login", "fix-logout"]
    assert bash_complete(tasks, "task", "resume", "fix-logi") == ["fix-login"]
    assert bash_complete(tasks, "ledger", "--task", "") == ["fix-login", "fix-logout"]
    assert bash_complete(tasks, "task", "start", "new", "--from", "fix-logo") == ["fix-logout"]
    pin = cli("context", "pin", "decision", "--", "Normalise at the edge.")
    assert pin.exit_code == 0
    assert bash_complete(tasks, "context", "unpin", "") == [pin.stdout.strip()]
    git(tasks, "remote", "add", "backup", str(remote))
    assert bash_complete(tasks, "sync", "push", "") == ["backup", "origin"]
    # git keeps a remote name holding U+2028 or NEL: never cut into pieces offered as remotes
    # (`splitlines` did: `r` and `x`), and never offered whole either (a terminal would act on it)
    for name in ("r\u2028x", "n\u0085l"):
        git(tasks, "remote", "add", name, str(remote))
    assert bash_complete(tasks, "sync", "push", "") == ["backup", "origin"]


def test_bash_follows_dash_c_and_completes_its_directory(tasks: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    assert bash_complete(tmp_path, "-C", "repo", "task", "show", "") == ["fix-login", "fix-logout"]
    assert bash_complete(tmp_path, "-C", "else") == ["elsewhere"]
    assert bash_complete(tmp_path, "task", "show", "") == []  # not a repository here: nothing, and no noise


def test_completion_never_writes(repo: Path) -> None:
    before = snapshot(repo)
    for words in (["task", "resume", ""], ["context", "unpin", ""], ["sync", "push", ""], ["ledger", "--task", ""]):
        result = run_here("-C", str(repo), "completion", "--complete", "bash", "--", *words, text=True)
        assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    assert snapshot(repo) == before and not (repo / ".ai").exists()


def test_stored_text_is_escaped_in_descriptions(cli: Any, repo: Path) -> None:
    # A title like this is refused at ingest now (design §2a "fields"): an old task record still holds one.
    assert cli("task", "start", "t1", "--title", "red title").exit_code == 0
    record = repo / ".ai" / "local" / "state" / "tasks" / "t1.yaml"
    record.write_text(record.read_text().replace('title: "red title"', 'title: "red \\u001b[31m title"'))
    for shell in ("zsh", "fish"):
        out = cli("completion", "--complete", shell, "--", "task", "show", "").stdout
        assert "\x1b" not in out and "\\x1b[31m" in out


def test_zsh_script_parses_and_describes_candidates(tasks: Path) -> None:
    zsh = require_tool("zsh")
    script = subprocess.run([str(BIN / "majordomus"), "completion", "zsh"], capture_output=True, text=True, check=False).stdout
    assert subprocess.run([zsh, "-n"], input=script, capture_output=True, text=True, check=False).returncode == 0
    # compinit's functions replaced by ones that print what they are given
    probe = ('compdef() { print -r -- "compdef $*" }\n'
             '_describe() { print -rl -- "${(@P)4}" }\n_path_files() { print -r -- "dirs $*" }\n'
             'eval "$(majordomus completion zsh)"\n'
             'words=(majordomus task resume ""); CURRENT=4; _majordomus\n'
             'words=(majordomus hooks install --runtime=c); CURRENT=4; _majordomus\n'
             'words=(majordomus -C ""); CURRENT=3; _majordomus\n')
    done = subprocess.run([zsh, "-f", "-c", probe], cwd=tasks, env=shell_env(), capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["compdef _majordomus majordomus", "fix-login:paused: fix-login",
                                        "fix-logout:active: fix-logout", "--runtime=claude", "--runtime=codex",
                                        "--runtime=copilot", "dirs -/"]


def test_fish_script_parses_and_completes(tasks: Path) -> None:
    fish = require_tool("fish")
    script = subprocess.run([str(BIN / "majordomus"), "completion", "fish"], capture_output=True, text=True, check=False).stdout
    assert subprocess.run([fish, "--no-execute"], input=script, capture_output=True, text=True, check=False).returncode == 0
    (tasks / "subdir").mkdir()
    probe = ('majordomus completion fish | source\n'
             'complete -C "majordomus task resume "\ncomplete -C "majordomus hooks install --runtime="\n'
             'complete -C "majordomus -C sub"\n')
    done = subprocess.run([fish, "--no-config", "-c", probe], cwd=tasks, env=shell_env(), capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["fix-login\tpaused: fix-login", "fix-logout\tactive: fix-logout",
                                        "--runtime=claude", "--runtime=codex", "--runtime=copilot", "--runtime=gemini",
                                        "--runtime=git", "subdir/\tDirectory"]  # fish sorts them


# --- what completion offers is what `--help` says ---------------------------------------------------------

OPTION_LINE = re.compile(r"^\s{2}(-[-\w]+(?:, -[-\w]+)*)")
USAGE_OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def help_of(*words: str) -> str:
    result = run_here(*words, "--help", text=True)
    assert result.exit_code == 0, (words, result)
    return result.stdout


def usage_lines(text: str) -> list[str]:
    """`majordomus …` of the usage line and of the lines that continue it."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lower().startswith("usage:"))
    block = [lines[start].split(None, 1)[1]]
    for line in lines[start + 1:]:
        if not line.startswith(" ") or not line.strip():
            break
        block.append(line.strip())
    return block


def help_options(text: str) -> set[str]:
    """Options an `options:` section lists; for a help with none, those its usage lines name, and -h/--help."""
    lines = text.splitlines()
    heading = next((i for i, line in enumerate(lines) if line.lower() == "options:"), None)
    if heading is None:
        return {o for line in usage_lines(text) for o in USAGE_OPTION.findall(line.split(None, 2)[-1])} | {"-h", "--help"}
    found: set[str] = set()
    for line in lines[heading + 1:]:
        if not line.startswith(" "):
            break
        match = OPTION_LINE.match(line)
        if match:
            found.update(match.group(1).split(", "))
    return found


def help_subcommands(name: str, text: str) -> list[str]:
    if "Commands:" in text:
        block = text.split("Commands:", 1)[1]
        return sorted(line.split()[0] for line in block.splitlines() if line.startswith("  ") and line.strip())
    found = [u.split()[2] for u in usage_lines(text) if len(u.split()) > 2 and u.split()[1] == name]
    return sorted(w for w in found if not w.startswith(("-", "[")) and "|" not in w)


def offered(*words: str) -> list[str]:
    result = run_here("completion", "--complete", "bash", "--", *words, text=True)
    assert result.exit_code == 0 and result.stderr == ""
    return result.stdout.splitlines()


@pytest.mark.parametrize("name", list(COMMANDS))
def test_completion_matches_every_help(name: str, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo)
    text = help_of(name)
    subs = help_subcommands(name, text)
    assert sorted(offered(name, "")) == subs or not subs
    paths = [[name, sub] for sub in subs] if subs else [[name]]
    # a command with subcommands takes only -h/--help itself (its usage lines name its subcommands' options)
    assert set(offered(name, "-")) == ({"-h", "--help"} if subs else help_options(text))
    for path in paths:
        if path != [name]:
            assert set(offered(*path, "-")) == help_options(help_of(*path)), path


def test_the_top_level_offers_every_command_and_global_option(repo: Path) -> None:
    assert offered("") == list(COMMANDS)
    assert offered("-") == ["-C", "--version", "--help"]
    assert all(name in help_of() for name in COMMANDS)


def test_the_commands_without_click_complete_from_their_declared_options() -> None:
    """`hook` and `help` parse with argv.Spec: what completion offers is what those Specs declare."""
    from majordomus.cli import help as help_command
    from majordomus.cli import hook

    assert offered("hook", "") == list(hook.SUBCOMMANDS) == ["session-start", "stop", "compact", "rewrite"]
    assert offered("hook", "compact", "--phase", "") == ["pre", "post"]
    assert offered("hook", "compact", "--runtime=") == [f"--runtime={r}" for r in ("claude", "codex", "gemini", "copilot")]
    assert offered("hook", "session-start", "-") == ["-h", "--help", "--runtime"]
    assert offered("hook", "stop", "-") == ["-h", "--help", "--runtime"]
    assert offered("help", "") == list(COMMANDS) and help_command.OPTIONS.argument_kind == "command"
    assert offered("help", "ch") == ["checkpoint", "check"]
    assert offered("help", "task", "") == []  # one page at a time


def test_completion_reads_no_help_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """Completion is built from declarations: with every --help text blank, it offers the same."""
    import click

    from majordomus.cli import check, checkpoint, hook

    words = [("hook", ""), ("hook", "compact", "--"), ("checkpoint", "-"), ("check", "--"), ("task", "start", "-"),
             ("hooks", "install", "--runtime", "")]
    before = {w: offered(*w) for w in words}
    assert all(before.values()), before
    monkeypatch.setattr(hook, "USAGE", "")
    for spec in (*hook.SUBCOMMANDS.values(), checkpoint.OPTIONS, check.OPTIONS):
        monkeypatch.setattr(spec, "usage", "usage:\n")
    monkeypatch.setattr(click.Command, "get_help", lambda self, ctx: "")
    monkeypatch.setattr(click.Command, "format_help", lambda self, ctx, formatter: None)
    for w, found in before.items():
        assert offered(*w) == found, w
