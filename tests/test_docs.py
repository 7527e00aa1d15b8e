"""Every command has --help and a man page that ships in the package and renders without warnings."""

from __future__ import annotations

import shutil
import subprocess
from importlib import resources

import click
import pytest

from majordomus.cli import cli as root


def commands() -> list[str]:
    ctx = click.Context(root)
    return root.list_commands(ctx)


def man_page(name: str):
    return resources.files("majordomus").joinpath("man", f"{name}.1")


def test_every_command_has_a_man_page():
    missing = [c for c in commands() if not man_page(f"majordomus-{c}").is_file()]
    assert missing == [], f"commands without a man page: {missing}"
    assert man_page("majordomus").is_file()


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_man_pages_render_without_warnings():
    pages = sorted(p for p in resources.files("majordomus").joinpath("man").iterdir() if p.name.endswith(".1"))
    assert pages
    for page in pages:
        result = subprocess.run(["groff", "-man", "-ww", "-z", str(page)], capture_output=True, text=True)
        assert result.returncode == 0 and result.stderr == "", f"{page.name}: {result.stderr}"


def test_every_command_and_subcommand_has_help():
    from click.testing import CliRunner

    runner = CliRunner()
    for name in commands():
        command = root.get_command(click.Context(root), name)
        result = runner.invoke(root, [name, "--help"])
        assert result.exit_code == 0 and command.help, name
        if isinstance(command, click.Group):
            for sub in command.list_commands(click.Context(command)):
                result = runner.invoke(root, [name, sub, "--help"])
                assert result.exit_code == 0 and "Usage:" in result.output, f"{name} {sub}"


def test_readme_names_every_command():
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    for name in commands():
        assert f"majordomus {name}" in readme, f"README does not show `majordomus {name}`"
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert "make demo" in quick and "make test" in quick
