"""`majordomus init`."""

from __future__ import annotations

from majordomus.cli import params
from majordomus.cli.params import run, workspace
from majordomus.output import emit, escape


@params.command("init")
def init_cmd() -> None:
    """Create .ai/config.yaml and .ai/profiles/ from the template; never overwrites."""
    from majordomus import scaffold

    for path, what in scaffold.init(workspace()):
        emit(f"{what}: {escape(path)}")


def main(argv: list[str]) -> int:
    return run(init_cmd, argv, "majordomus init")
