"""The MCP server's stdio transport (design §19): each line read from stdin, checked before the SDK sees it
— a line that is not UTF-8, not JSON, not a JSON-RPC message, or that holds a lone surrogate gets a
JSON-RPC error response here, so the client is never left waiting — and the SDK's server (`mcp_server`)
run over it until the client closes the connection. A Ctrl-C ends it as any command (exit 130)."""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

from majordomus.lite import jsonbound
from majordomus.mcp_server import build
from majordomus.output import json_text
from majordomus.store.records import MAX_RECORD_BYTES

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602


def _lone_surrogate(value: Any, depth: int = 0) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if depth > 64:
        return False
    if isinstance(value, dict):
        return any(_lone_surrogate(k, depth + 1) or _lone_surrogate(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return any(_lone_surrogate(v, depth + 1) for v in value)
    return False


def _error_line(request_id: Any, code: int, message: str) -> str:
    if not (isinstance(request_id, (str, int)) and not isinstance(request_id, bool)) or _lone_surrogate(request_id):
        request_id = None
    from majordomus.output import dumps

    return dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}},
                 separators=(",", ":"))


def decoded(raw: bytes) -> tuple[str | None, str | None]:
    """(the line as text, None), or (None, the JSON-RPC parse error) for a line that is not UTF-8: the
    SDK would decode it with U+FFFD in place of each bad byte and store those (design §6 "must be UTF-8").
    The error carries the request's id when the rest of the line still tells it, so the client is not
    left waiting for an answer."""
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        try:
            message = jsonbound.loads(raw.decode("utf-8", "replace"))
        except ValueError:
            message = None
        request_id = message.get("id") if isinstance(message, dict) else None
        return None, _error_line(request_id, PARSE_ERROR, f"Parse error: the line is not valid UTF-8 (byte "
                                                          f"{exc.start}); nothing was done")


