"""`majordomus init`: `.ai/config.yaml` and `.ai/profiles/` from the packaged template, never overwriting."""

from __future__ import annotations

import os
from importlib import resources

from majordomus.errors import EnvironmentProblem
from majordomus.store import files, paths
from majordomus.workspace import Workspace


def _template_files() -> list[tuple[str, bytes]]:
    root = resources.files("majordomus").joinpath("templates").joinpath("ai")
    out = [("config.yaml", root.joinpath("config.yaml").read_bytes())]
    for entry in sorted(root.joinpath("profiles").iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".md"):
            out.append((os.path.join("profiles", entry.name), entry.read_bytes()))
    return out


def init(ws: Workspace) -> list[tuple[str, str]]:
    """Create what is missing; returns (path, 'created' | 'kept') for each template file."""
    base = ws.paths.config_root or ws.worktree
    ai = os.path.join(base, ".ai")
    results = []
    try:
        paths.make_parent(os.path.join(ai, "profiles"))  # never group- or world-writable (design §2a)
        for rel, data in _template_files():
            target = os.path.join(ai, rel)
            # Linked in whole or not at all (never a torn file that a retry would keep), never replacing.
            _, created = files.link_in(os.path.dirname(target), os.path.basename(target), data, mode=0o644)
            results.append((target, "created" if created else "kept"))
    except OSError as exc:
        raise EnvironmentProblem(f"cannot create {ai}: {exc.strerror}", "check the directory's permissions") from exc
    paths.ensure(ws.paths)
    return results
