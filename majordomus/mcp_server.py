"""The MCP server (design §19): the task's records for agents that reach tools through the Model Context
Protocol rather than a shell. It imports the SDK (`mcp`, the optional extra) and nothing here runs
without it; `cli/mcp.py` checks that it is installed first.

Every tool calls the same core as the CLI (`checkpoint.write`, `handoff.write`, `continuity.pin`, …), with
the same rules and limits: a refusal is an MCP tool error (`isError`) whose text is the CLI's message and
hint, with the exit code the CLI would have given; nothing is written. The repository is `--repo DIR`,
else the client's first root (a `file://` URI), else the server's working directory — asked again for
every request, resource reads included, so that a client whose roots change (or that is asked before it
can answer) is never held to the server's own directory. A resource error carries the CLI's message and
hint. A line the SDK would leave unanswered — not JSON, not a JSON-RPC message, or holding a string with a
lone surrogate — gets a JSON-RPC error response (`mcp_stdio.serve`), so the client is never left waiting.

Tools: `checkpoint(body)`, `handoff(body)`, `brief(task)`, `task_status(task)`, `pin(kind, text)`,
`unpin(pin_id)`, `run_record_list(task)`. The issue named the last one `run_list`; design §19 names it
`run_record_list`, which is the one registered (one name per action: an alias would be a second tool for
a model to choose between). Resource: `majordomus://brief`, the briefing of the active task.
"""

from __future__ import annotations

import contextvars
import io
import os
import warnings
from typing import Any
from urllib.parse import unquote, urlparse

from majordomus import errors
from majordomus.errors import MajordomusError
from majordomus.lite import jsonbound

INSTALL = "pip install 'majordomus[mcp]'"

try:  # the SDK's 2.x line renamed FastMCP to MCPServer; support whichever `pip install mcp` gave
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver import MCPServer as _ServerBase
    from mcp.server.mcpserver.exceptions import ResourceError, ToolError
except ImportError:
    try:  # mcp 1.x
        from mcp.server.fastmcp import Context  # type: ignore[no-redef, attr-defined, unused-ignore]
        from mcp.server.fastmcp import FastMCP as _ServerBase  # type: ignore[no-redef, attr-defined, unused-ignore]
        from mcp.server.fastmcp.exceptions import ResourceError, ToolError  # type: ignore[no-redef, unused-ignore]
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


# The exits whose command writes nothing by rule (it refuses before its first write); an environment
# problem (12) or a busy remote (75) may come part way, and its own message says what is stored.
_REFUSALS = (errors.USAGE, errors.REFUSED, errors.NO_TASK)


def _message(exc: MajordomusError) -> str:
    meaning = MEANING.get(exc.code, "error")
    from majordomus.lite.textrules import render_error

    written = "; nothing was written" if exc.code in _REFUSALS else ""
    return f"{render_error(exc)}\n(the CLI exits {exc.code}: {meaning}{written})"


def _tool_error(exc: MajordomusError) -> ToolError:
    return ToolError(_message(exc))


# The request a resource is read for: the SDK gives a static resource's function no context, so the
# server's `read_resource` (which has it) leaves it here for `Place` to ask that client for its roots.
_REQUEST: contextvars.ContextVar[Any] = contextvars.ContextVar("majordomus_mcp_request", default=None)


class Place:
    """Which repository a request works in: --repo, else the client's first root, else cwd — resolved
    for every request, never fixed by the first one."""

    def __init__(self, repo: str | None) -> None:
        self.repo = os.path.abspath(repo) if repo else None

    async def resolve(self, ctx: Context | None) -> str:  # type: ignore[type-arg]
        if self.repo is not None:
            return self.repo
        from majordomus.lite.dotgit import current_directory  # exit 12's error when it was removed

        return await _first_root(ctx) or current_directory()

    async def workspace(self, ctx: Context | None, error: Any = None) -> Any:  # type: ignore[type-arg]
        from majordomus.workspace import Workspace

        # Outside a repository, a working directory removed, or a broken config: the tool's error says so, as
        # the CLI would.
        try:
            where = await self.resolve(ctx)
        except MajordomusError as exc:
            raise (error or ToolError)(_message(exc)) from exc
        ws = _call(Workspace.open, where, error=error)
        from majordomus.store.paths import refuse_shared

        _call(refuse_shared, ws.paths, error=error)  # a state no one here wrote is given to no agent
        return ws


async def _first_root(ctx: Context | None) -> str | None:  # type: ignore[type-arg]
    """The path of the client's first `file://` root, or None (no roots, no support, no answer in time)."""
    if ctx is None or not _offers_roots(ctx):
        return None
    import anyio

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # roots are deprecated in newer protocol revisions; still asked
            with anyio.fail_after(ROOTS_TIMEOUT):
                result = await ctx.session.list_roots()
        found = None
        for root in result.roots:
            uri = urlparse(str(root.uri))
            if uri.scheme == "file" and uri.path:
                found = unquote(uri.path)
                break
    except Exception:
        return None
    if found is not None and "\0" in found:  # no path holds one: the CLI's words for what cannot be a directory
        raise errors.EnvironmentProblem("the client's first root is not a directory: its path holds a NUL",
                                        "give the MCP client a root that is a git work tree (or start the server "
                                        "with --repo DIR)")
    return found


