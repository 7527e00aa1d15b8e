"""Helpers for the sync tests: bare remotes, clones, and what git says about them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from conftest import git, snapshot, state_dir


def clone(tmp_path: Path, remote: Path, name: str) -> Path:
    path = tmp_path / name
    git(tmp_path, "clone", "-q", str(remote), str(path))
    return path


def remote_refs(remote: Path) -> list[str]:
    out = git(remote, "for-each-ref", "--format=%(refname)")
    return sorted(out.splitlines())


def remote_files(remote: Path, ref: str = "refs/majordomus/state") -> list[str]:
    return sorted(git(remote, "ls-tree", "-r", "--name-only", ref).splitlines())


def events(repo: Path, name: str | None = None) -> list[dict[str, Any]]:
    ledger = state_dir(repo) / "ledger.jsonl"
    if not ledger.exists():
        return []
    found = [json.loads(line) for line in ledger.read_text().splitlines() if line.strip()]
    return [e for e in found if name is None or e["event"] == name]


def git_view(repo: Path) -> dict[str, Any]:
    """Everything of a clone that sync must never touch: HEAD, index, branches, tags, the work tree."""
    index = repo / ".git" / "index"
    # .ai/local is the state directory sync writes to (ignored by git); everything else is the work tree.
    work = {k: v for k, v in snapshot(repo).items() if not (k.startswith(".ai/local") or k == ".ai/")}
    return {
        "head": git(repo, "rev-parse", "HEAD"),
        "symbolic": git(repo, "symbolic-ref", "-q", "HEAD"),
        "index": hashlib.sha256(index.read_bytes()).hexdigest() if index.exists() else None,
        "status": git(repo, "status", "--porcelain=v1", "--untracked-files=all"),
        "refs": git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags",
                    "refs/remotes"),
        "work": work,
    }


def write_handoff(repo: Path, body: str) -> Path:
    """A handoff record stored the way `majordomus handoff` stores one (identity helper, exclusive link)."""
    from majordomus import identity, lifecycle
    from majordomus import checkpoint, clock, tasks
    from majordomus.store import files as store
    from majordomus.workspace import Workspace

    ws = Workspace.open(str(repo))
    task = tasks.active(ws)
    at = clock.iso(clock.now())
    ws.ensure_state("handoffs", "cache")
    fields = identity.fields(ws, "handoff", task, at)
    path, _created, digest = checkpoint.store_record(ws, ws.paths.handoffs, fields, body)
    rel = ws.paths.relative(path)
    with store.locked(ws.paths.lock):
        lifecycle.set_handed_off(ws, tasks.load(ws, task.id), rel, at)
    ws.event("task.handoff", task.id, at, path=rel, sha256=digest)
    return Path(path)


def rewrite_remote(remote: Path, change: dict[str, bytes | None], message: str = "tampered") -> str:
    """Commit a changed tree on the remote's state ref, as someone with write access to it could."""
    import pygit2

    repo = pygit2.Repository(str(remote))
    parent = repo.references["refs/majordomus/state"].target
    files: dict[str, tuple[Any, int]] = {}
    for top in repo[parent].tree:
        if top.type_str == "tree":
            for sub in repo[top.id]:
                files[f"{top.name}/{sub.name}"] = (sub.id, sub.filemode)
        else:
            files[top.name] = (top.id, top.filemode)
    for path, data in change.items():
        if data is None:
            files.pop(path, None)
        else:
            files[path] = (repo.create_blob(data), pygit2.enums.FileMode.BLOB)
    groups: dict[str, Any] = {}
    root = repo.TreeBuilder()
    for path, (oid, mode) in files.items():
        directory, _, name = path.rpartition("/")
        if directory:
            groups.setdefault(directory, repo.TreeBuilder()).insert(name, oid, mode)
        else:
            root.insert(name, oid, mode)
    for directory, builder in groups.items():
        root.insert(directory, builder.write(), pygit2.enums.FileMode.TREE)
    sig = pygit2.Signature("Mallory", "mallory@example.com")
    commit = repo.create_commit("refs/majordomus/state", sig, sig, message, root.write(), [parent])
    return str(commit)


def read_remote(remote: Path, path: str) -> bytes:
    import subprocess

    return subprocess.run(["git", "cat-file", "blob", f"refs/majordomus/state:{path}"], cwd=remote,
                          check=True, capture_output=True).stdout
