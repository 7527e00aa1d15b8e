"""Where we are, from git's own files: worktree, branch, git directories, and where the state lives.

Every command starts here, hot ones included, so it reads a few small files instead of importing
pygit2 or running a command. It honours what git honours when it locates a repository: `GIT_DIR` and
`GIT_WORK_TREE` (relative ones against the current directory, as git does), a `.git` file naming the
git directory (linked worktrees, `--separate-git-dir`), `commondir`, `core.worktree` and `core.bare`.

The state lives in the main worktree, `<main>/.ai/local/state`, or `<common dir>/majordomus/local/state`
when the main worktree is bare (design §2). Files are read with `safeio`, so a FIFO never blocks us.
"""

from __future__ import annotations

import os

from majordomus.lite import safeio, statepaths

TYPE_CHECKING = False
if TYPE_CHECKING:
    pass

_SMALL = 64 << 10


class Place:
    """Where a command runs: its worktree and branch, the git directories, and the state's location."""

    __slots__ = (
        "branch",
        "branch_is_head",
        "common_dir",
        "config_root",
        "git_env",
        "gitdir",
        "local",
        "main_worktree",
        "state_root",
        "worktree",
    )

    def __init__(self, worktree: str, branch: str | None, gitdir: str, common_dir: str,
                 main_worktree: str | None, git_env: dict[str, str], branch_is_head: bool = False) -> None:
        self.worktree = worktree
        self.branch = branch
        # HEAD names refs/heads/BRANCH (born or unborn), rather than the branch being one a rebase works on
        self.branch_is_head = branch_is_head
        self.gitdir = gitdir
        self.common_dir = common_dir
        self.main_worktree = main_worktree  # None when the main worktree is bare
        self.local = statepaths.local_of(main_worktree, common_dir)
        self.config_root = main_worktree if main_worktree is not None else worktree
        self.state_root = statepaths.state_of(self.local)
        # What a git subprocess needs to find this repository from any directory (GIT_DIR made absolute).
        self.git_env = git_env

    def foreign(self) -> bool:
        """True when the worktree or a git directory belongs to another user: git may refuse it then
        (`safe.directory`), and only git can say (`git.run.refusal`)."""
        uid = os.geteuid()
        for path in (self.worktree, self.gitdir, self.common_dir):
            try:
                if os.stat(path).st_uid != uid:
                    return True
            except OSError:
                continue
        return False

    def state_paths(self) -> statepaths.StatePaths:
        """Every location of this place's state and committed `.ai/`."""
        return statepaths.StatePaths(local=self.local, root=self.state_root, config_root=self.config_root,
                                     worktree=self.worktree)

    def __repr__(self) -> str:
        return f"Place({self.worktree!r}, {self.branch!r}, {self.gitdir!r}, {self.state_root!r})"


def current_directory() -> str:
    """The current directory, resolved; exit 12 when it no longer exists (a removed worktree, say)."""
    try:
        return os.path.realpath(os.getcwd())
    except FileNotFoundError:
        from majordomus.errors import EnvironmentProblem

        raise EnvironmentProblem("the current directory no longer exists",
                                 "cd to a directory that exists (was this worktree removed? `git worktree list` "
                                 "shows the ones left), or pass -C DIR") from None


def _text(path: str) -> str | None:
    try:
        data = safeio.read_optional(path, _SMALL)
    except (OSError, safeio.EnvironmentProblem):
        return None
    return None if data is None else data.decode("utf-8", "surrogateescape")


def _head_branch(head: str) -> str | None:
    """The branch HEAD names (`ref: refs/heads/BRANCH`), or None for a detached HEAD. As git reads it: any
    whitespace after `ref:` (`ref:refs/heads/main`, which git writes never but reads as that branch)."""
    if not head.startswith("ref:"):
        return None
    name = head[len("ref:"):].lstrip(" \t\n\r\v\f")
    return name[len("refs/heads/"):] if name.startswith("refs/heads/") and len(name) > len("refs/heads/") else None


def _head(path: str) -> str:
    """HEAD's text. A HEAD that cannot be read (an I/O error, a link) is exit 12 naming it: taken for a
    detached HEAD, every command would say that no task is active, and an agent would start a second one.
    A symbolic link whose target names a ref (`refs/heads/main`: git writes HEAD so under
    `core.preferSymlinkRefs`) is that symbolic ref, as git reads it; the link is not followed."""
    try:
        target: str | None = os.readlink(path)
    except OSError:
        target = None  # a file (or nothing): read below
    if target is not None:
        if target.startswith("refs/") and ".." not in target.split("/"):
            return "ref: " + target
        from majordomus.errors import EnvironmentProblem
        from majordomus.lite.textrules import escape

        raise EnvironmentProblem(f"{escape(path)} is a symbolic link to {escape(target)}, which names no ref",
                                 "git reads a link there only as a ref (`refs/heads/BRANCH`): check the repository "
                                 "with `git status`; `git symbolic-ref HEAD refs/heads/BRANCH` points HEAD at a branch")
    try:
        data = safeio.read_optional(path, _SMALL)
    except OSError as exc:
        from majordomus.errors import EnvironmentProblem

        raise EnvironmentProblem(f"cannot read {path}: {exc.strerror}",
                                 statepaths.unwritable_hint(os.path.dirname(path), exc.errno)
                                 if exc.errno == 5 else "check that git can read it (`git status`)") from exc
    return "" if data is None else data.decode("utf-8", "surrogateescape").strip()


