"""What the user's own git says about the work tree (design §4), through the `git` command.

One `git status --porcelain=v2 -z --branch --untracked-files=all` gives branch, head and changed files,
honouring everything git honours (sparse checkout, skip-worktree, GIT_DIR/GIT_WORK_TREE, the untracked
cache, fsmonitor, submodule settings, the sha256 object format). Standard library only: checkpoint and
the hooks use this module, and they never import pygit2.
"""

from __future__ import annotations

import os

from majordomus.errors import EnvironmentProblem, MajordomusError
from majordomus.lite import text as text_rule

TYPE_CHECKING = False
if TYPE_CHECKING:

    from majordomus.lite.dotgit import Place

def path_text(raw: bytes) -> str:
    """A path as text: itself when it is UTF-8 without a control, line-break or bidi character, else git's
    C-quoted form (`lite.text.c_quote`), which every YAML reader loads and no reader splits."""
    try:
        return text_rule.c_quote(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return text_rule.c_quote_bytes(raw)


def git(place: Place, *args: str, ok: tuple[int, ...] = (0,)) -> bytes:
    """Run `git ARGS` in `place`'s worktree; its stdout, or an error naming what git said."""
    env = None
    if place.git_env:
        env = dict(os.environ)
        env.update(place.git_env)
    import subprocess

    try:
        done = subprocess.run(["git", *args], cwd=place.worktree, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, check=False)
    except OSError as exc:
        raise EnvironmentProblem(f"cannot run git: {exc.strerror}", "install git, or put it on PATH") from exc
    if done.returncode not in ok:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise EnvironmentProblem(
            f"`git {' '.join(args[:2])}` failed in {place.worktree}: {said[-1] if said else done.returncode}",
            f"run `git {' '.join(args[:2])}` there to see what git says",
        )
    return done.stdout


class Status:
    """Branch, head and changed paths of the work tree, as `git status` reports them."""

    __slots__ = ("branch", "changed", "head")

    def __init__(self, branch: str | None, head: str | None, changed: list[str]) -> None:
        self.branch = branch  # None when detached
        self.head = head  # None on an unborn branch
        self.changed = changed  # sorted


def parse_status(out: bytes) -> Status:
    """Parse `git status --porcelain=v2 -z --branch` output (a rename lists both its paths)."""
    branch: str | None = None
    head: str | None = None
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
            head = None if value == "(initial)" else value
        elif entry.startswith(b"# branch.head "):
            raw = entry[14:]
            branch = None if raw == b"(detached)" else path_text(raw)
    return Status(branch, head, sorted(changed))


def status(place: Place) -> Status:
    return parse_status(git(place, "status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all"))


def root_commit(place: Place, head: str) -> str:
    """The root reached from `head` by first parents (the repository's id); the caller caches it."""
    out = git(place, "rev-list", "--first-parent", "--max-parents=0", head, "--").split()
    if not out:
        raise MajordomusError(f"git found no root commit below {head}", "run `git log --first-parent` to see why")
    return out[-1].decode("ascii")


def config_get(place: Place, key: str) -> str | None:
    """`git config --get KEY` as the user's git resolves it (includes, conditional includes); None if unset."""
    out = git(place, "config", "--get", key, ok=(0, 1)).strip()
    return out.decode("utf-8", "replace") if out else None


def git_path(place: Place, name: str) -> str:
    """`git rev-parse --git-path NAME`, absolute: e.g. the hooks directory, honouring core.hooksPath."""
    out = git(place, "rev-parse", "--git-path", name).decode("utf-8", "surrogateescape").strip()
    return os.path.normpath(os.path.join(place.worktree, out))


def is_commit(place: Place, oid: str) -> bool:
    """Whether `oid` names a commit here (a record may come from another clone)."""
    if not oid or not all(c in "0123456789abcdef" for c in oid):
        return False
    out = git(place, "cat-file", "-t", oid, ok=(0, 1, 128))
    return out.strip() == b"commit"


def divergence(place: Place, old: str, new: str) -> tuple[int, int] | None:
    """(commits in `new` not in `old`, commits in `old` not in `new`); None when either is unknown here."""
    if not (is_commit(place, old) and is_commit(place, new)):
        return None
    out = git(place, "rev-list", "--left-right", "--count", f"{new}...{old}", "--").split()
    return int(out[0]), int(out[1])


def commits_since(place: Place, old: str | None, new: str, limit: int) -> tuple[list[tuple[str, str]], int]:
    """Up to `limit` (short id, summary) of commits reachable from `new` but not `old`, newest first, and
    how many there are in all (counting stops at 10,000: enough to say "a lot")."""
    spec = [new] + ([f"^{old}"] if old else [])
    out = git(place, "log", "--format=%h%x00%s", "-n", str(limit), *spec, "--", ok=(0, 128))
    shown = []
    for line in out.decode("utf-8", "replace").splitlines():
        short, _, summary = line.partition("\0")
        shown.append((short[:7], summary))
    total = git(place, "rev-list", "--count", "--max-count=10000", *spec, "--", ok=(0, 128)).strip()
    return shown, int(total) if total.isdigit() else len(shown)