def refusal(line: str) -> str | None:
    """The JSON-RPC error for a line the SDK would leave unanswered, or None to pass the line on."""
    if not line.strip():
        return None
    try:
        message = jsonbound.loads(line)
    except ValueError:
        return _error_line(None, PARSE_ERROR, "Parse error: the line is not JSON")
    request_id = message.get("id") if isinstance(message, dict) else None
    if _lone_surrogate(message):
        return _error_line(request_id, INVALID_PARAMS, "Invalid params: a string holds a lone surrogate "
                                                       "(U+D800–U+DFFF), which UTF-8 cannot carry")
    if (not isinstance(message, dict) or message.get("jsonrpc") != "2.0"
            or not ("method" in message or "result" in message or "error" in message)):
        return _error_line(request_id, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message")
    if "method" in message and (not isinstance(message["method"], str) or not _an_id(message.get("id", ""))
                                or not isinstance(message.get("params", {}), dict)):
        # the SDK drops such a request without a word, and its client would wait for ever
        return _error_line(request_id, INVALID_REQUEST, "Invalid Request: a request needs a string `method`, "
                                                        "an `id` that is a string or an integer, and object `params`")
    return None


def _an_id(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


ANSWER_WAIT = 60  # seconds a server whose client closed stdin goes on answering what it was asked
# The longest line read (a request): a record is never longer, so no tool needs more. A longer one is read
# and let go as it comes, and answered with an error: a client never pins the server's memory or time.
MAX_LINE = MAX_RECORD_BYTES
HEAD = 4096  # bytes of a line too long kept to find its id in


class _TooLong:
    """A line over MAX_LINE, by its first bytes."""

    __slots__ = ("head",)

    def __init__(self, head: bytes) -> None:
        self.head = head

    def error(self) -> str:
        import re

        found = re.search(rb'"id"\s*:\s*(-?\d{1,30}|"(?:[^"\\]|\\.){0,256}")\s*[,}]', self.head)
        try:
            request_id = jsonbound.loads(found.group(1)) if found else None
        except ValueError:
            request_id = None
        return _error_line(request_id, INVALID_REQUEST, f"Invalid Request: the line is over {MAX_LINE} bytes, "
                                                        "longer than any request majordomus takes; nothing was done")


def _ids(text: str, *, answers: bool) -> list[Any]:
    """The ids of the requests (or, `answers`, of the responses) a JSON-RPC line carries."""
    try:
        message = jsonbound.loads(text)
    except ValueError:
        return []
    items = message if isinstance(message, list) else [message]
    return [m.get("id") for m in items if isinstance(m, dict) and _an_id(m.get("id"))
            and (("result" in m or "error" in m) if answers else "method" in m)]


class _Wire:
    """The process's stdin and stdout as the SDK's stdio transport reads and writes them, with each
    line checked first (`refusal`) and each reply written whole, one at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._out = sys.stdout.buffer
        self._open: set[Any] = set()  # the ids of the requests passed on and not answered yet

    def __aiter__(self) -> Any:
        return self._lines()

    async def _lines(self) -> Any:
        # stdin is read by a daemon thread of ours, with `os.read` (no lock of `sys.stdin` held): a read the
        # client never ends (stdin kept open) must not keep the process from ending once a Ctrl-C ended the
        # server. One line at a time, when the server asks for the next, as a thread's read of each would.
        import asyncio

        loop = asyncio.get_running_loop()
        lines: asyncio.Queue[bytes | _TooLong | None] = asyncio.Queue()
        wanted = threading.Semaphore(0)

        def give(raw: bytes | _TooLong | None) -> None:
            try:
                loop.call_soon_threadsafe(lines.put_nowait, raw)
            except RuntimeError:
                pass  # the loop ended first

        def read() -> None:
            buffered = bytearray()  # what was read past the last line given
            ended = False
            while True:
                wanted.acquire()
                scanned, head = 0, None  # head: the start of a line over MAX_LINE, kept for its id
                while (at := buffered.find(b"\n", scanned)) < 0:
                    if head is None and len(buffered) > MAX_LINE:
                        head = bytes(buffered[:HEAD])
                    if head is not None:
                        buffered.clear()  # the rest of a line too long is read and let go, never kept
                    scanned = len(buffered)  # each byte is looked at once: a long line costs its length
                    if ended:
                        break
                    try:
                        chunk = os.read(0, 1 << 16)
                    except OSError:
                        chunk = b""  # a stdin that fails ends the input as its end does
                    ended = not chunk
                    buffered += chunk
                if head is not None:
                    del buffered[:at + 1 if at >= 0 else len(buffered)]
                    give(_TooLong(head))
                elif at >= 0:
                    give(bytes(buffered[:at + 1]))
                    del buffered[:at + 1]
                elif buffered:
                    give(bytes(buffered))
                    buffered.clear()
                else:
                    give(None)
                    return

        threading.Thread(target=read, name="majordomus-mcp-stdin", daemon=True).start()
        while True:
            wanted.release()
            raw = await lines.get()
            if raw is None:
                break
            if isinstance(raw, _TooLong):
                await self.write(f"{raw.error()}\n")
                continue
            line, reply = decoded(raw)
            if line is not None:
                reply = refusal(line)
                if reply is None:
                    self._open.update(_ids(line, answers=False))
                    yield line
                    continue
            await self.write(f"{reply}\n")
        # The client closed its end: what it asked before is answered first, then the server ends.
        for _ in range(ANSWER_WAIT * 100):
            if not self._open:
                break
            await asyncio.sleep(0.01)

    async def write(self, text: str) -> None:
        # Every answer, the SDK's own included (its errors' `data` repeats a method name or a URI as the client
        # sent it, and every answer echoes the request's id), through the text rule of every output: in JSON
        # these characters stand only inside strings, where `\uNNNN` is the same value (design §2a).
        text = json_text(text)
        with self._lock:
            self._out.write(text.encode("utf-8", "replace"))
            self._out.flush()
        self._open.difference_update(_ids(text, answers=True))

    async def flush(self) -> None:
        return None


def serve(repo: str | None) -> None:
    """Serve over stdio until the client closes the connection."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build(repo)
    low = server._mcp_server if hasattr(server, "_mcp_server") else server._lowlevel_server

    interrupted = []

    async def main() -> None:
        wire = _Wire()
        try:
            async with stdio_server(stdin=wire, stdout=wire) as (read_stream, write_stream):  # type: ignore[arg-type]
                await low.run(read_stream, write_stream, low.create_initialization_options())
        except BaseException as exc:
            # A Ctrl-C acted on once a tool's write landed (lite.stopsignals) comes back wrapped in the task
            # groups: it is the process's own end (exit 130), not an error of the server to print.
            if not _only_interrupts(exc):
                raise
            interrupted.append(exc)

    anyio.run(main)
    if interrupted:
        raise KeyboardInterrupt


def _only_interrupts(exc: BaseException) -> bool:
    """A KeyboardInterrupt, or an exception group (3.11's, or the backport anyio brings on 3.10) of nothing else."""
    if isinstance(exc, KeyboardInterrupt):
        return True
    inner = getattr(exc, "exceptions", None)
    return isinstance(inner, tuple) and bool(inner) and all(_only_interrupts(e) for e in inner)
