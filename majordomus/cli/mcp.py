"""`majordomus mcp [--repo DIR]` (design §19): serve MCP over stdio; the SDK is the optional extra `mcp`."""

from __future__ import annotations

import sys

from majordomus.cli import params
from majordomus.cli.params import run


def main(argv: list[str]) -> int:
    return run(mcp_command, argv, "majordomus mcp")


@params.command("mcp")
@params.option("--repo", metavar="DIR", type=params.Directory(),
              help="The repository to serve (default: the client's first root, else the current directory).")
def mcp_command(repo: str | None) -> None:
    """Serve the active task's records to an MCP client over stdio (stdin/stdout carry the protocol)."""
    if repo is not None:
        from majordomus.workspace import Workspace

        Workspace.open(repo)  # not a git work tree: exit 12 now, not at the first tool call
    sys.stdin.readable()  # a closed stdin (`<&-`) is exit 12 now, not after a second of loading the SDK
    from majordomus import mcp_stdio  # exit 12 naming `pip install 'majordomus[mcp]'` without the SDK

    mcp_stdio.serve(repo)
