"""Every command has --help and a man page that ships in the package and renders without warnings."""

from __future__ import annotations

import subprocess
from importlib import resources
from pathlib import Path

from helpers import require_tool, run_here, subcommands

from majordomus.commands import COMMANDS


def man_page(name: str):
    return resources.files("majordomus").joinpath("man", f"{name}.1")


def test_every_command_has_a_man_page():
    missing = [c for c in COMMANDS if not man_page(f"majordomus-{c}").is_file()]
    assert missing == [], f"commands without a man page: {missing}"
    assert man_page("majordomus").is_file()


def test_man_pages_render_without_warnings():
    groff = require_tool("groff")
    pages = sorted(p for p in resources.files("majordomus").joinpath("man").iterdir() if p.name.endswith(".1"))
    assert pages
    for page in pages:
        result = subprocess.run([groff, "-man", "-ww", "-z", str(page)], capture_output=True, text=True, check=False)
        assert result.returncode == 0 and result.stderr == "", f"{page.name}: {result.stderr}"


def test_every_command_and_subcommand_has_help():
    top = run_here("--help", text=True)
    assert top.exit_code == 0
    for name in COMMANDS:
        assert name in top.stdout
        result = run_here(name, "--help", text=True)
        assert result.exit_code == 0 and "usage:" in result.stdout.lower(), (name, result)
        for sub in subcommands(result.stdout):
            result = run_here(name, sub, "--help", text=True)
            assert result.exit_code == 0 and "usage:" in result.stdout.lower(), f"{name} {sub}"
    hook = run_here("hook", "--help", text=True)
    for sub in ("session-start", "stop", "compact"):
        assert f"hook {sub}" in hook.stdout
        assert run_here("hook", sub, "--help", text=True).stdout.lower().startswith("usage:")


def test_readme_names_every_command():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    for name in COMMANDS:
        assert f"majordomus {name}" in readme, f"README does not show `majordomus {name}`"
    assert "make demo" in readme and "make test" in readme
