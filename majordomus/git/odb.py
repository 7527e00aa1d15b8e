"""Sync's objects (SPEC §13) through pygit2: blobs, two-level trees, commits, and one ref of majordomus's
own moved by compare-and-swap. Never HEAD, the index, the work tree or any branch."""

from __future__ import annotations

from dataclasses import dataclass

import pygit2

from majordomus.errors import MajordomusError
from majordomus.git.query import Repo, config_value

BLOB_MODES = (pygit2.enums.FileMode.BLOB, pygit2.enums.FileMode.BLOB_EXECUTABLE)
ZERO_OID = "0" * 40


@dataclass(frozen=True)
class Entry:
    """One file of a two-level tree: `dir/name` (or a top-level `name`), its blob id and file mode."""

    oid: str
    mode: int

    @property
    def is_blob(self) -> bool:
        return self.mode in BLOB_MODES


def ref_target(repo: Repo, name: str) -> str | None:
    try:
        ref = repo.handle.references[name]
    except (KeyError, pygit2.InvalidSpecError):
        return None
    target = ref.resolve().target
    return str(target) if target is not None else None


def update_ref(repo: Repo, name: str, new: str, old: str | None, message: str) -> None:
    """Move `name` to `new` only if it still points at `old` (None: must not exist), atomically (git's CAS)."""
    import subprocess

    args = ["git", "update-ref", "-m", message, name, new, old or ZERO_OID]
    done = subprocess.run(args, cwd=repo.worktree, capture_output=True, text=True)
    if done.returncode != 0:
        raise MajordomusError(
            f"{name} moved while majordomus was updating it: {done.stderr.strip()}",
            "another sync ran at the same time; run the command again",
        )


def read_tree(repo: Repo, commit: str) -> dict[str, Entry]:
    """Files of a commit's tree down to one directory level, keyed `dir/name`; deeper levels are ignored."""
    handle = repo.handle
    out: dict[str, Entry] = {}
    for top in handle[commit].peel(pygit2.Tree):
        if top.type_str == "tree":
            for sub in handle[top.id]:
                out[f"{top.name}/{sub.name}"] = Entry(str(sub.id), int(sub.filemode))
        else:
            out[top.name] = Entry(str(top.id), int(top.filemode))
    return out


def tree_id(repo: Repo, commit: str) -> str:
    return str(repo.handle[commit].peel(pygit2.Tree).id)


def read_blob(repo: Repo, oid: str) -> bytes:
    obj = repo.handle[oid]
    if not isinstance(obj, pygit2.Blob):
        raise ValueError(f"{oid} is not a blob")
    return bytes(obj.data)


def blob_id(data: bytes) -> str:
    """The id `data` has as a blob, without writing anything."""
    return str(pygit2.hash(data))


def write_blob(repo: Repo, data: bytes) -> str:
    return str(repo.handle.create_blob(data))


def write_tree(repo: Repo, entries: dict[str, Entry]) -> str:
    """Build the two-level tree `read_tree` reads, from blobs already in the object database."""
    handle = repo.handle
    groups: dict[str, dict[str, Entry]] = {}
    top = handle.TreeBuilder()
    for path, entry in entries.items():
        directory, _, name = path.rpartition("/")
        if directory:
            groups.setdefault(directory, {})[name] = entry
        else:
            top.insert(name, pygit2.Oid(hex=entry.oid), entry.mode)
    for directory, files in groups.items():
        builder = handle.TreeBuilder()
        for name, entry in files.items():
            builder.insert(name, pygit2.Oid(hex=entry.oid), entry.mode)
        top.insert(directory, builder.write(), pygit2.enums.FileMode.TREE)
    return str(top.write())


def write_commit(repo: Repo, tree: str, parents: list[str], message: str) -> str:
    """A commit object that no ref points at yet (the caller moves its ref with `update_ref`)."""
    handle = repo.handle
    try:
        signature = handle.default_signature
    except (KeyError, pygit2.GitError):
        signature = pygit2.Signature("majordomus", "majordomus@localhost")
    oid = handle.create_commit(None, signature, signature, message, pygit2.Oid(hex=tree),
                               [pygit2.Oid(hex=p) for p in parents])
    return str(oid)


def merge_base(repo: Repo, a: str, b: str) -> str | None:
    found = repo.handle.merge_base(pygit2.Oid(hex=a), pygit2.Oid(hex=b))
    return str(found) if found is not None else None


def contains(repo: Repo, descendant: str, ancestor: str) -> bool:
    """True when `ancestor` is `descendant` or one of its ancestors."""
    if descendant == ancestor:
        return True
    return bool(repo.handle.descendant_of(pygit2.Oid(hex=descendant), pygit2.Oid(hex=ancestor)))


def remote_names(repo: Repo) -> list[str]:
    try:
        return list(repo.handle.remotes.names())
    except pygit2.GitError:
        return []


def upstream_remote(repo: Repo) -> str | None:
    """The remote of this branch's upstream (`branch.NAME.remote`), unless it is `.` (a local upstream)."""
    branch = repo.branch
    if branch is None:
        return None
    remote = config_value(repo, f"branch.{branch}.remote")
    return remote if remote and remote != "." else None
