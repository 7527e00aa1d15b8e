"""What the click commands share: the group class, `--json`, the workspace, and running one as `main`."""

from __future__ import annotations

import sys
from typing import Any

import click

from majordomus.workspace import Workspace

CONTEXT = {"help_option_names": ["-h", "--help"]}
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")


class Group(click.Group):
    """A command group of majordomus (`-h` works as `--help`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("context_settings", CONTEXT)
        super().__init__(*args, **kwargs)


def workspace() -> Workspace:
    return Workspace.open()


def run(command: click.Command, argv: list[str], prog: str) -> int:
    """Run a click command as `main(argv) -> int`. Click's own usage errors are shown here; every other
    error (a MajordomusError, an internal one) goes to the one boundary in `majordomus.main`."""
    try:
        return int(command.main(args=argv, prog_name=prog, standalone_mode=False) or 0)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.Abort:
        sys.stderr.write("majordomus: interrupted\n")
        return 130
