"""Everything majordomus asks git, through pygit2. The only module that imports pygit2."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import pygit2

from majordomus.errors import EnvironmentProblem, MajordomusError

_IGNORED = pygit2.enums.FileStatus.IGNORED


@dataclass(frozen=True)
class Identity:
    """What git says about where a record is written; prose never supplies any of it."""

    repo_id: str | None
    worktree: str
    branch: str | None
    head: str | None
    worktree_state: str
    changed_files: list[str] = field(default_factory=list)
    changed_files_omitted: int = 0


@dataclass
class Repo:
    """An opened repository: the worktree we stand in and the main worktree that holds the state."""

    handle: Any  # pygit2.Repository
    worktree: str
    common_dir: str
    main_worktree: str | None  # None when the main worktree is bare

    @property
    def branch(self) -> str | None:
        return current_branch(self.handle)

    def head_oid(self) -> str | None:
        if self.handle.head_is_unborn:
            return None
        return str(self.handle.head.target)


def _strip(path: str) -> str:
    return os.path.normpath(path)


def open_repo(start: str) -> Repo:
    """Discover the repository around `start`; refuse anything that is not a work tree."""
    try:
        found = pygit2.discover_repository(start)
    except (pygit2.GitError, OSError) as exc:
        raise EnvironmentProblem(
            f"cannot read a git repository at {start}: {exc}", "check the directory and its permissions"
        ) from exc
    if found is None:
        raise EnvironmentProblem(
            f"not inside a git work tree: {start}",
            "run majordomus inside a git repository (or pass -C DIR); `git init` makes one",
        )
    try:
        # Opened from `start`, not from `found`: a `.git` file (`git init --separate-git-dir`) names a git
        # directory whose parent is not the work tree; libgit2 gets the work tree right only this way.
        handle = pygit2.Repository(start)
    except pygit2.GitError as exc:
        raise EnvironmentProblem(f"cannot open the git repository at {found}: {exc}", "run `git status` there") from exc
    if handle.workdir is None:
        raise EnvironmentProblem(
            f"not inside a git work tree: {found} is a bare repository",
            "run majordomus inside a worktree of it (`git worktree add`)",
        )
    gitdir = handle.path
    common_dir = gitdir
    try:
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8") as fh:
            common_dir = os.path.join(gitdir, fh.read().strip())
    except FileNotFoundError:
        pass
    common_dir = _strip(common_dir)
    worktree = _strip(handle.workdir)
    if common_dir == _strip(gitdir):
        main_worktree: str | None = worktree
    else:
        main = pygit2.Repository(common_dir)
        main_worktree = None if main.is_bare or main.workdir is None else _strip(main.workdir)
    return Repo(handle=handle, worktree=worktree, common_dir=common_dir, main_worktree=main_worktree)


def current_branch(handle: Any) -> str | None:
    """Short branch name; None when HEAD is detached. Works on an unborn branch."""
    if handle.head_is_detached:
        return None
    target = handle.references["HEAD"].target
    if isinstance(target, str) and target.startswith("refs/heads/"):
        return target[len("refs/heads/"):]
    return None


def changed_files(handle: Any) -> list[str]:
    """Sorted paths git reports as changed, untracked (not ignored) files included."""
    try:
        status = handle.status()
    except pygit2.GitError as exc:
        raise MajordomusError(f"git status failed: {exc}", "run `git status` to see what git says") from exc
    return sorted(path for path, flags in status.items() if flags & ~_IGNORED)


def root_commit(handle: Any, head: str, cache_path: str | None) -> str:
    """Root reached by first parents from `head`, walking only back to the last answer cached."""
    cached_head = cached_root = None
    if cache_path:
        try:
            with open(cache_path, encoding="ascii") as fh:
                cached_head, cached_root = fh.read().split()
        except (OSError, ValueError):
            cached_head = cached_root = None
    if cached_head == head and cached_root:
        return cached_root
    commit = handle[head]
    root = None
    while True:
        oid = str(commit.id)
        if oid == cached_head and cached_root:
            root = cached_root
            break
        parents = commit.parent_ids
        if not parents:
            root = oid
            break
        commit = handle[parents[0]]
    if cache_path:
        from majordomus import store  # a cache, not a record: losing it costs one walk

        store.write_derived(cache_path, f"{head} {root}\n".encode("ascii"))
    return root


def identity(repo: Repo, max_changed_files: int, root_cache: str | None = None) -> Identity:
    """The identity of a record written now in `repo`'s worktree (SPEC §4)."""
    handle = repo.handle
    head = repo.head_oid()
    repo_id = root_commit(handle, head, root_cache) if head else None
    changed = changed_files(handle)
    kept = changed[:max_changed_files]
    return Identity(
        repo_id=repo_id,
        worktree=repo.worktree,
        branch=current_branch(handle),
        head=head,
        worktree_state="dirty" if changed else "clean",
        changed_files=kept,
        changed_files_omitted=len(changed) - len(kept),
    )


