"""`--help` of every command and subcommand: exits 0, says in one line what it does, and agrees
with what the command does."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import invoke_main, snapshot

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
        found += [(name, sub) for sub in subcommands(name, invoke_main([name, "--help"]).stdout)]
    return found


@pytest.mark.parametrize("words", every_help(), ids=" ".join)
def test_every_help_exits_0_and_says_what_it_does(words: tuple[str, ...]) -> None:
    for flag in ("--help", "-h"):
        result = invoke_main([*words, flag])
        assert result.exit_code == 0 and result.stderr == "", (words, flag, result)
        first = result.stdout.splitlines()[0].lower()
        assert first.startswith(f"usage: majordomus {' '.join(words)}"), (words, first)
        line = description(result.stdout)
        assert len(line) >= 15 and not line.startswith("-") and not line.lower().startswith("options"), (words, line)


def test_the_groups_list_each_subcommand_in_one_whole_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")  # click wraps to the terminal: hold it to the usual 80 columns
    for name in COMMANDS:
        listed = subcommands(name, invoke_main([name, "--help"]).stdout)
        for sub, line in listed.items():
            assert not line.endswith("..."), f"`majordomus {name} --help` cuts the line of {sub}: {line}"


def test_the_top_level_help_lists_every_command_with_its_line() -> None:
    text = invoke_main(["--help"]).stdout
    for name, (_module, _function, summary) in COMMANDS.items():
        assert f"  {name}" in text and summary in text


def test_handoff_help_says_task_goes_with_show_only(cli: Any, repo: Path) -> None:
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
    body = "## State\ns\n## Decisions\nd\n## Open items\no\n## Next actions\nn\n"
    written = cli("handoff", "--json", input=body)
    assert written.exit_code == 0, written
    doc = json.loads(written.stdout)
    assert set(doc) == {"path", "sha256", "created"} and doc["created"] is True
    assert hashlib.sha256((repo / doc["path"]).read_bytes()).hexdigest() == doc["sha256"]


def test_hooks_uninstall_help_says_what_it_removes() -> None:
    install = " ".join(invoke_main(["hooks", "install", "--help"]).stdout.split())
    uninstall = " ".join(invoke_main(["hooks", "uninstall", "--help"]).stdout.split())
    assert "Where to install:" in install
    assert "Where to remove from:" in uninstall and "install:" not in uninstall


def test_context_pin_help_names_the_four_kinds() -> None:
    text = invoke_main(["context", "pin", "--help"]).stdout
    assert "decision, constraint, open-item or next-action" in text  # design §8's four kinds
