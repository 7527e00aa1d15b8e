"""`majordomus doctor [--strict] [--json | --format F]` (design §11): the command line of majordomus.doctor."""

from __future__ import annotations

import sys

from majordomus.cli import params
from majordomus.cli.params import run
from majordomus.errors import UsageError


@params.command("doctor")
@params.option("--json", "as_json", is_flag=True, help="Print the findings as JSON (same as --format json).")
@params.option("--strict", is_flag=True, help="Exit 1 on warnings too, not only on failures.")
@params.option("--format", "fmt", type=params.Choice(["text", "json", "github"]), default=None,
              help="text (default), json, or github (::error/::warning lines for GitHub Actions).")
def doctor(as_json: bool, strict: bool, fmt: str | None) -> int:
    """Check that the state is whole: config, git, modes, records, ledger, continuity, stale tasks.

    Exit 0 when nothing fails (warnings allowed), 1 on any failure, and with --strict on any warning."""
    from majordomus.doctor import checks as core
    from majordomus.doctor import findings

    if as_json and fmt not in (None, "json"):
        raise UsageError(f"--json and --format {fmt} do not go together", "pick one")
    fmt = "json" if as_json else (fmt or "text")
    ws, config_findings = core.open_workspace()
    found = core.run(ws, config_findings)
    render = {"text": findings.render_text, "json": findings.render_json, "github": findings.render_github}[fmt]
    sys.stdout.write(render(found, strict))
    return findings.exit_code(found, strict)


def main(argv: list[str]) -> int:
    return run(doctor, argv, "majordomus doctor")
