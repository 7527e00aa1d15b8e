"""Sync's objects (design §13) through pygit2: blobs, trees read and edited a subtree at a time, commits, and
majordomus's own refs moved by compare-and-swap. Never HEAD, the index, the work tree or any branch.

Trees are handed out as `TreeView`s: a walk that stops at the first subtree whose id it has already seen
is what keeps a sync proportional to what changed, not to what is stored."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pygit2

from majordomus.errors import BUSY, EnvironmentProblem, MajordomusError
from majordomus.git import run
from majordomus.git.query import Repo, config_value
from majordomus.lite import textrules

BLOB_MODES = (int(pygit2.enums.FileMode.BLOB), int(pygit2.enums.FileMode.BLOB_EXECUTABLE))
BLOB = int(pygit2.enums.FileMode.BLOB)
TREE = int(pygit2.enums.FileMode.TREE)
ZERO_OID = "0" * 40

# libgit2 re-parses a tree over 4 KiB at every lookup; sync walks the same trees many times.
pygit2.settings.cache_object_limit(pygit2.enums.ObjectType.TREE, 1 << 20)


@dataclass(frozen=True)
class Entry:
    """A tree entry: its object id and file mode."""

    oid: str
    mode: int

    @property
    def is_blob(self) -> bool:
        return self.mode in BLOB_MODES

    @property
    def is_tree(self) -> bool:
        return self.mode == TREE


class TreeView:
    """A tree object, read lazily. Entry names that are not UTF-8 come back as None (never a path)."""

    __slots__ = ("_tree", "repo")

    def __init__(self, repo: Repo, tree: pygit2.Tree) -> None:
        self.repo = repo
        self._tree = tree

    @property
    def oid(self) -> str:
        return str(self._tree.id)

    def __len__(self) -> int:
        return len(self._tree)

    def __contains__(self, name: str) -> bool:
        return name in self._tree

    def entries(self) -> Iterator[tuple[str | None, Entry, bytes]]:
        """(name or None, entry, raw name) for every entry, in git's order."""
        for item in self._tree:
            raw = item.raw_name or b""
            try:
                name: str | None = raw.decode("utf-8")
            except UnicodeDecodeError:
                name = None
            yield name, Entry(str(item.id), int(item.filemode)), raw

    def get(self, name: str) -> Entry | None:
        try:
            item = self._tree[name]
        except (KeyError, ValueError, TypeError):
            return None
        return Entry(str(item.id), int(item.filemode))

    def sub(self, name: str) -> TreeView | None:
        """The subtree `name`, or None when absent or not a tree."""
        try:
            item = self._tree[name]
        except (KeyError, ValueError, TypeError):
            return None
        return TreeView(self.repo, item) if isinstance(item, pygit2.Tree) else None


def tree(repo: Repo, oid: str) -> TreeView | None:
    obj = _get(repo, oid)
    return TreeView(repo, obj) if isinstance(obj, pygit2.Tree) else None


_LOOSE_CHECKED = 1 << 20  # commits and trees of the state are far smaller: a larger loose file is not looked at


def _get(repo: Repo, oid: str) -> Any:
    """The commit or tree `oid` through pygit2, or None when it is not here. A loose object is looked at
    first: libgit2 spins for ever, deaf to every signal, on one whose zlib stream was cut short (a crash or
    a power loss while git wrote it), where git refuses it at once. A damaged one is exit 12 naming it."""
    import zlib

    from majordomus.lite import safeio

    path = os.path.join(repo.common_dir, "objects", oid[:2], oid[2:])
    try:
        size = os.lstat(path).st_size
    except OSError:
        size = None  # packed (or not here): libgit2 reads packs as git does
    # Through the one safe reader: a FIFO or a link there is refused (exit 12) before anything waits on it.
    data = safeio.read(path, _LOOSE_CHECKED) if size is not None and size <= _LOOSE_CHECKED else None
    if data is not None:
        inflate = zlib.decompressobj()
        try:
            inflate.decompress(data)
            whole = inflate.eof
        except zlib.error:
            whole = False
        if not whole:
            raise EnvironmentProblem(f"cannot read git object {oid}: its file {path} is cut short or not zlib data",
                                     "a crash while git wrote it? remove it "
                                     f"(`rm {textrules.shell_quoted(path)}`) and fetch it again "
                                     "from the remote it was pushed to (`majordomus sync pull`), then run the same "
                                     "command again; `git fsck` says what else is damaged")
    try:
        return repo.handle.get(oid)
    except (ValueError, KeyError):
        return None
    except pygit2.GitError as exc:
        raise _damaged(repo, oid, str(exc)) from None