def _offers_roots(ctx: Any) -> bool:
    """Whether the client declared `roots` (a client that did not is not asked, at every request, to time out)."""
    try:
        params = ctx.session.client_params
        return params is None or params.capabilities.roots is not None
    except AttributeError:
        return True  # an SDK that does not say: ask, bounded by ROOTS_TIMEOUT


TOOL_GIT_SECONDS = 10.0  # as a hook's: a git that does not return (a stuck fsmonitor) never holds the agent


def _call(fn: Any, *args: Any, error: Any = None) -> Any:
    from majordomus.git import run as git_run

    git_run.limit(TOOL_GIT_SECONDS)  # its git commands together, stopped with what they started
    try:
        return fn(*args)
    except MajordomusError as exc:
        raise (error or ToolError)(_message(exc)) from exc
    finally:
        git_run.limit(None)


class _Server(_ServerBase):  # type: ignore[misc, valid-type]
    async def call_tool(self, name: Any, *args: Any, **kwargs: Any) -> Any:
        tools = {tool.name: tool for tool in await self.list_tools()}
        if name not in tools:  # the SDK's own error would repeat the client's name raw ("Unknown tool: …")
            raise ToolError(_unknown("tool", name, sorted(tools)))
        arguments = args[0] if args else kwargs.get("arguments")
        schema = getattr(tools[name], "input_schema", None) or getattr(tools[name], "inputSchema", None)  # 2.x, 1.x
        takes = sorted((schema or {}).get("properties") or {})
        extra = sorted(set(arguments) - set(takes)) if isinstance(arguments, dict) else []
        if extra:  # the SDK drops them unsaid: a `limit` the tool does not have would seem to have been applied
            raise ToolError(_unknown("argument", extra[0], takes, of=f"`{name}`"))
        return _escaped(await super().call_tool(name, *args, **kwargs))

    async def read_resource(self, uri: Any, context: Any = None) -> Any:
        known = sorted(str(resource.uri) for resource in await self.list_resources())
        if str(uri) not in known:
            raise ResourceError(_unknown("resource", uri, known))
        token = _REQUEST.set(context if context is not None else _current_context(self))
        try:
            read = await (super().read_resource(uri, context) if context is not None else super().read_resource(uri))
        finally:
            _REQUEST.reset(token)
        from majordomus.output import escape

        for part in read if isinstance(read, list) else ():  # the briefing, escaped as every body is
            if isinstance(getattr(part, "content", None), str):
                part.content = escape(part.content, body=True)
        return read

    async def get_prompt(self, name: Any, *args: Any, **kwargs: Any) -> Any:
        known = sorted(prompt.name for prompt in await self.list_prompts())
        if name not in known:
            raise ValueError(_unknown("prompt", name, known))
        return await super().get_prompt(name, *args, **kwargs)


def _unknown(kind: str, name: Any, known: list[str], of: str = "majordomus") -> str:
    """A tool, resource, prompt or tool argument the server does not have, named as the client gave it,
    escaped: the SDK's own error would repeat it raw, a line of its own for the model to read as an
    instruction (an argument it would drop without a word)."""
    from majordomus.output import escape

    verb = "takes" if kind == "argument" else "offers"
    there = f"\nhint: its {kind}s are {', '.join(known)}" if known else f" (it {verb} no {kind}s)"
    return f"{of} has no {kind} `{escape(str(name))}`{there}"


def _escaped(result: Any) -> Any:
    """A tool result whose text the model reads, through the one JSON encoder of every output: the SDK
    serialises a returned dict with line separators, NEL and bidi controls raw (design §2a "the terminal").
    A text that is JSON (a dict the tool returned) is encoded again, the same value; any other text (the
    briefing) is escaped as every body is."""
    from majordomus.output import dumps, escape

    blocks = result[0] if isinstance(result, tuple) else getattr(result, "content", result)
    for block in blocks if isinstance(blocks, list) else ():
        if getattr(block, "type", None) != "text" or not isinstance(block.text, str):
            continue
        try:
            value = jsonbound.loads(block.text) if block.text.lstrip().startswith(("{", "[")) else None
        except ValueError:
            value = None
        block.text = dumps(value, indent=2) if value is not None else escape(block.text, body=True)
    # The structured copy the SDK serialises itself, with every character raw: its strings as every output
    # shows them (a client may hand this JSON to the model as it is).
    if isinstance(result, tuple) and len(result) == 2 and result[1] is not None:
        result = (result[0], _escaped_strings(result[1]))
    for name in ("structuredContent", "structured_content"):
        if getattr(result, name, None) is not None:
            setattr(result, name, _escaped_strings(getattr(result, name)))
    return result


def _escaped_strings(value: Any) -> Any:
    from majordomus.output import escape

    if isinstance(value, str):
        return escape(value, body=True)
    if isinstance(value, dict):
        return {key: _escaped_strings(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_escaped_strings(item) for item in value]
    return value


def _current_context(server: Any) -> Any:
    """The 1.x SDK's way to the request being served (2.x passes it to `read_resource`)."""
    try:
        return server.get_context()
    except Exception:
        return None


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
        if written is None:
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
            found = tasks.named_or_active(ws, task)
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
            _call(tasks.load, ws, task)  # an unknown task is an error, as for `brief` and `task_status`
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
        ws = await place.workspace(_REQUEST.get(), error=ResourceError)
        return str(_call(brief_core.build, ws, None, error=ResourceError))

    return server


# ---------------------------------------------------------------- the wire
