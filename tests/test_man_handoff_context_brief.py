"""The man pages of handoff, context and brief: present, complete, warning-free, and naming every option."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import click
import pytest

import majordomus
from majordomus.cli import cli

MAN = Path(majordomus.__file__).resolve().parent / "man"
PAGES = {"handoff": ["handoff"], "context": ["context"], "brief": ["brief"]}
SECTIONS = ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "EXAMPLES", "SEE ALSO")


def commands(name: str) -> list[click.Command]:
    command = cli.get_command(click.Context(cli), name)
    assert command is not None, name
    if isinstance(command, click.Group):
        return [command] + [command.commands[sub] for sub in command.commands]
    return [command]


@pytest.mark.parametrize("name", sorted(PAGES))
def test_page_is_installed_with_every_section_and_option(name: str) -> None:
    page = MAN / f"majordomus-{name}.1"
    text = page.read_text(encoding="utf-8")
    for section in SECTIONS:
        assert f'.SH {section}' in text or f'.SH "{section}"' in text, (name, section)
    plain = text.replace("\\-", "-")
    for command in commands(name):
        for param in command.params:
            if isinstance(param, click.Option):
                assert any(opt in plain for opt in param.opts), (name, command.name, param.opts)
        if isinstance(command, click.Group):
            for sub in command.commands:
                assert f".B {sub}" in plain or f"context {sub}" in plain, (name, sub)


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
@pytest.mark.parametrize("name", sorted(PAGES))
def test_page_renders_without_warnings(name: str) -> None:
    result = subprocess.run(["groff", "-man", "-ww", "-z", str(MAN / f"majordomus-{name}.1")],
                            capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout == "" and result.stderr == ""
