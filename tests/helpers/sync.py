"""What the sync tests share (`from helpers.sync import …`): bare remotes, clones, what git says about
them, and trees built by hand with git plumbing (hash-object, update-index on a temporary index,
write-tree, commit-tree, update-ref)."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

from helpers import events_named, git, ledger_events, run_here, snapshot, state_dir

FORMAT_1 = b"majordomus-state 1\n"
FORMAT_2 = b"majordomus-state 2\n"
# Its own words: test_sync.py forges "Keep the cache." in a pulled record.
HANDOFF = "## State\nLogin works.\n\n## Decisions\nKeep the cache.\n\n## Open items\nNone.\n\n## Next actions\nShip."


def clone(tmp_path: Path, remote: Path, name: str) -> Path:
    path = tmp_path / name
    git(tmp_path, "clone", "-q", str(remote), str(path))
    return path


def machine_id(repo: Path) -> str:
    return (state_dir(repo) / "machine-id").read_text().strip()


def machine_ref(repo: Path) -> str:
    return f"refs/majordomus/machines/{machine_id(repo)}"


def remote_refs(remote: Path) -> list[str]:
    out = git(remote, "for-each-ref", "--format=%(refname)")
    return sorted(out.splitlines())


def remote_files(remote: Path, ref: str) -> list[str]:
    return sorted(git(remote, "ls-tree", "-r", "--name-only", ref).splitlines())


def layout_path(directory: str, name: str) -> str:
    """Where design §13 (format 2) puts a record: DIR/YYYY-MM/XX/NAME, XX the first two hex of its digest."""
    stamp, digest = name[:8], name.rsplit("--", 1)[1][:16]
    return f"{directory}/{stamp[:4]}-{stamp[4:6]}/{digest[:2]}/{name}"


def record_files(remote: Path, ref: str, directory: str) -> list[str]:
    """Names of the records of `directory` on a ref (any depth)."""
    return sorted(p.rsplit("/", 1)[1] for p in remote_files(remote, ref) if p.startswith(directory + "/"))


def events(repo: Path, name: str | None = None) -> list[dict[str, Any]]:
    """The ledger's events (conftest's strict reader), only those called `name` when it is given."""
    return ledger_events(repo) if name is None else events_named(repo, name)


def git_view(repo: Path) -> dict[str, Any]:
    """Everything of a clone that sync must never touch: HEAD, index, branches, tags, the work tree."""
    index = repo / ".git" / "index"
    work = {k: v for k, v in snapshot(repo).items() if not (k.startswith(".ai/local") or k == ".ai/")}
    return {
        "head": git(repo, "rev-parse", "HEAD"),
        "symbolic": git(repo, "symbolic-ref", "-q", "HEAD"),
        "index": hashlib.sha256(index.read_bytes()).hexdigest() if index.exists() else None,
        "status": git(repo, "--no-optional-locks", "status", "--porcelain=v1", "--untracked-files=all"),  # looks only
        "refs": git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags",
                    "refs/remotes"),
        "work": work,
    }


def write_handoff(repo: Path, body: str = HANDOFF) -> Path:
    """`majordomus handoff` in `repo` (design §7's whole path), in this process so that freezegun applies; it
    must succeed. The record it printed."""
    result = run_here("handoff", cwd=repo, input=body)
    assert result.returncode == 0, result.stderr
    return repo / result.stdout.decode().strip()


def both_resume(cli: Any, repo: Path, b: Path, first: str, second: str) -> None:
    """t1 handed off on `repo` and synced to its clone `b`; then `repo` resumes it at `first`, `b` at
    `second`, neither pulling in between: two claims, each unseen by the other machine."""
    from freezegun import freeze_time

    with freeze_time("2026-03-01T09:00:00Z"):
        assert cli("task", "start", "t1").exit_code == 0
        write_handoff(repo)
    assert cli("sync", "push").exit_code == 0
    assert cli("sync", "pull", cwd=b).exit_code == 0
    with freeze_time(first):
        assert cli("task", "resume", "t1").exit_code == 0
    with freeze_time(second):
        assert cli("task", "resume", "t1", cwd=b).exit_code == 0


def _git_in(cwd: Path, *args: str, input: bytes | None = None, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True, check=True,
                          env=dict(os.environ, **(env or {})))
    return done.stdout.decode().strip()


def hash_blob(repo: Path, data: bytes) -> str:
    return _git_in(repo, "hash-object", "-w", "--stdin", input=data)


def build_tree(repo: Path, files: dict[str, bytes | tuple[str, str]], tmp: Path) -> str:
    """A tree of `files` (path -> content, or path -> (mode, object id)) written with update-index on a
    temporary index and write-tree: the plumbing anyone who can push could use."""
    index = tmp / f"index-{os.getpid()}-{len(files)}-{hashlib.sha1(repr(sorted(files)).encode()).hexdigest()[:8]}"
    env = {"GIT_INDEX_FILE": str(index)}
    for path, content in files.items():
        mode, oid = content if isinstance(content, tuple) else ("100644", hash_blob(repo, content))
        _git_in(repo, "update-index", "--add", "--cacheinfo", f"{mode},{oid},{path}", env=env)
    tree = _git_in(repo, "write-tree", env=env)
    index.unlink()
    return tree


def commit_tree(repo: Path, tree: str, parents: list[str] | None = None, message: str = "by hand") -> str:
    args = ["commit-tree", tree, "-m", message]
    for parent in parents or []:
        args += ["-p", parent]
    return _git_in(repo, *args)


def tree_files(repo: Path, ref: str) -> dict[str, tuple[str, str]]:
    """Every blob of a ref's tree: path -> (mode, object id)."""
    out: dict[str, tuple[str, str]] = {}
    for line in git(repo, "ls-tree", "-r", "-z", ref).split("\0"):
        if line:
            meta, path = line.split("\t", 1)
            mode, _kind, oid = meta.split()
            out[path] = (mode, oid)
    return out


def rewrite_ref(remote: Path, ref: str, change: dict[str, bytes | None], tmp: Path, message: str = "tampered") -> str:
    """Commit a changed tree on a ref of the remote, as someone with write access to it could."""
    parent = git(remote, "rev-parse", ref)
    files: dict[str, bytes | tuple[str, str]] = dict(tree_files(remote, ref))
    for path, data in change.items():
        if data is None:
            files.pop(path, None)
        else:
            files[path] = data
    commit = commit_tree(remote, build_tree(remote, files, tmp), [parent], message)
    git(remote, "update-ref", ref, commit)
    return commit


def read_remote(remote: Path, ref: str, path: str) -> bytes:
    return subprocess.run(["git", "cat-file", "blob", f"{ref}:{path}"], cwd=remote, check=True,
                          capture_output=True).stdout
