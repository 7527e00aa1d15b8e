"""What the user's own git says about the work tree (design §4), through the `git` command.

One `git status --porcelain=v2 -z --branch --untracked-files=all` gives branch, head and changed files,
honouring everything git honours (sparse checkout, skip-worktree, GIT_DIR/GIT_WORK_TREE, the untracked
cache, fsmonitor, submodule settings, the sha256 object format). Standard library only: checkpoint and
the hooks use this module, and they never import pygit2.
"""

from __future__ import annotations

import os

from majordomus.errors import EnvironmentProblem
from majordomus.git import run
from majordomus.git.oid import Oid
from majordomus.lite import ignorefile, textrules

TYPE_CHECKING = False
if TYPE_CHECKING:

    from majordomus.lite.dotgit import Place

def path_text(raw: bytes) -> str:
    """A path as text: itself when it is UTF-8 without a control, line-break or bidi character, else git's
    C-quoted form (`lite.textrules.c_quote`), which every YAML reader loads and no reader splits."""
    try:
        return textrules.c_quote(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return textrules.c_quote_bytes(raw)


def git(place: Place, *args: str, ok: tuple[int, ...] = (0,)) -> bytes:
    """Run `git ARGS` in `place` (through the one runner); its stdout, or exit 12 naming what git said."""
    return run.git(place, *args, ok=ok)


class Status:
    """Branch, head and changed paths of the work tree, as `git status` reports them."""

    __slots__ = ("branch", "changed", "head")

    def __init__(self, branch: str | None, head: Oid | None, changed: list[str]) -> None:
        self.branch = branch  # None when detached
        self.head = head  # None on an unborn branch
        self.changed = changed  # sorted


def parse_status(out: bytes) -> Status:
    """Parse `git status --porcelain=v2 -z --branch` output (a rename lists both its paths)."""
    branch: str | None = None
    head: Oid | None = None
    changed: set[str] = set()
    fields = out.split(b"\0")
    i = 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        kind = entry[:2]
        if kind == b"1 ":
            changed.add(path_text(entry.split(b" ", 8)[8]))
        elif kind == b"2 ":
            changed.add(path_text(entry.split(b" ", 9)[9]))
            if i < len(fields):
                changed.add(path_text(fields[i]))
                i += 1
        elif kind == b"u ":
            changed.add(path_text(entry.split(b" ", 10)[10]))
        elif kind == b"? ":
            changed.add(path_text(entry[2:]))
        elif entry.startswith(b"# branch.oid "):
            value = entry[13:].decode("ascii", "replace")
            head = None if value == "(initial)" else Oid(value)
        elif entry.startswith(b"# branch.head "):
            raw = entry[14:]
            branch = None if raw == b"(detached)" else path_text(raw)
    return Status(branch, head, sorted(changed))


STATUS = ("status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all")


def status(place: Place) -> Status:
    """The work tree as git sees it. git's fatal end here (exit 128) is git refusing the repository itself
    (another owner, a format version it does not know, a config or index it cannot read): `RepositoryRefused`,
    so that a hook gives the agent nothing from it (design §2a)."""
    ignorefile.refuse_special(place.state_paths().ignore_file)  # git would read it, and wait on a FIFO
    done = run.run(place, *STATUS)
    if done.returncode == 128:
        raise run.RepositoryRefused(f"git refuses the repository at {place.worktree}: {done.reason()}",
                                    run.hint(STATUS, place.worktree))
    if done.returncode != 0:
        raise EnvironmentProblem(f"`git {' '.join(STATUS[:2])}` failed in {place.worktree}: {done.reason()}",
                                 run.hint(STATUS, place.worktree))
    return parse_status(done.stdout)


def root_commit(place: Place, head: str) -> Oid:
    """The root reached from `head` by first parents (the repository's id); the caller caches it."""
    out = git(place, "rev-list", "--first-parent", "--max-parents=0", head, "--").split()
    root = Oid.parse(out[-1].decode("ascii", "replace")) if out else None
    if root is None:
        raise EnvironmentProblem(f"git found no root commit below {head} (a replace or graft that makes a cycle?), "
                                 "so the repository has no id to record; nothing was written",
                                 "run `git log --first-parent` to see why; `git replace -l` lists replacements")
    return root


def config_get(place: Place, key: str) -> str | None:
    """`git config --get KEY` as the user's git resolves it (includes, conditional includes); None if unset."""
    out = git(place, "config", "--get", key, ok=(0, 1)).strip()
    return out.decode("utf-8", "surrogateescape") if out else None  # a byte not UTF-8 stays one: refused


def git_path(place: Place, name: str) -> str:
    """`git rev-parse --git-path NAME`, absolute: e.g. the hooks directory, honouring core.hooksPath."""
    out = git(place, "rev-parse", "--git-path", name).decode("utf-8", "surrogateescape").strip()
    return os.path.normpath(os.path.join(place.worktree, out))


def is_commit(place: Place, oid: str) -> bool:
    """Whether `oid` names a commit here (a record may come from another clone)."""
    if not oid or not all(c in "0123456789abcdef" for c in oid):
        return False  # an abbreviation is fine here: git says whether it names a commit
    out = git(place, "cat-file", "-t", oid, ok=(0, 1, 128))
    return out.strip() == b"commit"


def head(place: Place) -> str | None:
    """The commit HEAD names now, or None (unborn, or git cannot say)."""
    out = git(place, "rev-parse", "--verify", "-q", "HEAD", ok=(0, 1, 128)).strip().decode("ascii", "replace")
    return out if _is_id(out) else None


def _is_id(oid: str) -> bool:
    return bool(oid) and all(c in "0123456789abcdef" for c in oid)


def is_ancestor(place: Place, old: str, new: str) -> bool:
    """Whether commit `old` is in the history of `new` (`git merge-base --is-ancestor`); False when either
    is unknown here. A commit is its own ancestor."""
    if not (_is_id(old) and _is_id(new)):
        return False
    return run.run(place, "merge-base", "--is-ancestor", old, new).returncode == 0


def branch_contains(place: Place, oid: str, branch: str) -> bool | None:
    """Whether `refs/heads/BRANCH` has commit `oid` in its history; None when git cannot tell (no such
    branch here, or the commit is not in this repository: a record from another clone)."""
    if not _is_id(oid) or not branch:
        return None
    # One question to git: 0 is yes, 1 is no, and anything else (128) is that one of the two is unknown here,
    # or the branch is unborn: nothing to be in.
    answer = run.run(place, "merge-base", "--is-ancestor", oid, f"refs/heads/{branch}").returncode
    return answer == 0 if answer in (0, 1) else None


def count_between(place: Place, old: str, new: str) -> int:
    """How many commits `new` has that `old` has not (`git rev-list --count old..new`, stops at 10,000).
    Only for `old` in the history of `new` (or the reverse): a count across unrelated history means nothing."""
    out = git(place, "rev-list", "--count", "--max-count=10000", new, f"^{old}", "--", ok=(0, 128)).strip()
    return int(out) if out.isdigit() else 0


def same_tree(place: Place, a: str, b: str) -> bool | None:
    """Whether commits `a` and `b` record the same tree (an amend of the message only); None when git cannot
    tell (one of them is gone)."""
    if not (_is_id(a) and _is_id(b)):
        return None
    done = run.run(place, "rev-parse", f"{a}^{{tree}}", f"{b}^{{tree}}")  # hex ids: never an option
    trees = done.stdout.split()
    if done.returncode or len(trees) != 2:
        return None
    return trees[0] == trees[1]


def commits_since(place: Place, old: str | None, new: str, limit: int) -> tuple[list[tuple[str, str]], int]:
    """Up to `limit` (short id, summary) of commits reachable from `new` but not `old`, newest first, and
    how many there are in all (counting stops at 10,000: enough to say "a lot")."""
    spec = [new] + ([f"^{old}"] if old else [])
    out = git(place, "log", "--format=%h%x00%s", "-n", str(limit), *spec, "--", ok=(0, 128))
    shown = []
    # One commit a line, and a line ends at "\n" only: a subject may hold U+2028, U+0085 or a form feed,
    # which `splitlines` would take for the start of another commit.
    for line in out.decode("utf-8", "replace").split("\n"):
        short, sep, summary = line.partition("\0")
        if sep and _is_short_id(short):
            shown.append((short[:7], summary))
    total = git(place, "rev-list", "--count", "--max-count=10000", *spec, "--", ok=(0, 128)).strip()
    return shown, int(total) if total.isdigit() else len(shown)


def _is_short_id(text: str) -> bool:
    return 4 <= len(text) <= 64 and all(c in "0123456789abcdef" for c in text)


def hooks_disabled(place: Place) -> bool:
    """Whether `core.hooksPath` is set to the empty string: git then runs no hook at all, not even from
    `.git/hooks` (while `rev-parse --git-path hooks` answers `./`, the work tree)."""
    done = run.run(place, "config", "--get", "core.hooksPath")
    return done.returncode == 0 and not done.stdout.strip()


def hooks_dir(place: Place) -> str:
    """Where git runs this repository's hooks from (`core.hooksPath` when set); exit 12 when it runs none."""
    if hooks_disabled(place):
        raise EnvironmentProblem("core.hooksPath is set to the empty string, and git runs no hook then (not from "
                                 ".git/hooks either); nothing was written",
                                 "unset it (`git config --unset core.hooksPath`), or set it to the directory git "
                                 "should run hooks from, then run the same command again")
    return git_path(place, "hooks")


def is_tracked(place: Place, path: str) -> bool:
    """Whether git tracks `path` (a file, or anything below a directory) in this worktree."""
    return bool(git(place, "ls-files", "-z", "--", path).strip(b"\0"))


def remotes(place: Place) -> list[str]:
    """The names of this repository's remotes, as `git remote` lists them."""
    # one a line, split at "\n" only: git keeps a name holding U+2028 or VT, which `splitlines` would cut
    return [name for name in git(place, "remote").decode("utf-8", "replace").split("\n") if name]


def branch_exists(place: Place, name: str) -> bool:
    """Whether `refs/heads/NAME` exists here (an unborn branch counts when it is this worktree's HEAD)."""
    if name == place.branch and place.branch_is_head:
        return True  # HEAD names it: born or unborn, it is this worktree's branch (no git to ask)
    if run.run(place, "show-ref", "--verify", "--quiet", f"refs/heads/{name}").returncode == 0:
        return True
    return name == place.branch and run.run(place, "symbolic-ref", "-q", "HEAD").returncode == 0
