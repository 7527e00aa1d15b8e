"""The man pages of handoff, context and brief: present, complete, warning-free, and naming every option."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from helpers import invoke_main, require_tool, subcommands

import majordomus

MAN = Path(majordomus.__file__).resolve().parent / "man"
PAGES = {"handoff": ["handoff"], "context": ["context"], "brief": ["brief"]}
SECTIONS = ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "EXAMPLES", "SEE ALSO")


def options(args: list[str]) -> set[str]:
    """The long options `majordomus ARGS --help` lists."""
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", invoke_main([*args, "--help"]).stdout)) - {"--help"}


@pytest.mark.parametrize("name", sorted(PAGES))
def test_page_is_installed_with_every_section_and_option(name: str) -> None:
    page = MAN / f"majordomus-{name}.1"
    text = page.read_text(encoding="utf-8")
    for section in SECTIONS:
        assert f'.SH {section}' in text or f'.SH "{section}"' in text, (name, section)
    plain = text.replace("\\-", "-")
    subs = subcommands(invoke_main([name, "--help"]).stdout)
    for args in [[name]] + [[name, sub] for sub in subs]:
        for option in options(args):
            assert option in plain, (name, args, option)
    for sub in subs:
        assert f".B {sub}" in plain or f"context {sub}" in plain, (name, sub)


@pytest.mark.parametrize("name", sorted(PAGES))
def test_page_renders_without_warnings(name: str) -> None:
    result = subprocess.run([require_tool("groff"), "-man", "-ww", "-z", str(MAN / f"majordomus-{name}.1")],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0 and result.stdout == "" and result.stderr == ""
