"""`majordomus doctor [--strict] [--json | --format F]` (design §11): a thin click adapter over majordomus.doctor."""

from __future__ import annotations

import sys

import click

from majordomus.cli.common import CONTEXT, run
from majordomus.errors import UsageError


@click.command("doctor", context_settings=CONTEXT)
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON (same as --format json).")
@click.option("--strict", is_flag=True, help="Exit 1 on warnings too, not only on failures.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default=None,
              help="text (default), json, or github (::error/::warning lines for GitHub Actions).")
@click.pass_context
def doctor(ctx: click.Context, as_json: bool, strict: bool, fmt: str | None) -> None:
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
    ctx.exit(findings.exit_code(found, strict))


def main(argv: list[str]) -> int:
    return run(doctor, argv, "majordomus doctor")
