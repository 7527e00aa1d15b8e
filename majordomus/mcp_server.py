"""The MCP server (design §19): the task's records for agents that reach tools through the Model Context
Protocol rather than a shell. It imports the SDK (`mcp`, the optional extra) and nothing here runs
without it; `cli/mcp.py` checks that it is installed first.

Every tool calls the same core as the CLI (`checkpoint.write`, `handoff.write`, `continuity.pin`, …), with
the same rules and limits: a refusal is an MCP tool error (`isError`) whose text is the CLI's message and
hint, with the exit code the CLI would have given; nothing is written. The repository is `--repo DIR`,
else the client's first root (a `file://` URI), else the server's working directory.

Tools: `checkpoint(body)`, `handoff(body)`, `brief(task)`, `task_status(task)`, `pin(kind, text)`,
`unpin(pin_id)`, `run_record_list(task)`. The issue named the last one `run_list`; design §19 names it
`run_record_list`, which is the one registered (one name per action: an alias would be a second tool for
a model to choose between). Resource: `majordomus://brief`, the briefing of the active task.
"""

from __future__ import annotations

import io
import os
import warnings
from typing import Any
from urllib.parse import unquote, urlparse

from majordomus import errors
from majordomus.errors import MajordomusError

INSTALL = "pip install 'majordomus[mcp]'"

try:  # the SDK's 2.x line renamed FastMCP to MCPServer; support whichever `pip install mcp` gave
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver import MCPServer as _Server
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError:
    try:  # mcp 1.x
        from mcp.server.fastmcp import Context  # type: ignore[no-redef, attr-defined, unused-ignore]
        from mcp.server.fastmcp import FastMCP as _Server  # type: ignore[no-redef, attr-defined, unused-ignore]
        from mcp.server.fastmcp.exceptions import ToolError  # type: ignore[no-redef, unused-ignore]
    except ImportError as exc:
        raise errors.EnvironmentProblem(
            f"`majordomus mcp` needs the MCP SDK, which is not installed here ({exc.name or 'mcp'} cannot be imported)",
            f"install it with `{INSTALL}` (or `pipx inject majordomus mcp`), then run `majordomus mcp` again",
        ) from exc

MEANING = {errors.USAGE: "usage error", errors.REFUSED: "refused: the input breaks a rule",
           errors.NO_TASK: "no active task here", errors.ENVIRONMENT: "environment problem",
           errors.BUSY: "busy: run it again"}
ROOTS_TIMEOUT = 5.0
INSTRUCTIONS = ("majordomus keeps the work state of a task in git-native records. Read `brief` when you start "
                "or resume work; write a few lines of what holds now with `checkpoint`, a full handoff with "
                "`handoff` when you stop. Records are evidence; pins are working memory.")


def _tool_error(exc: MajordomusError) -> ToolError:
    meaning = MEANING.get(exc.code, "error")
    return ToolError(f"{exc.render()}\n(the CLI exits {exc.code}: {meaning}; nothing was written)")


class Place:
    """Which repository the tools work in, decided once: --repo, else the client's first root, else cwd."""

    def __init__(self, repo: str | None) -> None:
        self.repo = os.path.abspath(repo) if repo else None

    async def resolve(self, ctx: Context | None) -> str:  # type: ignore[type-arg]
        if self.repo is None:
            self.repo = await _first_root(ctx) or os.getcwd()
        return self.repo

    async def workspace(self, ctx: Context | None) -> Any:  # type: ignore[type-arg]
        from majordomus.workspace import Workspace

        # Outside a repository, or a broken config: the tool's error says so, as the CLI would.
        return _call(Workspace.open, await self.resolve(ctx))


async def _first_root(ctx: Context | None) -> str | None:  # type: ignore[type-arg]
    """The path of the client's first `file://` root, or None (no roots, no support, no answer in time)."""
    if ctx is None:
        return None
    import anyio

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # roots are deprecated in newer protocol revisions; still asked
            with anyio.fail_after(ROOTS_TIMEOUT):
                result = await ctx.session.list_roots()
        for root in result.roots:
            uri = urlparse(str(root.uri))
            if uri.scheme == "file" and uri.path:
                return unquote(uri.path)
    except Exception:
        return None
    return None


