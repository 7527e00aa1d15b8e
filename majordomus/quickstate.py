"""The active task and two journal limits, found from plain files: no pygit2, no yaml, no click.

`hook compact` runs at every compaction of an agent session and must start as fast as the interpreter
allows, so it cannot afford `import pygit2` (git.py) or `import yaml` (config.py). This module answers the
three questions it has from the files themselves, the same way git.py and paths.py answer them:

- which worktree and branch we are in: walk up to `.git` (a directory, or a file `gitdir: …` in a linked
  worktree), read `HEAD`, follow `commondir` to the main repository, and read `core.bare` /
  `core.worktree` from its `config` to find the main worktree (None when it is bare);
- where the state lives: `<main worktree>/.ai/local/state`, or `<common dir>/majordomus/local/state`
  when the main worktree is bare (SPEC §2);
- which task is active here: `state/active.json`, keyed by `json.dumps([worktree, branch])`.

`journal_limits` reads `journal.rotate_bytes` and `journal.line_max_bytes` from `.ai/config.yaml` with
a deliberately tiny parser (see its docstring). Tests compare every answer with git.py/config.py.
"""

from __future__ import annotations

import json
import os
import re
import stat
TYPE_CHECKING = False  # annotations only: `hook compact` pays for every import
if TYPE_CHECKING:
    from typing import Optional

TASK_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")  # the same rule as tasks.TASK_ID
JOURNAL_DEFAULTS = {"line_max_bytes": 16384, "rotate_bytes": 1048576}  # as config.DEFAULTS["journal"]
_CONFIG_READ_MAX = 1 << 20


class Place:
    """Where we are: the worktree, its branch, the state directory and where the config is looked for."""

    __slots__ = ("worktree", "branch", "state_root", "config_root")

    def __init__(self, worktree: str, branch: Optional[str], state_root: str, config_root: Optional[str]) -> None:
        self.worktree = worktree
        self.branch = branch
        self.state_root = state_root  # .../local/state
        self.config_root = config_root  # where .ai/config.yaml is looked for

    def __repr__(self) -> str:
        return f"Place({self.worktree!r}, {self.branch!r}, {self.state_root!r}, {self.config_root!r})"


def _read_text(path: str, limit: int = 65536) -> Optional[str]:
    try:
        with open(path, "rb") as fh:
            return fh.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def _gitdir_of(dotgit: str) -> Optional[str]:
    """The git directory a `.git` entry names, or None when it is not a usable one."""
    try:
        st = os.stat(dotgit)
    except OSError:
        return None
    if stat.S_ISDIR(st.st_mode):
        gitdir = dotgit
    elif stat.S_ISREG(st.st_mode):
        text = _read_text(dotgit, 4096) or ""
        if not text.startswith("gitdir:"):
            return None
        target = text[len("gitdir:"):].strip()
        gitdir = os.path.join(os.path.dirname(dotgit), target)
    else:
        return None
    gitdir = os.path.realpath(gitdir)
    return gitdir if os.path.isfile(os.path.join(gitdir, "HEAD")) else None


def _core_config(common_dir: str) -> dict[str, str]:
    """`core.*` of a repository's own config file (section and keys are case-insensitive in git)."""
    text = _read_text(os.path.join(common_dir, "config"))
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


def _is_true(value: Optional[str]) -> bool:
    return value is not None and value.lower() in ("true", "yes", "on", "1", "")