def _damaged(repo: Repo, oid: str, why: str) -> EnvironmentProblem:
    where = getattr(repo, "common_dir", "the repository")
    return EnvironmentProblem(f"cannot read git object {oid} in {where}: {why}",
                              "the repository is damaged there (a crash while git wrote it?): `git fsck` says what "
                              "is, then run the same command again")


def kind(repo: Repo, oid: str) -> str | None:
    """`commit`, `tree`, `blob`, `tag`, or None when the object is not here."""
    obj = _get(repo, oid)
    return obj.type_str if obj is not None else None


@dataclass(frozen=True)
class Commit:
    oid: str
    tree: str
    parents: tuple[str, ...]
    time: int  # committer time, seconds since the epoch
    message: str


def commit(repo: Repo, oid: str) -> Commit | None:
    """The commit `oid`, or None when it is missing or another kind of object."""
    obj = _get(repo, oid)
    if not isinstance(obj, pygit2.Commit):
        return None
    return Commit(str(obj.id), str(obj.tree_id), tuple(str(p) for p in obj.parent_ids), int(obj.commit_time),
                  obj.message)


def ref_target(repo: Repo, name: str) -> str | None:
    try:
        ref = repo.handle.references[name]
        target = ref.resolve().target
    except (KeyError, pygit2.InvalidSpecError, ValueError):
        return None
    except pygit2.GitError as exc:  # a ref file that is not one (a crash while git wrote it)
        raise EnvironmentProblem(f"cannot read the ref {name}: {exc}",
                                 f"it is damaged: `git update-ref -d {name}` removes it (the next `sync push` "
                                 "writes this machine's again; a pull fetches the others'), then run the command "
                                 "again") from None
    return str(target) if isinstance(target, pygit2.Oid) else None


def refs_under(repo: Repo, prefix: str) -> dict[str, str]:
    """Every direct ref whose name starts with `prefix`, with the object it points at."""
    found: dict[str, str] = {}
    for name in repo.handle.references:
        if name.startswith(prefix):
            target = ref_target(repo, name)
            if target is not None:
                found[name] = target
    return found


def _git_ref(repo: Repo, *args: str) -> run.Ran:
    return run.run(repo, *args)


def update_ref(repo: Repo, name: str, new: str, old: str | None, message: str) -> None:
    """Move `name` to `new` only if it still points at `old` (None: must not exist), atomically (git's CAS)."""
    done = _git_ref(repo, "update-ref", "-m", message, name, new, old or ZERO_OID)
    if done.returncode != 0:
        reason = done.reason()
        if "but expected" in reason or "already exists" in reason or "unable to resolve" in reason:
            raise MajordomusError(  # git's compare-and-swap lost: only that is a race (exit 75)
                f"{name} moved while majordomus was updating it: {reason}",
                "another sync ran at the same time; run the command again", code=BUSY)
        stopped = f"git was stopped by signal {-done.returncode}: run the same command again" \
            if done.returncode < 0 else None
        raise EnvironmentProblem(f"cannot update {name}: {reason}", run.lock_left(done.err) or stopped or
                                 "check the disk and the repository (`git fsck`), then run the command again")


def _objects_failed(repo: Repo, exc: Exception) -> EnvironmentProblem:
    """Writing into git's object database failed (a full or failing disk): exit 12, never a traceback."""
    where = getattr(repo, "common_dir", "the repository")
    return EnvironmentProblem(f"cannot write git objects into {where}: {exc}",
                              "free space on its file system (or check the disk); if there is room, `git fsck` "
                              "says whether an object is missing or damaged; then run the command again")


def delete_ref(repo: Repo, name: str, old: str) -> None:
    """Delete `name` if it still points at `old`; a ref already gone is fine."""
    _git_ref(repo, "update-ref", "-d", name, old)


def blob_size(repo: Repo, oid: str) -> int | None:
    """A blob's size from its header, without inflating it; None when it is not a blob here."""
    try:
        kind_, size = repo.handle.odb.read_header(pygit2.Oid(hex=oid))
    except (KeyError, ValueError, pygit2.GitError):
        return None
    return int(size) if int(kind_) == int(pygit2.enums.ObjectType.BLOB) else None


def read_blob(repo: Repo, oid: str) -> bytes:
    obj = repo.handle.get(oid)
    if not isinstance(obj, pygit2.Blob):
        raise ValueError(f"{oid} is not a blob")
    return bytes(obj.data)