def commits_between(repo: Repo, old: str, new: str) -> int | None:
    """How many commits `new` has that `old` lacks; None when either is unknown here."""
    try:
        ahead, _behind = repo.handle.ahead_behind(new, old)
    except (pygit2.GitError, KeyError, ValueError):
        return None
    return int(ahead)


def config_value(repo: Repo, key: str) -> str | None:
    try:
        return str(repo.handle.config[key])
    except (KeyError, pygit2.GitError):
        return None


def hooks_dir(repo: Repo) -> str:
    """The directory git runs hooks from: `core.hooksPath` (relative to the worktree top), else <common>/hooks."""
    configured = config_value(repo, "core.hooksPath")
    if configured:
        path = os.path.expanduser(configured)
        return os.path.normpath(path if os.path.isabs(path) else os.path.join(repo.worktree, path))
    return os.path.join(repo.common_dir, "hooks")


# ---------------------------------------------------------------- object database (sync, SPEC §13)
# These write objects and one ref of majordomus's own; they never touch HEAD, the index, the work tree
# or any branch.

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
def _main_handles(repo: Repo) -> list[Any]:
    """This worktree's repository, and the main worktree's when it is another one (it holds the state)."""
    handles = [repo.handle]
    if repo.main_worktree is not None and repo.main_worktree != repo.worktree:
        try:
            handles.append(pygit2.Repository(repo.main_worktree))
        except pygit2.GitError:
            pass
    return handles


def _index_under(index: Any, prefix: str) -> list[str]:
    # The index is sorted by path: a binary search finds the prefix without walking a large index.
    lo, hi = 0, len(index)
    while lo < hi:
        mid = (lo + hi) // 2
        if index[mid].path < prefix:
            lo = mid + 1
        else:
            hi = mid
    found = []
    while lo < len(index):
        path = index[lo].path
        if not path.startswith(prefix):
            break
        found.append(path)
        lo += 1
    return found


def _tree_under(handle: Any, prefix: str) -> list[str]:
    if handle.head_is_unborn:
        return []
    try:
        entry = handle.head.peel(pygit2.Commit).tree[prefix.rstrip("/")]
    except (KeyError, pygit2.GitError):
        return []
    if entry.type_str != "tree":
        return [prefix.rstrip("/")]
    found = []
    stack = [(prefix, handle[entry.id])]
    while stack:
        base, tree = stack.pop()
        for item in tree:
            if item.type_str == "tree":
                stack.append((f"{base}{item.name}/", handle[item.id]))
            else:
                found.append(base + item.name)
    return found


def held_under(repo: Repo, prefix: str) -> dict[str, str]:
    """Paths under `prefix` (worktree-relative, ending in `/`) that git holds, in this worktree and the main one.

    The value says how: `staged` (in the index, not in HEAD), `tracked` (index and HEAD), or `committed`
    (in HEAD while its removal is staged)."""
    held: dict[str, str] = {}
    for handle in _main_handles(repo):
        try:
            indexed = set(_index_under(handle.index, prefix))
        except pygit2.GitError as exc:
            raise MajordomusError(f"cannot read the git index: {exc}", "run `git status` to see what git says") from exc
        committed = set(_tree_under(handle, prefix))
        for path in indexed | committed:
            how = "tracked" if path in indexed and path in committed else ("staged" if path in indexed else "committed")
            held.setdefault(path, how)
    return held


def is_ignored(repo: Repo, path: str) -> bool:
    """Whether git ignores `path` (relative to the main worktree, or this one when the main is bare)."""
    handle = _main_handles(repo)[-1]
    try:
        return bool(handle.path_is_ignored(path))
    except pygit2.GitError:
        return False


# ---------------------------------------------------------------- drift since a record (used by `brief`)


def divergence(repo: Repo, old: str, new: str) -> tuple[int, int] | None:
    """(commits in `new` not in `old`, commits in `old` not in `new`); None when either is unknown here."""
    try:
        ahead, behind = repo.handle.ahead_behind(new, old)
    except (pygit2.GitError, KeyError, ValueError):
        return None
    return int(ahead), int(behind)


def knows(repo: Repo, oid: str) -> bool:
    """Whether `oid` names a commit in this repository (a record may come from another clone)."""
    try:
        return isinstance(repo.handle[oid], pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return False


def commits_since(repo: Repo, old: str | None, new: str, limit: int) -> tuple[list[tuple[str, str]], int]:
    """Up to `limit` (short id, summary) of commits reachable from `new` but not `old`, newest first,
    and how many there are in all (counting stops at 10,000: enough to say "a lot")."""
    try:
        walker = repo.handle.walk(new, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME)
        if old is not None:
            walker.hide(old)
    except (pygit2.GitError, KeyError, ValueError):
        return [], 0
    shown: list[tuple[str, str]] = []
    total = 0
    for commit in walker:
        total += 1
        if len(shown) < limit:
            summary = (commit.message or "").strip().split("\n", 1)[0]
            shown.append((str(commit.id)[:7], summary))
        if total >= 10_000:
            break
    return shown, total
