"""Where state lives (design §2), and the directories it needs, created 0700 and never through a symlink."""

from __future__ import annotations

import errno
import os
import stat

from majordomus.errors import EnvironmentProblem

TYPE_CHECKING = False
if TYPE_CHECKING:
    from majordomus.lite.dotgit import Place

DIR_MODE = 0o700
FILE_MODE = 0o600
SUBDIRS = ("tasks", "checkpoints", "handoffs", "runs", "context", "cache")
PARENT_MODE = 0o755  # `.ai` and the like: never group- or world-writable, whatever the umask (design §2a)


class StatePaths:
    """Every on-disk location of the state, resolved in one place."""

    __slots__ = ("config_root", "local", "root")

    def __init__(self, local: str, root: str, config_root: str | None) -> None:
        self.local = local  # .ai/local (or <common dir>/majordomus/local when the main worktree is bare)
        self.root = root  # .../state
        self.config_root = config_root  # where .ai/config.yaml is looked for

    @property
    def ledger(self) -> str:
        return os.path.join(self.root, "ledger.jsonl")

    @property
    def lock(self) -> str:
        return os.path.join(self.root, ".lock")

    @property
    def active_index(self) -> str:
        return os.path.join(self.root, "active.json")

    @property
    def tasks(self) -> str:
        return os.path.join(self.root, "tasks")

    @property
    def checkpoints(self) -> str:
        return os.path.join(self.root, "checkpoints")

    @property
    def handoffs(self) -> str:
        return os.path.join(self.root, "handoffs")

    @property
    def runs(self) -> str:
        """Execution records of `majordomus run` (design §17)."""
        return os.path.join(self.root, "runs")

    @property
    def contexts(self) -> str:
        return os.path.join(self.root, "context")

    @property
    def config_cache(self) -> str:
        return os.path.join(self.root, "cache", "config.json")

    @property
    def root_commit_cache(self) -> str:
        return os.path.join(self.root, "cache", "root-commit")

    def task_file(self, task_id: str) -> str:
        return os.path.join(self.tasks, f"{task_id}.yaml")

    def context_dir(self, task_id: str) -> str:
        return os.path.join(self.contexts, task_id)

    def relative(self, path: str) -> str:
        """A path inside the state directory, as the ledger stores it."""
        return os.path.relpath(path, self.root)

    def absolute(self, rel: str) -> str:
        return os.path.join(self.root, rel)


def of(place: Place) -> StatePaths:
    """The state paths of a located repository (`lite.dotgit` decides where the state lives)."""
    return StatePaths(local=place.local, root=place.state_root, config_root=place.config_root)


def make_parent(path: str) -> None:
    """Create `path` and its missing parents, none of them group- or world-writable."""
    missing = []
    while not os.path.lexists(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, PARENT_MODE)
        except FileExistsError:
            continue
        except OSError as exc:
            raise EnvironmentProblem(f"cannot create {directory}: {exc.strerror}", "check permissions") from exc
        os.chmod(directory, PARENT_MODE & ~0o022)


def _refuse_symlink(path: str) -> bool:
    """True when `path` is a real directory, False when absent; refuse links and non-directories."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise EnvironmentProblem(f"cannot inspect {path}: {exc.strerror}", "check its permissions") from exc
    if stat.S_ISLNK(st.st_mode):
        raise EnvironmentProblem(
            f"{path} is a symbolic link; majordomus never follows links inside its state",
            "replace the link with a real directory (move its contents in), then try again",
        )
    if not stat.S_ISDIR(st.st_mode):
        raise EnvironmentProblem(
            f"{path} is not a directory", "move the file away so majordomus can create the directory"
        )
    return True


def _mkdir(path: str) -> None:
    try:
        os.mkdir(path, DIR_MODE)
    except FileExistsError:
        pass
    except OSError as exc:
        raise EnvironmentProblem(
            f"cannot create {path}: {exc.strerror}", "make the parent directory writable, then try again"
        ) from exc
    else:
        os.chmod(path, DIR_MODE)  # the umask may have taken bits away; never leave it wider either
    _refuse_symlink(path)


def check_readable(paths: StatePaths) -> bool:
    """For read-only commands: True when the state exists; refuse links on the way."""
    return all(_refuse_symlink(path) for path in (os.path.dirname(paths.local), paths.local, paths.root))


def ensure(paths: StatePaths, *subdirs: str) -> None:
    """Create the state directory (and `subdirs`) as needed, with the ignore file that keeps it unstaged."""
    parent = os.path.dirname(paths.local)
    if not _refuse_symlink(parent):
        make_parent(parent)
        _refuse_symlink(parent)
    if not _refuse_symlink(paths.local):
        _mkdir(paths.local)
    ignore = os.path.join(paths.local, ".gitignore")
    if not os.path.lexists(ignore):
        _write_ignore(ignore)
    if not _refuse_symlink(paths.root):
        _mkdir(paths.root)
    for sub in subdirs:
        full = os.path.join(paths.root, sub)
        if not _refuse_symlink(full):
            _mkdir(full)
    if not os.access(paths.root, os.W_OK | os.X_OK):
        raise EnvironmentProblem(
            f"the state directory {paths.root} is not writable",
            f"fix its permissions (chmod 700 {paths.root}) or run as its owner",
        )


def _write_ignore(path: str) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    except FileExistsError:
        return
    except OSError as exc:
        raise EnvironmentProblem(
            f"cannot write {path}: {exc.strerror}", "make .ai/local writable (and free space there), then try again"
        ) from exc
    try:  # one os.write of two bytes; a failure leaves no empty ignore file behind to be trusted later
        if os.write(fd, b"*\n") != 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    except OSError as exc:
        os.close(fd)
        os.unlink(path)
        raise EnvironmentProblem(f"cannot write {path}: {exc.strerror}", "free space there, then try again") from exc
    os.close(fd)
