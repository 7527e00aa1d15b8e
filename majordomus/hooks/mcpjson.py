"""`hooks install --runtime claude --mcp` (design §19): the MCP server in the project's `.mcp.json`.

The same discipline as the hook installers in `agents` (whose file helpers and receipts this reuses):
merged into whatever the file holds, idempotent, and uninstall removes exactly what install added — the
file's earlier bytes when it was not edited since, else only our entry. An entry named `majordomus` that
majordomus did not write is left alone.
"""

from __future__ import annotations

import os
from typing import Any

from majordomus.hooks import installers
from majordomus.store import files

NAME = "majordomus"
ENTRY = {"command": "majordomus", "args": ["mcp"]}
RECEIPT = "mcp"


def path_of(ws: Any) -> str:
    return os.path.join(ws.worktree, ".mcp.json")


def _servers(doc: dict[str, Any], path: str) -> dict[str, Any]:
    return installers.table_of(doc, "mcpServers", path)


def check(ws: Any) -> None:
    """Refuse now what `install` would refuse (a link, bad JSON), before anything else is installed."""
    path = path_of(ws)
    _servers(installers._parse(installers._read(path), path), path)


def install(ws: Any) -> installers.Result:
    path = path_of(ws)
    before = installers._read(path)
    doc = installers._parse(before, path)
    servers = _servers(doc, path)
    if NAME in servers:
        return installers.Result(path, [], "already" if servers[NAME] == ENTRY else "kept")
    doc.setdefault("mcpServers", {})[NAME] = dict(ENTRY)
    after = installers._dump(doc, installers._style(before))
    receipt = installers.load_receipt(ws, RECEIPT, path)
    if receipt is None or receipt.get("after_sha256") != installers._digest(before):
        receipt = {"version": 1, "path": path, "exact": True,
                   "before": None if before is None else before.decode("utf-8"), "added": [NAME]}
    receipt["after_sha256"] = installers._digest(after)
    installers.write_with_receipt(ws, RECEIPT, path, receipt, after)
    return installers.Result(path, [f"mcpServers.{NAME}"], "added")


def uninstall(ws: Any) -> installers.Result:
    path = path_of(ws)
    current = installers._read(path)
    receipt = installers.load_receipt(ws, RECEIPT, path)
    if current is None:
        installers.drop_receipt(ws, RECEIPT, path)
        return installers.Result(path, [], "absent")
    doc = installers._parse(current, path)
    servers = _servers(doc, path)
    if servers.get(NAME) != ENTRY:
        installers.drop_receipt(ws, RECEIPT, path)
        return installers.Result(path, [], "absent")  # not there, or not ours: left as it is
    rest = {**doc, "mcpServers": {k: v for k, v in servers.items() if k != NAME}}
    if (receipt is not None and receipt.get("exact") and receipt.get("after_sha256") == installers._digest(current)
            and installers.restores(receipt.get("before"), rest)):
        previous = receipt.get("before")
        if previous is None:
            files.remove(path)
        else:
            installers.write_file(path, previous.encode("utf-8"), installers._mode(path))
        installers.drop_receipt(ws, RECEIPT, path)
        return installers.Result(path, [f"mcpServers.{NAME}"], "restored")
    del servers[NAME]
    if not servers:
        del doc["mcpServers"]
    installers.write_file(path, installers._dump(doc, installers._style(current)), installers._mode(path))
    installers.drop_receipt(ws, RECEIPT, path)
    return installers.Result(path, [f"mcpServers.{NAME}"], "removed")
