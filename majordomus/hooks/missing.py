"""Hooks that `hooks install` wrote and that no longer run majordomus (doctor's `hooks.missing`, design §12):
a hook manager regenerated its directory (Husky's `npx husky`), or someone edited the hook out. Above every
installer (Claude Code, Codex, git, Gemini CLI, Copilot CLI), so that none of them imports another.
"""

from __future__ import annotations

import os

from majordomus.errors import EnvironmentProblem
from majordomus.hooks import copilot, gemini, githook, installers
from majordomus.lite import jsonbound, safeio, statepaths

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def missing(ws: Any) -> list[tuple[str, str, str, str]]:
    """(runtime, path, message, hint) of each installed hook that went missing."""
    out = [(runtime, path, f"the {runtime} hook that `hooks install` wrote no longer runs majordomus{why}",
            f"run `majordomus hooks install --runtime {runtime}` again to keep it, or `majordomus hooks uninstall "
            f"--runtime {runtime}` to finish removing it (an uninstall that stopped before its receipt)")
           for runtime, path, why in _receipted(ws)]
    for module in (gemini, copilot):
        for gone in module.missing(ws):
            message, hint = gone.message(ws.display(gone.path), module.NAME)
            out.append((module.NAME, gone.path, message, hint))
    return out


def _receipted(ws: Any) -> list[tuple[str, str, str]]:
    """(runtime, path, why when it is not the file) of each hook an install receipt lists that no longer runs
    majordomus: a hook manager regenerated its directory (Husky's `npx husky`), someone edited it out, or
    git runs no hook at all (doctor's `hooks.missing`)."""
    directory = ws.paths.receipts
    try:
        if not statepaths.readable_dir(ws.paths, directory):
            return []
        names = sorted(n for n in os.listdir(directory) if n.endswith(".json"))
    except (OSError, EnvironmentProblem):  # a link where `hooks/` belongs: doctor's walk names it
        return []
    out = []
    disabled: list[bool] = []  # asked of git once, and only when a git hook was installed
    for name in names:
        runtime = name.split("-", 1)[0]
        try:
            receipt = jsonbound.loads(safeio.read(os.path.join(directory, name), installers.SETTINGS_MAX_BYTES * 2 + 4096))
        except (OSError, ValueError, safeio.EnvironmentProblem):
            continue
        path = receipt.get("path") if isinstance(receipt, dict) else None
        if not isinstance(path, str) or runtime not in ("git", "claude", "codex"):
            continue
        if runtime == "git":
            if not disabled:
                from majordomus.git import status

                disabled.append(status.hooks_disabled(ws.place))
            if disabled[0]:
                out.append((runtime, path, ": core.hooksPath is set to the empty string, and git runs no hook then"))
                continue
            runs = githook.runs_majordomus(path)
        else:
            try:
                runs = b"majordomus hook session-start" in (installers._read(path) or b"")
            except (OSError, EnvironmentProblem):
                runs = False
        if not runs:
            out.append((runtime, path, ""))
    return out
