"""The commands' own parser (`majordomus.cli.params`) reads what click reads, and leaves the rest to click.

Every command declares its options once; a run is parsed without click when its words are of the usual
forms, and by click (built from the same declarations) otherwise. The walk below draws command lines from
each command's own words — its options, `--option=value`, its choices, numbers in several spellings,
`--`, `-h`, unknown options, empty words — and holds the two to one reading: whenever the own parser takes
a line, click takes it too and gives the command the same values.
"""

from __future__ import annotations

import importlib
from typing import Any

import click
import pytest
from helpers import import_probe, run_here, snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from majordomus.cli import params
from majordomus.commands import COMMANDS


def declared() -> dict[str, params.Command]:
    """Every command and subcommand declared in `params`, by its command line (`task start`)."""
    found: dict[str, params.Command] = {}
    for name, (module, _function, _summary) in COMMANDS.items():
        for value in vars(importlib.import_module(module)).values():
            if isinstance(value, params.Group) and value.name == name:
                found.update({f"{name} {sub}": cmd for sub, cmd in value.commands.items()})
            elif isinstance(value, params.Command) and value.name == name:
                found[name] = value
    return found


DECLARED = declared()
NUMBERS = ["0", "5", "007", "20", "1.5", "+5", "-1", "1e3", "nan", "inf", "5_0", " 5", "１", "0.1", "86400.5",
           "9" * 5000]  # more digits than int() converts
WORDS = ["x", "alpha", "a b", "", "-", "--", "-h", "--help", "-Z", "--nope", "é", "t1", "--=x"]


def option_pieces(command: params.Command) -> list[list[str]]:
    """Each option alone, and with each value a walk gives it (`--opt V`, `--opt=V`): its choices, numbers
    in every spelling for a number, odd words."""
    found = []
    for option in (p for p in command.params if isinstance(p, params.Option)):
        values = list(option.type.choices) + ["x", ""] if isinstance(option.type, params.Choice) else []
        values += NUMBERS if isinstance(option.type, (params.IntRange, params.FloatRange)) else WORDS
        for name in option.names:
            found.append([name])
            if not option.is_flag:
                found += [[name, v] for v in values]
            if name.startswith("--"):
                found += [[f"{name}={v}"] for v in values[:: 4 if option.is_flag else 1]]
    return found


def positional_words(command: params.Command) -> list[str]:
    words = ["x", "t1", "a b", "", "-", "é", *NUMBERS[:3]]
    for argument in command.arguments:
        if isinstance(argument.type, params.Choice):
            words += argument.type.choices
    return words


@st.composite
def lines(draw: Any, command: params.Command) -> list[str]:
    """A command line of `command`: its options with values, about as many positional words as it takes
    (one fewer or more too), now and then `--` or a word of any kind, in any order."""
    pieces = draw(st.lists(st.sampled_from(option_pieces(command) or [["--help"]]), max_size=4))
    wanted = len(command.arguments) + (2 if any(a.nargs == -1 for a in command.arguments) else 0)
    count = draw(st.integers(0, wanted + 1))
    pieces += [[w] for w in draw(st.lists(st.sampled_from(positional_words(command)), min_size=count, max_size=count))]
    pieces += [[w] for w in draw(st.lists(st.sampled_from(WORDS + NUMBERS), max_size=1))]
    ordered = draw(st.permutations(pieces))
    return [word for piece in ordered for word in piece]


def click_reads(command: params.Command, argv: list[str]) -> dict[str, Any]:
    with command.to_click().make_context(command.name, list(argv)) as ctx:
        return dict(ctx.params)


@pytest.mark.parametrize("line", sorted(DECLARED))
@settings(max_examples=30)
@given(data=st.data())
def test_whatever_the_own_parser_takes_click_reads_the_same(line: str, data: Any) -> None:
    command = DECLARED[line]
    argv = data.draw(lines(command), label="argv")
    parsed = params.parse(command, argv)
    if parsed is not None:
        assert parsed[0] is command
        assert parsed[1] == click_reads(command, argv), argv


def required_words(command: params.Command) -> list[str]:
    """A value for each argument the command needs: one of its choices, else a word."""
    return [a.type.choices[0] if isinstance(a.type, params.Choice) else "t1" for a in command.arguments if a.required]