def blob_id(data: bytes) -> str:
    """The id `data` has as a blob, without writing anything."""
    return str(pygit2.hash(data))


def write_blob(repo: Repo, data: bytes) -> str:
    try:
        return str(repo.handle.create_blob(data))
    except (OSError, pygit2.GitError) as exc:  # a full disk can come back as any libgit2 error: its last one
        raise _objects_failed(repo, exc) from None


class TreeWriter:
    """Edits of a tree (`put` a blob or subtree at a path); `write` rebuilds only the trees on edited paths
    and reuses every other subtree as it is."""

    def __init__(self, repo: Repo, base: str | None) -> None:
        self.repo = repo
        self.base = base
        self._edits: dict[str, object] = {}  # name -> Entry, or a nested dict of edits

    def put(self, path: tuple[str, ...], entry: Entry) -> None:
        node = self._edits
        for part in path[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[path[-1]] = entry

    @property
    def changed(self) -> bool:
        return bool(self._edits)

    def write(self) -> str:
        return self._write(self.base, self._edits, "")

    def _write(self, base: str | None, edits: dict[str, object], where: str) -> str:
        handle = self.repo.handle
        base_tree = handle.get(base) if base else None
        builder = handle.TreeBuilder(base_tree) if isinstance(base_tree, pygit2.Tree) else handle.TreeBuilder()
        for name, edit in edits.items():
            if isinstance(edit, Entry):
                _insert(builder, where + name, edit.oid, edit.mode)
                continue
            existing = builder.get(name)
            sub = str(existing.id) if existing is not None and existing.filemode == TREE else None
            _insert(builder, where + name, self._write(sub, edit, where + name + "/"), TREE)  # type: ignore[arg-type]
        try:
            return str(builder.write())
        except pygit2.GitError as exc:
            raise MissingObject(where or "/", str(exc)) from None
        except OSError as exc:
            raise _objects_failed(self.repo, exc) from None


class MissingObject(EnvironmentProblem):
    """A tree being written names an object this repository's database does not hold (libgit2 checks every
    entry): exit 12, naming the entry, never a traceback."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"cannot write the synced tree: its entry `{path}` names an object this repository "
                         f"does not have ({reason})",
                         "run the command again (another sync may have been pruning objects); if it "
                         "persists, run `git fsck` and `majordomus doctor`")


def _insert(builder: pygit2.TreeBuilder, path: str, oid: str, mode: int) -> None:
    try:
        builder.insert(path.rsplit("/", 1)[-1], pygit2.Oid(hex=oid), mode)
    except pygit2.GitError as exc:
        raise MissingObject(path, str(exc)) from None


def write_commit(repo: Repo, tree_oid: str, parents: list[str], message: str) -> str:
    """A commit object that no ref points at yet (the caller moves its ref with `update_ref`)."""
    handle = repo.handle
    try:
        signature = handle.default_signature
    except (KeyError, pygit2.GitError):
        signature = pygit2.Signature("majordomus", "majordomus@localhost")
    try:
        oid = handle.create_commit(None, signature, signature, message, pygit2.Oid(hex=tree_oid),
                                   [pygit2.Oid(hex=p) for p in parents])
    except (OSError, pygit2.GitError) as exc:
        raise _objects_failed(repo, exc) from None
    return str(oid)


def contains(repo: Repo, descendant: str, ancestor: str) -> bool:
    """True when `ancestor` is `descendant` or one of its ancestors."""
    if descendant == ancestor:
        return True
    try:
        return bool(repo.handle.descendant_of(pygit2.Oid(hex=descendant), pygit2.Oid(hex=ancestor)))
    except (KeyError, ValueError, pygit2.GitError):
        return False


def new_blobs(repo: Repo, new: str, old: str | None) -> Iterator[str]:
    """The path of every blob that commit `new`'s tree holds and commit `old`'s did not hold as it is
    (added or changed); every blob of `new` when `old` is None or not here."""
    mine = repo.handle.get(new)
    theirs = repo.handle.get(old) if old is not None else None
    if not isinstance(mine, pygit2.Commit):
        return
    diff = (theirs.tree.diff_to_tree(mine.tree) if isinstance(theirs, pygit2.Commit)
            else mine.tree.diff_to_tree(swap=True))
    for delta in diff.deltas:
        if delta.status in (pygit2.enums.DeltaStatus.ADDED, pygit2.enums.DeltaStatus.MODIFIED):
            yield delta.new_file.path


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