def _gitdir_of(dotgit: str) -> str | None:
    """The git directory a `.git` entry names, or None when it is not a usable one."""
    if os.path.isdir(dotgit):
        gitdir = dotgit
    else:
        text = _text(dotgit)
        if text is None or not text.startswith("gitdir:"):
            return None
        gitdir = os.path.join(os.path.dirname(dotgit), text[len("gitdir:"):].strip())
    gitdir = os.path.realpath(gitdir)
    head = os.path.join(gitdir, "HEAD")
    return gitdir if os.path.isfile(head) or os.path.islink(head) else None  # a link: `core.preferSymlinkRefs`


def core_config(common_dir: str) -> dict[str, str]:
    """`core.*` of a repository's own config file (section and keys are case-insensitive in git)."""
    text = _text(os.path.join(common_dir, "config"))
    out: dict[str, str] = {}
    if text is None:
        return out
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line[1:line.find("]")].strip().lower() if "]" in line else None
            line = line[line.find("]") + 1:].strip() if "]" in line else ""
            if not line:
                continue
        if section != "core":
            continue
        key, sep, value = line.partition("=")
        value = value.split(" #")[0].split(" ;")[0].strip().strip('"') if sep else "true"
        out[key.strip().lower()] = value
    return out


REBASE_STATES = ("rebase-merge", "rebase-apply")  # git's directories of a rebase in progress


def rebasing(gitdir: str) -> str | None:
    """The branch being rebased, from git's rebase state (design §5); None when no rebase is in progress.

    During a rebase HEAD is detached but the work belongs to that branch: records go to it and to its
    active task, never to a task active on a detached HEAD in the same worktree."""
    for state in REBASE_STATES:
        name = (_text(os.path.join(gitdir, state, "head-name")) or "").strip()
        if name.startswith("refs/heads/") and len(name) > len("refs/heads/"):
            return name[len("refs/heads/"):]
    return None


def _is_true(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "yes", "on", "1", "")


def _is_git_directory(path: str) -> bool:
    """Whether `path` is itself a git directory (a bare repository, a `.git`, a submodule's under
    `.git/modules`), as git tells one: a HEAD, and objects and refs (or a `commondir` naming them)."""
    head = os.path.join(path, "HEAD")
    if not (os.path.isfile(head) or os.path.islink(head)):
        return False
    return os.path.isfile(os.path.join(path, "commondir")) or (
        os.path.isdir(os.path.join(path, "objects")) and os.path.isdir(os.path.join(path, "refs")))


def _discover(start: str) -> tuple[str | None, str | None]:
    """(gitdir, the directory holding `.git`) around `start`, walking up; (None, None) outside. As git does,
    a directory that is itself a git directory ends the walk: (it, None), its work tree what its
    `core.worktree` says, else none (a bare repository, or inside a `.git`), never the project around it."""
    path = start
    while True:
        gitdir = _gitdir_of(os.path.join(path, ".git"))
        if gitdir is not None:
            return gitdir, path
        if _is_git_directory(path):
            return os.path.realpath(path), None
        parent = os.path.dirname(path)
        if parent == path:
            return None, None
        path = parent


def _common_dir(gitdir: str) -> str:
    commondir = _text(os.path.join(gitdir, "commondir"))
    if commondir is None:
        return gitdir
    return os.path.realpath(os.path.join(gitdir, commondir.strip()))


def locate(start: str, environ: dict[str, str] | None = None) -> Place | None:
    """The place around `start` (an absolute directory); None outside a git work tree (or in a bare one)."""
    env = os.environ if environ is None else environ
    start = os.path.realpath(start)
    env_dir, env_tree = env.get("GIT_DIR"), env.get("GIT_WORK_TREE")
    if env_dir:
        # a directory, or a `.git` file naming one (a linked worktree's), which git follows too
        gitdir: str | None = _gitdir_of(os.path.realpath(os.path.join(start, env_dir)))
        top: str | None = start  # git: with GIT_DIR and nothing else said, the current directory is the top
    else:
        gitdir, top = _discover(start)
    if gitdir is None:
        return None
    common = _common_dir(gitdir)
    core = core_config(common)
    if env_tree:
        worktree: str | None = os.path.realpath(os.path.join(start, env_tree))
    elif core.get("worktree") and common == gitdir:
        worktree = os.path.realpath(os.path.join(gitdir, core["worktree"]))
    elif _is_true(core.get("bare")) and common == gitdir:
        worktree = None
    else:
        worktree = top
    if worktree is None:
        return None
    git_env = {"GIT_DIR": gitdir, "GIT_WORK_TREE": worktree} if (env_dir or env_tree) else {}
    head = _head_branch(_head(os.path.join(gitdir, "HEAD")))
    branch = head if head is not None else rebasing(gitdir)
    if common == gitdir:
        main: str | None = worktree
    elif _is_true(core.get("bare")):
        main = None  # as libgit2 decides for the main repository
    elif core.get("worktree"):
        main = os.path.realpath(os.path.join(common, core["worktree"]))
    else:
        main = os.path.dirname(common)
    return Place(worktree, branch, gitdir, common, main, git_env, branch_is_head=head is not None)