def locate(start: str) -> Optional[Place]:
    """Worktree, branch and state location around `start`; None outside a git work tree."""
    path = os.path.realpath(start)
    while True:
        gitdir = _gitdir_of(os.path.join(path, ".git"))
        if gitdir is not None:
            break
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent
    worktree = path
    head = (_read_text(os.path.join(gitdir, "HEAD"), 4096) or "").strip()
    branch = head[len("ref: refs/heads/"):] if head.startswith("ref: refs/heads/") else None
    common = gitdir
    commondir = _read_text(os.path.join(gitdir, "commondir"), 4096)
    if commondir is not None:
        common = os.path.normpath(os.path.join(gitdir, commondir.strip()))
    if common == os.path.normpath(gitdir):
        main: Optional[str] = worktree
    else:
        # As libgit2 decides for the main repository: bare when core.bare says so, else core.worktree,
        # else the directory that holds the common git directory.
        core = _core_config(common)
        if _is_true(core.get("bare")):
            main = None
        elif core.get("worktree"):
            main = os.path.realpath(os.path.join(common, core["worktree"]))
        else:
            main = os.path.dirname(os.path.realpath(common))
    if main is not None:
        local, config_root = os.path.join(main, ".ai", "local"), main
    else:
        local, config_root = os.path.join(common, "majordomus", "local"), worktree
    return Place(worktree, branch, os.path.join(local, "state"), config_root)


def active_task(place: Place) -> Optional[str]:
    """The id of the task active in this worktree and branch, from `state/active.json`; None if none."""
    try:
        fd = os.open(os.path.join(place.state_root, "active.json"), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            index = json.loads(fh.read(1 << 20))
    except (OSError, ValueError):
        return None
    if not isinstance(index, dict):
        return None
    task_id = index.get(json.dumps([place.worktree, place.branch]))
    # The id becomes a path component: anything but a valid task id is ignored, never followed.
    return task_id if isinstance(task_id, str) and TASK_ID.match(task_id) else None


_SECTION = re.compile(r"^journal[ \t]*:[ \t]*(?:#.*)?$")
_FLOW = re.compile(r"^journal[ \t]*:[ \t]*\{(?P<body>[^{}]*)\}[ \t]*(?:#.*)?$")
_ENTRY = re.compile(r"""^(?P<q>["']?)(?P<key>[A-Za-z_]+)(?P=q)[ \t]*:[ \t]*(?P<value>[^#]*?)[ \t]*(?:#.*)?$""")
_INT = re.compile(r"^\+?[0-9][0-9_]*$")


def _int_or_none(text: str) -> Optional[int]:
    return int(text.replace("_", "")) if _INT.match(text) else None


def parse_journal_limits(text: str) -> dict[str, int]:
    """`journal.rotate_bytes` and `journal.line_max_bytes` from the text of `.ai/config.yaml`.

    Understood: the block form the template uses (a top-level `journal:` line, then indented
    `key: value  # comment` lines) and the one-line flow form `journal: {rotate_bytes: 4096}`.
    Values are plain whole numbers (`_` separators allowed). A value this parser cannot read as a
    whole number of zero or more keeps its default here; `majordomus doctor` and every other command
    read the file with a real YAML parser and report the error.
    """
    found: dict[str, int] = {}
    entries: list[str] = []
    in_section = False
    for raw in text.lstrip("\ufeff").splitlines():
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        if raw[0] in " \t":
            if in_section:
                entries.append(raw.strip())
            continue
        in_section = bool(_SECTION.match(raw))
        flow = _FLOW.match(raw)
        if flow:
            entries.extend(part.strip() for part in flow.group("body").split(","))
    for entry in entries:
        match = _ENTRY.match(entry)
        if match and match.group("key") in JOURNAL_DEFAULTS:
            value = _int_or_none(match.group("value"))
            if value is not None:
                found[match.group("key")] = value
            else:
                found.pop(match.group("key"), None)
    return {key: found.get(key, default) for key, default in JOURNAL_DEFAULTS.items()}


def journal_limits(config_root: Optional[str]) -> dict[str, int]:
    if config_root is None:
        return dict(JOURNAL_DEFAULTS)
    text = _read_text(os.path.join(config_root, ".ai", "config.yaml"), _CONFIG_READ_MAX)
    return parse_journal_limits(text) if text is not None else dict(JOURNAL_DEFAULTS)
