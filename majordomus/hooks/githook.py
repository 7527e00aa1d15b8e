"""`hooks install|uninstall --runtime git`: a post-commit hook that keeps the checkpoint time fresh.

It goes where git runs hooks from (`core.hooksPath` honoured, e.g. Husky's `.husky/_`). An existing
post-commit hook is chained, not replaced: it is renamed to `post-commit.majordomus-chained` (bytes,
mode and all) and our hook runs it first with the same arguments. Uninstall renames it back, so the
original is byte-identical afterwards. The hook never fails a commit, even where majordomus is missing.
"""

from __future__ import annotations

import os
import stat
from typing import Any

from majordomus.hooks import agents as installers
from majordomus.errors import EnvironmentProblem, Refused

HOOK = "post-commit"
CHAINED = "post-commit.majordomus-chained"
MARKER = "# majordomus post-commit hook"
SCRIPT = f"""#!/bin/sh
{MARKER}: installed by `majordomus hooks install --runtime git`,
# removed by `majordomus hooks uninstall --runtime git` (which puts back the hook it chained, if any).
# It moves the active task's checkpoint time after each commit and never fails a commit,
# not even where majordomus is not installed.
status=0
chained="$(dirname "$0")/{CHAINED}"
if [ -x "$chained" ]; then
\t"$chained" "$@" || status=$?
fi
if command -v majordomus >/dev/null 2>&1; then
\tmajordomus check --checkpoint >/dev/null 2>&1 || :
fi
exit $status
""".encode("ascii")


def _lread(path: str) -> tuple[str, bytes | None]:
    """('absent'|'file'|'link'|'other', content of a regular file)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "absent", None
    if stat.S_ISLNK(st.st_mode):
        return "link", None
    if not stat.S_ISREG(st.st_mode):
        return "other", None
    with open(path, "rb") as fh:
        return "file", fh.read()


def _edited(path: str) -> Refused:
    return Refused(
        f"{path} is a majordomus hook edited since it was installed; nothing was written",
        "edit it by hand, or delete it and run `majordomus hooks install --runtime git` again",
    )


def _first_missing(path: str) -> str | None:
    """The outermost directory of `path` that does not exist yet (what makedirs will create first)."""
    missing = None
    while not os.path.isdir(path):
        missing = path
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return missing


def install(ws: Any, hooks_dir: str) -> installers.Result:
    target, chained = os.path.join(hooks_dir, HOOK), os.path.join(hooks_dir, CHAINED)
    if os.path.lexists(hooks_dir) and not os.path.isdir(hooks_dir):
        raise EnvironmentProblem(f"the hooks directory {hooks_dir} is not a directory", "check core.hooksPath")
    kind, data = _lread(target)
    if kind == "file" and data == SCRIPT:
        return installers.Result(target, [], "already")
    if kind == "file" and data is not None and MARKER.encode() in data:
        raise _edited(target)
    if kind == "other":
        raise Refused(f"{target} is not a file; nothing was written", "move it away, then try again")
    if kind != "absent" and os.path.lexists(chained):
        raise Refused(f"{chained} already exists, so {target} cannot be chained; nothing was written",
                      f"merge or remove {chained} by hand, then try again")
    created_top = _first_missing(hooks_dir)
    os.makedirs(hooks_dir, exist_ok=True)
    tmp = os.path.join(hooks_dir, f".{HOOK}.majordomus-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o700)
    with os.fdopen(fd, "wb") as fh:
        fh.write(SCRIPT)
    os.chmod(tmp, 0o755)
    if kind != "absent":
        os.rename(target, chained)  # a rename keeps the original's bytes, mode and link-ness
    os.rename(tmp, target)
    if created_top is not None:
        installers.save_receipt(ws, "git", target, {"version": 1, "path": target, "created_dir": created_top})
    return installers.Result(target, [HOOK], "chained" if kind != "absent" else "added")


def uninstall(ws: Any, hooks_dir: str) -> installers.Result:
    target, chained = os.path.join(hooks_dir, HOOK), os.path.join(hooks_dir, CHAINED)
    kind, data = _lread(target)
    ours = kind == "file" and data == SCRIPT
    if kind == "file" and not ours and data is not None and MARKER.encode() in data:
        raise _edited(target)
    if not ours and kind != "absent":
        return installers.Result(target, [], "absent")  # someone else's hook: not ours to remove
    if ours:
        os.unlink(target)
    how = "removed" if ours else "absent"
    if os.path.lexists(chained):
        os.rename(chained, target)
        how = "restored"
    receipt = installers.load_receipt(ws, "git", target)
    top = receipt.get("created_dir") if receipt is not None else None
    if isinstance(top, str) and (hooks_dir == top or hooks_dir.startswith(top.rstrip(os.sep) + os.sep)):
        directory = hooks_dir
        while True:  # the directories install created, innermost first, as long as they are empty
            try:
                os.rmdir(directory)
            except OSError:
                break  # not empty: other hooks live there now
            if directory == top:
                break
            directory = os.path.dirname(directory)
    installers.drop_receipt(ws, "git", target)
    return installers.Result(target, [HOOK] if how != "absent" else [], how)