def _call(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except MajordomusError as exc:
        raise _tool_error(exc) from exc


def build(repo: str | None = None) -> Any:
    """The server with its tools and resource (not started)."""
    from majordomus import brief as brief_core
    from majordomus import checkpoint as checkpoint_core
    from majordomus import continuity, runs, tasks
    from majordomus import handoff as handoff_core

    place = Place(repo)
    server = _Server(name="majordomus", instructions=INSTRUCTIONS)

    @server.tool(description="Record what holds now for the active task: a few lines (at most "
                 "checkpoint.max_body_lines, 40 by default); longer goes in a handoff. Returns the record's path.")
    async def checkpoint(body: str, ctx: Context) -> dict[str, Any]:  # type: ignore[type-arg]
        ws = await place.workspace(ctx)
        written = _call(checkpoint_core.write, ws, io.BytesIO(body.encode("utf-8")))
        if written.path is None:
            return {"path": None, "created": False, "note": "empty body: only checkpoint_at moved"}
        return {"path": ws.paths.relative(written.path), "sha256": written.sha256, "created": written.created}

    @server.tool(description="Hand the active task off: a Markdown body with every required section "
                 "(## State, ## Decisions, ## Open items, ## Next actions by default). The task becomes handed-off.")
    async def handoff(body: str, ctx: Context) -> dict[str, Any]:  # type: ignore[type-arg]
        ws = await place.workspace(ctx)
        written = _call(handoff_core.write, ws, io.BytesIO(body.encode("utf-8")))
        return {"path": ws.paths.relative(written.path), "sha256": written.sha256, "created": written.created,
                "task": written.task}

    @server.tool(description="The briefing to resume a task from (default: the active task): continuity, "
                 "the latest handoff, checkpoints since, latest runs, and what moved since the last record.")
    async def brief(ctx: Context, task: str | None = None) -> str:  # type: ignore[type-arg]
        ws = await place.workspace(ctx)
        return str(_call(brief_core.build, ws, task))

    @server.tool(description="The task record (default: the active task here) and where it is active.")
    async def task_status(ctx: Context, task: str | None = None) -> dict[str, Any]:  # type: ignore[type-arg]
        ws = await place.workspace(ctx)

        def status() -> dict[str, Any]:
            found = tasks.load(ws, tasks.validate_id(task)) if task else tasks.active(ws)
            return dict(found.to_dict(), where=tasks.where_active(ws, found))

        return dict(_call(status))

    @server.tool(description="Pin one sentence to the active task's continuity. kind: decision, constraint, "
                 "open-item or next-action. Never pin secrets or file contents.")
    async def pin(kind: str, text: str, ctx: Context) -> dict[str, Any]:  # type: ignore[type-arg]
        ws = await place.workspace(ctx)
        return dict(_call(continuity.pin, ws, kind, text, "agent"), kind=kind)

    @server.tool(description="Remove a pin of the active task by its id (or a unique prefix of 4+ characters).")
    async def unpin(pin_id: str, ctx: Context) -> dict[str, Any]:  # type: ignore[type-arg]
        ws = await place.workspace(ctx)
        kind, removed = _call(continuity.unpin, ws, pin_id)
        return dict(removed, kind=kind)

    @server.tool(description="Execution records of `majordomus run`, newest first (of one task when given): "
                 "label, exit status, head, output digest, as {\"runs\": [...]}.")
    async def run_record_list(ctx: Context, task: str | None = None) -> dict[str, Any]:  # type: ignore[type-arg]
        ws = await place.workspace(ctx)
        if task is not None:
            _call(tasks.validate_id, task)
        return {"runs": _call(lambda: list(runs.summaries(ws, task)))}

    from majordomus import history  # design §22: the CLI's `log` and `search`
    from majordomus import search as search_core

    @server.tool(description=history.TOOL_DESCRIPTION)
    async def log(ctx: Context, task: str | None = None, limit: int = 20, since: str | None = None,  # type: ignore[type-arg]
                  all: bool = False) -> dict[str, Any]:
        return dict(_call(history.tool, await place.workspace(ctx), task, limit, since, all))

    @server.tool(description=search_core.TOOL_DESCRIPTION)
    async def search(words: list[str], ctx: Context, regex: bool = False, task: str | None = None,  # type: ignore[type-arg]
                     kind: str | None = None) -> dict[str, Any]:
        return dict(_call(search_core.tool, await place.workspace(ctx), words, regex, task, kind))

    @server.resource("majordomus://brief", name="brief", description="The briefing of the active task.",
                     mime_type="text/markdown")
    async def active_brief() -> str:
        ws = await place.workspace(None)
        return str(_call(brief_core.build, ws, None))

    return server


def serve(repo: str | None) -> None:
    """Serve over stdio until the client closes the connection."""
    build(repo).run("stdio")
