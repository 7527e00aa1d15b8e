"""`majordomus mcp [--repo DIR]` (SPEC §19): serve MCP over stdio; the SDK is the optional extra `mcp`."""

from __future__ import annotations

from typing import Optional

import click

from majordomus.cli.common import CONTEXT, run
from majordomus.errors import EnvironmentProblem

INSTALL = "pip install 'majordomus[mcp]'"


def main(argv: list[str]) -> int:
    return run(mcp_command, argv, "majordomus mcp")


@click.command("mcp", context_settings=CONTEXT)
@click.option("--repo", metavar="DIR", type=click.Path(file_okay=False),
              help="The repository to serve (default: the client's first root, else the current directory).")
def mcp_command(repo: Optional[str]) -> None:
    """Serve the active task's records to an MCP client over stdio (stdin/stdout carry the protocol)."""
    if repo is not None:
        from majordomus.workspace import Workspace

        Workspace.open(repo)  # not a git work tree: exit 12 now, not at the first tool call
    try:
        from majordomus import mcp_server
    except ImportError as exc:
        missing = getattr(exc, "name", None) or "mcp"
        raise EnvironmentProblem(
            f"`majordomus mcp` needs the MCP SDK, which is not installed here ({missing} cannot be imported)",
            f"install it with `{INSTALL}` (or `pipx inject majordomus mcp`), then run `majordomus mcp` again",
        ) from exc
    mcp_server.serve(repo)