@pytest.mark.parametrize("line", sorted(DECLARED))
def test_each_option_with_each_value_is_read_as_click_reads_it(line: str) -> None:
    """The walk's systematic half: every option piece alone (each value the walk knows, both spellings),
    after and before the words the command needs, and after `--` too."""
    command = DECLARED[line]
    taken = 0
    for piece in option_pieces(command):
        for argv in (required_words(command) + piece, piece + required_words(command),
                     piece + ["--", *required_words(command)]):
            parsed = params.parse(command, argv)
            if parsed is not None:
                taken += 1
                assert parsed[1] == click_reads(command, argv), argv
    readable = [p for p in command.params if isinstance(p, params.Option) and not isinstance(p.type, params.Directory)]
    assert taken or not readable, line  # else the walk would prove nothing (click reads a directory's path)


# A usual line of each command: the own parser takes it (else the walk above would prove nothing).
USUAL = {
    "task start": ["t1", "--title", "A task", "--objective=Ship it"], "task show": ["t1", "--json"],
    "task list": [], "task resume": ["t1", "--force"], "task release": [], "task done": ["t1"],
    "brief": ["--max-bytes", "4096", "t1"], "doctor": ["--strict", "--format", "github"], "init": [],
    "ledger": ["--json", "--task", "t1"], "handoff": ["--show", "t1"], "log": ["-n", "5", "--since", "yesterday"],
    "context pin": ["decision", "--", "Keep", "it."], "context unpin": ["abcd"], "context show": [],
    "context status": ["--json"], "context validate": ["t1"], "search": ["-E", "pars.r", "--kind", "pin"],
    "run": ["--label", "tests", "--", "make", "test"], "watch": ["--interval", "0.5", "--once"],
    "sync push": ["origin", "--checkpoints", "--timeout", "5"], "sync pull": ["--full"],
    "sync status": ["--no-fetch"], "sync compact": ["--machine", "a", "--machine=b", "--idle-days", "30"],
    "hooks install": ["--runtime", "codex", "--compact-bridge"], "hooks uninstall": ["--runtime=git"],
    "mcp": [],
}


def test_every_command_is_walked_and_its_usual_line_is_read_here() -> None:
    assert sorted(USUAL) == sorted(DECLARED)
    for line, argv in USUAL.items():
        parsed = params.parse(DECLARED[line], argv)
        assert parsed is not None, line
        assert parsed[1] == click_reads(DECLARED[line], argv), line


@pytest.mark.parametrize("argv", [
    ["-h"], ["x", "--help"], ["x", "--kind", "note"], ["x", "--task"], ["x", "-Z"], ["x", "--json=1"],
    ["x", "--task", "-E"], ["-Ex"], [],
])
def test_what_click_must_say_is_left_to_click(argv: list[str]) -> None:
    assert params.parse(DECLARED["search"], argv) is None


def test_a_group_leaves_anything_but_a_subcommand_to_click() -> None:
    from majordomus.cli import task

    for argv in ([], ["--help"], ["nope"], ["--json", "list"], ["START", "x"]):
        assert params.parse(task.task_group, argv) is None, argv
    assert params.parse(task.task_group, ["list", "--json"]) == (task.task_group.commands["list"], {"as_json": True})


def test_a_run_reads_no_click_and_a_usage_error_or_help_is_clicks(repo: Any) -> None:
    """design §16: the usual line loads no click (the probe can fail: --help and a usage error load it)."""
    assert import_probe(repo, "task", "start", "t1") == {"code": 0, "heavy": []}
    assert import_probe(repo, "log", "-n", "3") == {"code": 0, "heavy": []}
    assert "click" in import_probe(repo, "log", "--help")["heavy"]
    before = snapshot(repo)
    bad = import_probe(repo, "log", "-n", "0")
    assert bad["code"] == 2 and "click" in bad["heavy"] and snapshot(repo) == before


def test_a_value_click_would_refuse_is_refused_in_the_one_format(repo: Any) -> None:
    before = snapshot(repo)
    for args, words in ((["log", "-n", "+0"], "-n"), (["watch", "--interval", "nan"], "'nan' is not a finite number"),
                        (["brief", "--max-bytes", "１"], "--max-bytes")):
        result = run_here(*args, cwd=repo, text=True)
        assert result.exit_code == 2 and result.stdout == "" and words in result.stderr, (args, result)
        first, hint = result.stderr.splitlines()
        assert first.startswith("majordomus: ") and hint.startswith("hint: usage: majordomus "), result.stderr
    assert snapshot(repo) == before


def test_click_is_the_same_command_as_declared() -> None:
    """The click command built from a declaration has its options, arguments and help."""
    from majordomus.cli import log

    made = log.log_cmd.to_click()
    assert isinstance(made, click.Command) and made.help == log.log_cmd.help
    assert [p.name for p in made.params] == [p.dest for p in log.log_cmd.params]
    assert made is log.log_cmd.to_click()  # made once
