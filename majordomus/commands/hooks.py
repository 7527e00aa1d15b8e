"""`majordomus hook …` (what the agent runtimes run) and `majordomus hooks install|uninstall`."""

from __future__ import annotations

import os
from typing import Any

import click

from majordomus.cli import Group


class FailOpenGroup(click.Group):
    """Agent-runtime hooks exit 0 whatever happens (SPEC §12): errors become a note on stderr."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.exceptions.Exit:
            raise
        except Exception as exc:  # noqa: BLE001 - usage errors included: never fail a session
            from majordomus import hooks

            hooks.fail_open(ctx.invoked_subcommand or "", exc)
            ctx.exit(0)


@click.group("hook", cls=FailOpenGroup)
def hook() -> None:
    """What agent runtimes run (SessionStart, Stop, PreCompact/PostCompact). Always exits 0."""


@hook.command("session-start")
def session_start() -> None:
    """Print the identity and the briefing as SessionStart context (every source alike)."""
    from majordomus import hooks

    hooks.run("session-start")


@hook.command("stop")
def stop() -> None:
    """Record `session.stop` (session id, final message length): bookkeeping only."""
    from majordomus import hooks

    hooks.run("stop")


@hook.command("compact")
@click.option("--phase", required=True, metavar="pre|post", help="From the hook registration, never the payload.")
@click.option("--runtime", required=True, metavar="claude|codex", help="Whose payload this is.")
def compact(phase: str, runtime: str) -> None:
    """Append one line to the active task's compaction journal (no pygit2, click or yaml when run as a hook)."""
    from majordomus import journal

    journal.main(["--phase", phase, "--runtime", runtime], os.getcwd())


@click.group("hooks", cls=Group)
def hooks() -> None:
    """Install or remove the majordomus hooks of Claude Code, Codex or git."""


runtime_option = click.option("--runtime", required=True, type=click.Choice(["claude", "codex", "git"]),
                              help="Where to install: .claude/settings.json, .codex/hooks.json, or git's hooks.")


@hooks.command("install")
@runtime_option
@click.option("--compact-bridge", is_flag=True,
              help="Also register PreCompact/PostCompact to keep the compaction journal (claude, codex).")
def install(runtime: str, compact_bridge: bool) -> None:
    """Merge the majordomus hooks into the runtime's configuration; idempotent."""
    from majordomus import gitinstall, installers
    from majordomus.errors import UsageError
    from majordomus.workspace import Workspace

    if runtime == "git" and compact_bridge:
        raise UsageError("--compact-bridge applies to claude and codex, not git",
                         "run `majordomus hooks install --runtime git` without it")
    ws = Workspace.open()
    if runtime == "git":
        from majordomus import git

        result = gitinstall.install(ws, git.hooks_dir(ws.repo))
    else:
        result = installers.install(ws, runtime, compact_bridge)
    shown = ws.display(result.path)
    if result.how == "already":
        click.echo(f"already installed: {shown}")
    elif result.how == "chained":
        click.echo(f"installed: {shown} (the existing hook runs first, from {gitinstall.CHAINED})")
    else:
        click.echo(f"installed: {shown} ({', '.join(result.changed)})")
    if runtime == "codex" and result.how != "already":
        click.echo("note: Codex versions that gate hooks need `[features] hooks = true` in ~/.codex/config.toml",
                   err=True)


@hooks.command("uninstall")
@runtime_option
def uninstall(runtime: str) -> None:
    """Remove exactly what `hooks install` added (the file's earlier bytes when it was not edited since)."""
    from majordomus import gitinstall, installers
    from majordomus.workspace import Workspace

    ws = Workspace.open()
    if runtime == "git":
        from majordomus import git

        result = gitinstall.uninstall(ws, git.hooks_dir(ws.repo))
    else:
        result = installers.uninstall(ws, runtime)
    shown = ws.display(result.path)
    if result.how == "absent":
        click.echo(f"nothing to remove: {shown}")
    elif result.how == "restored":
        click.echo(f"restored: {shown} (as it was before `hooks install`)")
    else:
        click.echo(f"removed: {shown} ({', '.join(result.changed)})")
