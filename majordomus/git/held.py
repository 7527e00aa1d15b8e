"""What git holds under a path of the work tree, and what it ignores (doctor's `state.in-git` and
`state.not-ignored`), asked of the user's own git through the one runner: two short git commands (two more
to tell how, when git holds something there) instead of loading pygit2 (a tenth of a second) for `doctor`
in a pre-commit hook or a CI job.

The questions are asked of this worktree and, when the state lives in another one (a linked worktree's
state is the main worktree's), of the main worktree too: its git directory and work tree named on the
command line, so that nothing of this worktree's environment (`GIT_DIR`, `GIT_WORK_TREE`) points git
elsewhere.
"""

from __future__ import annotations

from majordomus.errors import EnvironmentProblem
from majordomus.git import run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from majordomus.lite.dotgit import Place


class _Main:
    """The main worktree as a place for the runner: its own directories given to git, no environment."""

    __slots__ = ("git_env", "worktree")

    def __init__(self, worktree: str) -> None:
        self.worktree = worktree
        self.git_env: dict[str, str] = {}


def _places(place: Place) -> list[tuple[run.Where, tuple[str, ...]]]:
    """(where to run, the options that name its repository) of this worktree and the main one."""
    found: list[tuple[run.Where, tuple[str, ...]]] = [(place, ())]
    main = place.main_worktree
    if main is not None and main != place.worktree:
        found.append((_Main(main), (f"--git-dir={place.common_dir}", f"--work-tree={main}")))
    return found


def _paths(out: bytes) -> list[str]:
    return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]


def held_under(place: Place, prefix: str) -> dict[str, str]:
    """Paths under `prefix` (worktree-relative, ending in `/`) that git holds, in this worktree and the main
    one. The value says how: `staged` (in the index, not in HEAD), `tracked` (index and HEAD), or
    `committed` (in HEAD while its removal is staged)."""
    held: dict[str, str] = {}
    for where, repository in _places(place):
        # One question first, what is in the index or in HEAD at all: nothing, the common answer, is the end.
        either = run.run(where, *repository, "ls-files", "-z", "--cached", "--with-tree=HEAD", "--", prefix)
        if either.returncode == 0 and not either.stdout.strip(b"\0"):
            continue
        index = run.run(where, *repository, "ls-files", "-z", "--cached", "--full-name", "--", prefix)
        if index.returncode != 0:
            raise EnvironmentProblem(f"cannot read the git index: {index.reason()}",
                                     "run `git status` to see what git says")
        tree = run.run(where, *repository, "ls-tree", "-r", "-z", "--name-only", "--full-tree", "HEAD", "--",
                       prefix.rstrip("/"))  # an unborn HEAD has no tree: nothing is committed
        indexed = set(_paths(index.stdout))
        committed = set(_paths(tree.stdout)) if tree.returncode == 0 else set()
        for path in indexed | committed:
            how = "tracked" if path in indexed and path in committed else ("staged" if path in indexed else "committed")
            held.setdefault(path, how)
    return held


def ignored(place: Place, paths: list[str]) -> set[str]:
    """Which of `paths` (relative to the main worktree) git ignores there, by the ignore rules alone."""
    main = place.main_worktree
    if main is None or not paths:
        return set()
    where, repository = _places(place)[-1]
    done = run.run(where, *repository, "check-ignore", "--no-index", "--", *paths)  # -z needs --stdin
    if done.returncode not in (0, 1):
        return set()
    return {line for line in done.stdout.decode("utf-8", "surrogateescape").split("\n") if line in paths}
