"""`majordomus hooks install|uninstall --runtime claude|codex|gemini|copilot|git [--mcp]` (design §12, §19, §23)."""

from __future__ import annotations

import os
import shutil
from typing import Any, Callable

from majordomus.cli import params
from majordomus.cli.params import run


@params.group("hooks")
def hooks() -> None:
    """Install or remove the majordomus hooks of Claude Code, Codex or git."""


def runtime_option(verb: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return params.option("--runtime", required=True, type=params.Choice(["claude", "codex", "gemini", "copilot", "git"]),
                        help=f"Where to {verb}: .claude/settings.json, .codex/hooks.json, .gemini/settings.json, "
                             ".github/hooks/majordomus.json, or git's post-commit and post-rewrite hooks (in core.hooksPath when set).")


@hooks.command("install")
@runtime_option("install")
@params.option("--compact-bridge", is_flag=True,
              help="Also register the compaction hooks that keep the compaction journal (claude, codex, gemini, copilot).")
@params.option("--mcp", "with_mcp", is_flag=True,
              help="Also add the majordomus MCP server to the project's .mcp.json (claude).")
def install(runtime: str, compact_bridge: bool, with_mcp: bool) -> None:
    """Merge the majordomus hooks into a runtime's configuration.

    Nothing already there is clobbered, and running it again changes nothing.
    """
    from majordomus.errors import UsageError
    from majordomus.hooks import githook, installers
    from majordomus.workspace import Workspace

    if runtime == "git" and compact_bridge:
        raise UsageError("--compact-bridge applies to claude and codex, not git",
                         "run `majordomus hooks install --runtime git` without it")
    if with_mcp and runtime != "claude":
        raise UsageError("--mcp applies to claude (the project's .mcp.json)",
                         f"run `majordomus hooks install --runtime {runtime}` without it")
    ws = Workspace.open()
    if with_mcp:
        from majordomus.hooks import mcpjson

        mcpjson.check(ws)
    if runtime == "git":
        from majordomus.git import status

        hooks_dir = status.hooks_dir(ws.place)
        results = githook.install(ws, hooks_dir)
        if any(r.how == "chained" for r in results) and status.is_tracked(ws.place, hooks_dir):
            parked = ", ".join(h.chained for h, r in zip(githook.HOOKS, results) if r.how == "chained")
            params.echo(f"warning: {_shown(ws, hooks_dir)} is tracked by git: your hook now lives in "
                       f"{parked} there; do not commit the rename (ignore that file, or run "
                       "`majordomus hooks uninstall --runtime git` before committing hook changes)", err=True)
    elif runtime in ("gemini", "copilot"):
        results = [_more_runtimes(runtime).install(ws, compact_bridge)]
    else:
        results = [installers.install(ws, runtime, compact_bridge)]
    for result in results:
        _report_install(ws, result)
    result = results[0]
    if with_mcp:
        _report_mcp(ws, install=True)
    if runtime == "codex" and result.how != "already":
        params.echo("note: Codex runs project hooks only in a trusted project with trusted hooks: trust the project "
                   "(`codex exec --trust`, or trust it when Codex asks), then trust each hook (its trusted_hash under "
                   "[hooks.state.\"…\"] in $CODEX_HOME/config.toml, default ~/.codex, set when you approve it), or run "
                   "Codex with --trust --dangerously-bypass-hook-trust; until then Codex skips them silently. After a "
                   "change to .codex/hooks.json, only the changed, moved or new hooks need trusting again. See "
                   "docs/agents-and-hooks.md.", err=True)
    if runtime in ("gemini", "copilot") and result.how != "already":
        params.echo(_more_runtimes(runtime).TRUST_NOTE, err=True)
    if runtime != "git" and result.how != "already" and shutil.which("majordomus") is None:
        params.echo("warning: `majordomus` is not on PATH here: the runtime runs `majordomus hook …` by name and will "
                   "not find it (and says nothing); install it where the agent's PATH reaches (pipx, or a venv's bin "
                   "on PATH)", err=True)


@hooks.command("uninstall")
@runtime_option("remove from")
def uninstall(runtime: str) -> None:
    """Remove exactly what `hooks install` added.

    A file not edited since is put back byte for byte as it was before.
    """
    from majordomus.hooks import githook, installers
    from majordomus.workspace import Workspace

    ws = Workspace.open()
    if runtime == "git":
        from majordomus.git import status

        results = githook.uninstall(ws, status.hooks_dir(ws.place))
    elif runtime in ("gemini", "copilot"):
        results = [_more_runtimes(runtime).uninstall(ws)]
    else:
        results = [installers.uninstall(ws, runtime)]
    for result in results:
        shown = _shown(ws, result.path)
        if result.how == "absent":
            params.echo(f"nothing to remove: {shown}")
        elif result.how == "restored":
            params.echo(f"restored: {shown} (as it was before `hooks install`)")
        else:
            params.echo(f"removed: {shown} ({', '.join(result.changed)})")
    if runtime == "claude":  # the .mcp.json entry of `install --mcp`, if it is there
        _report_mcp(ws, install=False)


def _shown(ws: Any, path: str) -> str:
    """A hook or settings path as printed: escaped (`core.hooksPath` may hold any byte git allows)."""
    from majordomus.output import escape

    return escape(ws.display(path))


def _report_install(ws: Any, result: Any) -> None:
    shown = _shown(ws, result.path)
    if result.how == "already":
        params.echo(f"already installed: {shown}")
    elif result.how == "chained":
        from majordomus.output import escape

        parked = escape(os.path.basename(result.path) + ".majordomus-chained")
        params.echo(f"installed: {shown} (the existing hook runs first, from {parked})")
    else:
        params.echo(f"installed: {shown} ({', '.join(result.changed)})")


def _more_runtimes(runtime: str) -> Any:
    from majordomus.hooks import copilot, gemini

    return gemini if runtime == "gemini" else copilot


def _report_mcp(ws: Any, install: bool) -> None:
    from majordomus.hooks import mcpjson

    result = mcpjson.install(ws) if install else mcpjson.uninstall(ws)
    shown = _shown(ws, result.path)
    if result.how == "added":
        params.echo(f"installed: {shown} (mcpServers.majordomus)")
    elif result.how == "already":
        params.echo(f"already installed: {shown}")
    elif result.how == "kept":
        params.echo(f"kept: {shown} already has an mcpServers.majordomus entry of its own; left as it is")
    elif result.how == "restored":
        params.echo(f"restored: {shown} (as it was before `hooks install --mcp`)")
    elif result.how == "removed":
        params.echo(f"removed: {shown} (mcpServers.majordomus)")


def main(argv: list[str]) -> int:
    from majordomus.lite import stopsignals

    with stopsignals.held():  # a runtime's files and their receipts change together: a stop signal waits
        return run(hooks, argv, "majordomus hooks")
