"""Every location of the state directory and of the committed `.ai/` (design §2), named once.

Standard library only: the hot paths (checkpoint, the hooks, `hook compact`) resolve their files here too,
so that no module builds a state path by hand (a test scans the package for that). The modes and the one
safe mkdir live here as well: a directory of the state is created 0700, a file 0600, whatever the umask,
and nothing is ever created or entered through a symbolic link.
"""

from __future__ import annotations

import errno
import os
import stat

from majordomus.errors import EnvironmentProblem

DIR_MODE = 0o700
FILE_MODE = 0o600
PARENT_MODE = 0o755  # `.ai` and the like: never group- or world-writable, whatever the umask (design §2a)
COMMITTED_FILE_MODE = 0o644  # what `init` writes into `.ai/`, to be committed

AI_DIR = ".ai"
CONFIG_RELPATH = os.path.join(AI_DIR, "config.yaml")
PROFILES_RELPATH = os.path.join(AI_DIR, "profiles")
LOCAL_RELPATH = os.path.join(AI_DIR, "local")
STATE_DIR = "state"
# The record directories, as the state and sync's trees name them.
CHECKPOINTS, HANDOFFS, RUNS, TASKS, CONTEXT, CACHE, HOOKS = (
    "checkpoints", "handoffs", "runs", "tasks", "context", "cache", "hooks")
JOURNAL = "compact-events.jsonl"
JOURNAL_ROTATED = JOURNAL + ".1"


def local_of(main_worktree: str | None, common_dir: str) -> str:
    """`.ai/local` of the main worktree, or `<common dir>/majordomus/local` when it is bare (design §2)."""
    if main_worktree is not None:
        return os.path.join(main_worktree, LOCAL_RELPATH)
    return os.path.join(common_dir, "majordomus", "local")


def state_of(local: str) -> str:
    return os.path.join(local, STATE_DIR)


