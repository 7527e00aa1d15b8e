"""`majordomus init`: `.ai/config.yaml` and `.ai/profiles/` from the packaged template, never overwriting.

The committed `.ai` and `.ai/profiles`, and the machine-local `.ai/local`, are written only when none of
them is a symbolic link (design §2a): a link is refused (exit 12) before anything is written anywhere.
"""

from __future__ import annotations

import os
from importlib import resources

from majordomus.errors import EnvironmentProblem
from majordomus.lite.statepaths import AI_DIR, COMMITTED_FILE_MODE, CONFIG_RELPATH, PROFILES_RELPATH, linked_dir
from majordomus.store import files, paths
from majordomus.workspace import Workspace


def _template_files() -> list[tuple[str, bytes]]:
    """(path relative to the repository, content) of each template file."""
    root = resources.files("majordomus").joinpath("templates").joinpath("ai")
    out = [(CONFIG_RELPATH, root.joinpath("config.yaml").read_bytes())]
    for entry in sorted(root.joinpath("profiles").iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".md"):
            out.append((os.path.join(PROFILES_RELPATH, entry.name), entry.read_bytes()))
    return out


def _refuse_unreadable(base: str, rel: str) -> None:
    """Exit 12, before anything is written, when a template's path holds a symbolic link (dangling or not)
    or anything but a regular file: every command reads `.ai/` with no-link rules and would refuse it, so
    calling it kept would be a lie."""
    import stat

    target = os.path.join(base, rel)
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise EnvironmentProblem(f"cannot read {target}: {exc.strerror}; nothing was written",
                                 "check the directory's permissions, then run `majordomus init` again") from exc
    if stat.S_ISREG(mode):
        return
    what = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file"
    raise EnvironmentProblem(f"{target} is {what}, which majordomus never reads (a committed file is read with "
                             "no-link rules); nothing was written",
                             "replace it with the file itself, or remove it to get the template's, then run "
                             "`majordomus init` again")


def init(ws: Workspace) -> list[tuple[str, str]]:
    """Create what is missing; returns (path, 'created' | 'kept') for each template file."""
    base = ws.paths.config_root or ws.worktree
    link = linked_dir(base, os.path.join(base, PROFILES_RELPATH)) or linked_dir(base, ws.paths.local)
    if link is not None:
        raise EnvironmentProblem(f"{link} is a symbolic link; majordomus writes nothing through it",
                                 "replace the link with a real directory (or remove it), then run `majordomus "
                                 "init` again")
    for rel, _data in _template_files():
        _refuse_unreadable(base, rel)  # never "kept" for a file no command will read
    paths.check_readable(ws.paths)  # the state, too: refused before anything is written
    ai = os.path.join(base, AI_DIR)
    results = []
    try:
        paths.make_parent(os.path.join(base, PROFILES_RELPATH))  # never group- or world-writable (design §2a)
        for rel, data in _template_files():
            target = os.path.join(base, rel)
            # Linked in whole or not at all (never a torn file that a retry would keep), never replacing.
            _, created = files.link_in(os.path.dirname(target), os.path.basename(target), data,
                                       mode=COMMITTED_FILE_MODE)
            results.append((target, "created" if created else "kept"))
    except OSError as exc:
        raise EnvironmentProblem(f"cannot create {ai}: {exc.strerror}", "check the directory's permissions") from exc
    paths.ensure(ws.paths)
    return results