class StatePaths:
    """Every on-disk location of the state, resolved in one place."""

    __slots__ = ("config_root", "local", "root", "worktree")

    def __init__(self, local: str, root: str, config_root: str | None, worktree: str | None = None) -> None:
        self.local = local  # .ai/local (or <common dir>/majordomus/local when the main worktree is bare)
        self.root = root  # .../state
        self.config_root = config_root  # where .ai/config.yaml is looked for
        self.worktree = worktree  # where profiles are looked for after config_root

    @classmethod
    def at(cls, root: str) -> StatePaths:
        """The paths of a state directory known only by its root (the readers of one file)."""
        return cls(local=os.path.dirname(root), root=root, config_root=None)

    def _in(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    # ------------------------------------------------------------ files of the state directory

    @property
    def ledger(self) -> str:
        return self._in("ledger.jsonl")

    @property
    def lock(self) -> str:
        return self._in(".lock")

    @property
    def sync_lock(self) -> str:
        return self._in(".sync-lock")

    @property
    def active_index(self) -> str:
        return self._in("active.json")

    @property
    def claims(self) -> str:
        """This machine's own claims (design §18)."""
        return self._in("claims.json")

    @property
    def machine_id(self) -> str:
        """This machine's stable id for sync (design §13)."""
        return self._in("machine-id")

    @property
    def ignore_file(self) -> str:
        """`.ai/local/.gitignore`, content `*`: nothing in the state is ever staged."""
        return os.path.join(self.local, ".gitignore")

    # ------------------------------------------------------------ directories of the state

    def directory(self, name: str) -> str:
        """A record directory by the name the store and sync's trees give it (`checkpoints`, …)."""
        if name not in (CHECKPOINTS, HANDOFFS, RUNS, TASKS, CONTEXT, CACHE, HOOKS):
            raise ValueError(f"not a directory of the state: {name!r}")
        return self._in(name)

    @property
    def tasks(self) -> str:
        return self._in(TASKS)

    @property
    def checkpoints(self) -> str:
        return self._in(CHECKPOINTS)

    @property
    def handoffs(self) -> str:
        return self._in(HANDOFFS)

    @property
    def runs(self) -> str:
        """Execution records of `majordomus run` (design §17)."""
        return self._in(RUNS)

    @property
    def contexts(self) -> str:
        return self._in(CONTEXT)

    @property
    def cache(self) -> str:
        return self._in(CACHE)

    @property
    def receipts(self) -> str:
        """What `hooks install` changed, so that `uninstall` undoes exactly that (design §12)."""
        return self._in(HOOKS)

    def task_file(self, task_id: str) -> str:
        return os.path.join(self.tasks, f"{task_id}.yaml")

    def context_dir(self, task_id: str) -> str:
        return os.path.join(self.contexts, task_id)

    def journal(self, task_id: str) -> str:
        """A task's compaction journal (design §12); `journal_rotated` holds its previous file."""
        return os.path.join(self.context_dir(task_id), JOURNAL)

    def journal_rotated(self, task_id: str) -> str:
        return os.path.join(self.context_dir(task_id), JOURNAL_ROTATED)

    def receipt(self, runtime: str, settings_path: str) -> str:
        import hashlib

        digest = hashlib.sha256(settings_path.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        return os.path.join(self.receipts, f"{runtime}-{digest}.json")

    # ------------------------------------------------------------ caches: derived, validated before use

    @property
    def config_cache(self) -> str:
        return os.path.join(self.cache, "config.json")

    @property
    def root_commit_cache(self) -> str:
        return os.path.join(self.cache, "root-commit")

    @property
    def conversations(self) -> str:
        """What session-start gave each agent conversation (design §12): digests only, small and bounded."""
        return os.path.join(self.cache, "conversations.json")

    @property
    def sync_months_cache(self) -> str:
        return os.path.join(self.cache, "sync-months.json")

    @property
    def sync_pull_cache(self) -> str:
        """What the last pull found complete here, bucket by bucket (`sync.lost`): derived, rebuildable."""
        return os.path.join(self.cache, "sync-pull.json")

    def checkpoint_index(self, task_id: str) -> str:
        """A task's list of checkpoint names, derived and rebuildable."""
        return os.path.join(self.cache, f"checkpoints-{task_id}.idx")

    # ------------------------------------------------------------ the committed `.ai/`

    # A committed directory on the way that is a symbolic link (`.ai`, `.ai/profiles`) is never gone
    # through (design §2a): these return the link itself in place of the file below it, so that the one
    # reader (`safeio`, which opens with O_NOFOLLOW) refuses it, naming the link.

    @property
    def config_file(self) -> str | None:
        return None if self.config_root is None else committed(self.config_root, CONFIG_RELPATH)

    @property
    def profile_roots(self) -> list[str]:
        """The roots whose `.ai/profiles` is read: beside the config first, then this worktree."""
        out: list[str] = []
        for root in (self.config_root, self.worktree):
            if root and root not in out:
                out.append(root)
        return out

    @property
    def profile_dirs(self) -> list[str]:
        return [linked_dir(root, os.path.join(root, PROFILES_RELPATH)) or os.path.join(root, PROFILES_RELPATH)
                for root in self.profile_roots]

    def profile_files(self, name: str) -> list[str]:
        """Where `.ai/profiles/NAME.md` is looked for, in order."""
        return [committed(root, os.path.join(PROFILES_RELPATH, f"{name}.md")) for root in self.profile_roots]

    # ------------------------------------------------------------ as the ledger names them

    def relative(self, path: str) -> str:
        """A path inside the state directory, as the ledger stores it."""
        return os.path.relpath(path, self.root)

    def absolute(self, rel: str) -> str:
        return self._in(rel)


class UnsafeDirectory(EnvironmentProblem):
    """A directory of the state (or one on the way to it) that is a symbolic link or not a directory at all:
    nothing is read or written through it (design §2, §2a). Readers that turn an unreadable file into a
    finding let this one through: it is the state's shape that is wrong, not one file."""

    def __init__(self, path: str, message: str, hint: str) -> None:
        super().__init__(message, hint)
        self.path = path


def is_real_dir(path: str) -> bool:
    """True when `path` is a directory, False when it is absent; a link or anything else is refused."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise EnvironmentProblem(f"cannot inspect {path}: {exc.strerror}", "check its permissions") from exc
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeDirectory(
            path, f"{path} is a symbolic link; majordomus never follows links inside its state",
            "replace the link with a real directory (move its contents in), then try again",
        )
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeDirectory(
            path, f"{path} is not a directory", "move the file away so majordomus can create the directory"
        )
    return True


def readable_dir(paths: StatePaths, directory: str) -> bool:
    """The one rule of every reader of a state directory (`checkpoints`, `context/ID`, …, or the state's
    root): True when it is there, False when it or a directory on the way is absent. A symbolic link (or a
    file) anywhere from `.ai` down to it is refused, `UnsafeDirectory` (exit 12) naming it: nothing is read
    through it, whatever it points at (design §2a). Writers use `ensure_dir`, which refuses the same."""
    if not state_exists(paths):
        return False
    rel = os.path.relpath(directory, paths.root)
    if rel == ".":
        return True
    if rel.startswith(".."):
        raise ValueError(f"not inside the state directory: {directory!r}")
    current = paths.root
    for part in rel.split(os.sep):
        current = os.path.join(current, part)
        if not is_real_dir(current):
            return False
    return True


def state_exists(paths: StatePaths) -> bool:
    """True when the state directory exists; a link (or a file) on the way to it is refused, exit 12."""
    return all(is_real_dir(path) for path in (os.path.dirname(paths.local), paths.local, paths.root))


def unwritable_hint(path: str, err: int | None = None) -> str:
    """The next step when `path` cannot be written, by what went wrong: a full or failing disk, a read-only
    file system, or modes."""
    if err in (errno.ENOSPC, errno.EDQUOT):
        return f"the file system of {path} is full: free some space, then run the same command again"
    if err == errno.EIO:
        return "the disk reported an I/O error: check it (`dmesg`), then run the same command again"
    if err == errno.EROFS or _read_only_fs(path):
        return f"{path} is on a read-only file system: run majordomus where the repository is writable"
    return f"fix its permissions (chmod 700 {path}) or run as its owner"


def _read_only_fs(path: str) -> bool:
    while path and not os.path.lexists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def make_private_dir(path: str) -> None:
    """The one safe mkdir: create `path` 0700 (its parent must exist), then confirm it is a real directory."""
    try:
        os.mkdir(path, DIR_MODE)
    except FileExistsError:
        pass
    except OSError as exc:
        raise EnvironmentProblem(f"cannot create {path}: {exc.strerror}", _mkdir_hint(path, exc)) from exc
    else:
        try:
            os.chmod(path, DIR_MODE)  # the umask may have taken bits away; never leave it wider either
        except OSError as exc:
            try:
                os.rmdir(path)  # empty, just made: nothing is left half made
            except OSError:
                pass
            raise EnvironmentProblem(f"cannot set the mode of {path} to 0700: {exc.strerror}",
                                     _mkdir_hint(path, exc)) from exc
    is_real_dir(path)


def _mkdir_hint(path: str, exc: OSError) -> str:
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT, errno.EIO):
        return unwritable_hint(os.path.dirname(path), exc.errno)
    return "make the parent directory writable, then try again"


def ensure_dir(path: str) -> None:
    """`path` as a real directory, made 0700 when absent."""
    if not is_real_dir(path):
        make_private_dir(path)


def make_parent(path: str) -> None:
    """Create `path` and its missing parents, none of them group- or world-writable."""
    missing = []
    while not os.path.lexists(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    made: list[str] = []
    for directory in reversed(missing):
        try:
            os.mkdir(directory, PARENT_MODE)
            made.append(directory)
            os.chmod(directory, PARENT_MODE & ~0o022)
        except FileExistsError:
            continue
        except OSError as exc:
            for empty in reversed(made):  # the ones made here, still empty: nothing is left half made
                try:
                    os.rmdir(empty)
                except OSError:
                    break
            doing = "set the mode of" if made and made[-1] == directory else "create"
            raise EnvironmentProblem(f"cannot {doing} {directory}: {exc.strerror}",
                                     unwritable_hint(os.path.dirname(directory), exc.errno)) from exc


def linked_dir(top: str, path: str) -> str | None:
    """The first directory from below `top` down to `path` (itself included) that is a symbolic link, or None.

    A committed `.ai`, `.ai/profiles` or `.ai/local` that is a link, or any directory on the way to a file
    majordomus reads or writes, is refused: nothing is read or written through it (design §2a).
    """
    rel = os.path.relpath(path, top)
    if rel == "." or rel.startswith(".."):
        return None
    current = top
    for part in rel.split(os.sep):
        current = os.path.join(current, part)
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return current
        except OSError:
            return None  # absent from here down: nothing to follow
    return None


def committed(top: str, rel: str) -> str:
    """`top/rel`, or the first directory on the way that is a symbolic link (which every reader refuses)."""
    return linked_dir(top, os.path.dirname(os.path.join(top, rel))) or os.path.join(top, rel)
