"""`hooks install|uninstall --runtime git`: a post-commit hook that keeps the checkpoint time fresh.

It goes where git runs hooks from (`core.hooksPath` honoured, e.g. Husky's `.husky/_`). An existing
post-commit hook is chained, not replaced: it is renamed to `post-commit.majordomus-chained` (bytes,
mode and all) and our hook runs it first with the same arguments, stdin and `$0` (see `runner_for`).
Uninstall renames it back, so the original is byte-identical afterwards. The hook never fails a commit, even where majordomus is missing.
"""

from __future__ import annotations

import os
import stat
from typing import Any

from majordomus.errors import EnvironmentProblem, Refused
from majordomus.hooks import installers
from majordomus.lite import safeio

HOOK = "post-commit"
CHAINED = "post-commit.majordomus-chained"
MARKER = "# majordomus post-commit hook"
_SHELLS = ("sh", "bash", "dash", "zsh", "ksh", "ash")


def script(runner: str) -> bytes:
    """Our post-commit hook; `runner` is the line that runs the hook it chains (see `runner_for`)."""
    return f"""#!/bin/sh
{MARKER}: installed by `majordomus hooks install --runtime git`,
# removed by `majordomus hooks uninstall --runtime git` (which puts back the hook it chained, if any).
# It moves the active task's checkpoint time after each commit and never fails a commit,
# not even where majordomus is not installed.
status=0
chained="$(dirname "$0")/{CHAINED}"
if [ -x "$chained" ]; then
\t{runner} || status=$?
fi
if command -v majordomus >/dev/null 2>&1; then
\tmajordomus check --checkpoint >/dev/null 2>&1 || :
fi
exit $status
""".encode("ascii")


PLAIN_RUNNER = '"$chained" "$@"'


def runner_for(chained: bytes | None) -> str:
    """How the chained hook runs so that it sees what git gave it: the same arguments, stdin, and `$0`.

    Hook managers such as Husky v9 dispatch on `basename "$0"` and find their helpers beside `$0`, so a
    shell hook is sourced by its own shell with `$0` set to this hook's path (`sh -c '. FILE' "$0" ARGS`);
    any other program is run as it is (it does not read a shell's `$0`)."""
    if chained is None:
        return PLAIN_RUNNER
    first = chained.split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    words = first[2:].split() if first.startswith("#!") else ["/bin/sh"]
    if words and os.path.basename(words[0]) == "env":
        words = words[:2]  # `env sh`: the shell; `env -S …` is not a plain shell line
    if not words or os.path.basename(words[-1]) not in _SHELLS or not all(_plain(w) for w in words):
        return PLAIN_RUNNER
    return f"MAJORDOMUS_CHAINED=\"$chained\" {' '.join(words)} -c '. \"$MAJORDOMUS_CHAINED\"' \"$0\" \"$@\""


def _plain(word: str) -> bool:
    return bool(word) and all(c.isalnum() or c in "/._-" for c in word)


SCRIPT = script(PLAIN_RUNNER)  # what a hook with nothing to chain looks like


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
    return "file", safeio.read(path, 1 << 20)


def _expected(chained: str) -> bytes:
    """Our hook as install wrote it, given the hook it chains (if any)."""
    kind, data = _lread(chained)
    return script(runner_for(data) if kind == "file" else PLAIN_RUNNER)


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


# ---------------------------------------------------------------- Husky v9 (design §12)
# Husky's `husky` command (its `prepare` script, at every `npm install`) rewrites each `.husky/_/<hook>` as
# `#!/usr/bin/env sh` + `. "$(dirname "$0")/h"`, and `h` runs `sh -e .husky/<hook>` when that file exists.
# `.husky/_` is git-ignored and regenerated; `.husky/post-commit` is where Husky users keep the hook, committed.

HUSKY_BEGIN = "# >>> majordomus post-commit hook: installed by `majordomus hooks install --runtime git`"
HUSKY_END = "# <<< majordomus post-commit hook (removed by `majordomus hooks uninstall --runtime git`)"
HUSKY_BLOCK = (f"{HUSKY_BEGIN}\n"
               "# Moves the active task's checkpoint time after each commit; never fails a commit (Husky runs\n"
               "# this file with `sh -e`), not even where majordomus is not installed.\n"
               "if command -v majordomus >/dev/null 2>&1; then majordomus check --checkpoint >/dev/null 2>&1 || :; fi\n"
               f"{HUSKY_END}\n")
_HUSKY_STUB = b'. "$(dirname "$0")/h"'


def husky_dir(ws: Any, hooks_dir: str) -> str | None:
    """`.husky` when git runs hooks from Husky v9's `.husky/_` (its dispatcher `h` beside them), else None."""
    real = os.path.realpath(hooks_dir)
    if os.path.basename(real) != "_" or os.path.basename(os.path.dirname(real)) != ".husky":
        return None
    if not os.path.isfile(os.path.join(real, "h")):
        return None
    return os.path.dirname(real)


def _stale_chained(hooks_dir: str) -> str | None:
    """A `post-commit.majordomus-chained` that an earlier install left in `.husky/_` and Husky's
    regeneration orphaned: our hook there is gone, and the parked file is Husky's own stub."""
    target, chained = os.path.join(hooks_dir, HOOK), os.path.join(hooks_dir, CHAINED)
    kind, data = _lread(chained)
    if kind != "file" or data is None or _HUSKY_STUB not in data:
        return None
    _, current = _lread(target)
    if current is not None and MARKER.encode() in current:
        return None  # still our chaining hook: the plain uninstall puts it back
    return chained


def _husky_install(ws: Any, hooks_dir: str, husky: str) -> installers.Result:
    target = os.path.join(husky, HOOK)
    kind, data = _lread(target)
    if kind not in ("absent", "file"):
        raise Refused(f"{target} is not a file; nothing was written", "move it away, then try again")
    stale = _stale_chained(hooks_dir)
    text = (data or b"").decode("utf-8", "replace")
    if HUSKY_BLOCK in text:
        if stale is not None:
            os.unlink(stale)
        _receipt(ws, target, kind == "absent" and data is None)
        return installers.Result(target, [], "already")
    if HUSKY_BEGIN in text:
        raise _edited(target)
    joined = text + ("" if not text or text.endswith("\n") else "\n") + HUSKY_BLOCK
    tmp = os.path.join(husky, f".{HOOK}.majordomus-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(joined.encode("utf-8"))
    os.chmod(tmp, (os.lstat(target).st_mode & 0o7777) if kind == "file" else 0o755)
    os.rename(tmp, target)
    if stale is not None:
        os.unlink(stale)  # Husky's own stub, parked by an earlier install into .husky/_: Husky rewrote it
    installers.save_receipt(ws, "git", target, {"version": 1, "path": target, "husky": True,
                                                "created_file": kind == "absent"})
    return installers.Result(target, [HOOK], "added")


def _receipt(ws: Any, target: str, created: bool) -> None:
    if installers.load_receipt(ws, "git", target) is None:
        installers.save_receipt(ws, "git", target, {"version": 1, "path": target, "husky": True,
                                                    "created_file": created})


def _husky_uninstall(ws: Any, hooks_dir: str, husky: str) -> installers.Result:
    target = os.path.join(husky, HOOK)
    kind, data = _lread(target)
    stale = _stale_chained(hooks_dir)
    if stale is not None:
        os.unlink(stale)
    text = (data or b"").decode("utf-8", "replace")
    if kind != "file" or HUSKY_BLOCK not in text:
        if HUSKY_BEGIN in text:
            raise _edited(target)
        installers.drop_receipt(ws, "git", target)
        return installers.Result(target, [HOOK] if stale else [], "removed" if stale else "absent")
    rest = text.replace(HUSKY_BLOCK, "", 1)
    receipt = installers.load_receipt(ws, "git", target) or {}
    if not rest.strip() and receipt.get("created_file"):
        os.unlink(target)
    else:
        tmp = os.path.join(husky, f".{HOOK}.majordomus-{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(rest.encode("utf-8"))
        os.chmod(tmp, os.lstat(target).st_mode & 0o7777)
        os.rename(tmp, target)
    installers.drop_receipt(ws, "git", target)
    return installers.Result(target, [HOOK], "removed")


def runs_majordomus(path: str) -> bool:
    """Whether the hook file at `path` still runs majordomus (what doctor's `hooks.missing` checks)."""
    try:
        kind, data = _lread(path)
    except (OSError, safeio.EnvironmentProblem):
        return False
    return kind == "file" and data is not None and b"majordomus check --checkpoint" in data


def install(ws: Any, hooks_dir: str) -> installers.Result:
    husky = husky_dir(ws, hooks_dir)
    if husky is not None:
        return _husky_install(ws, hooks_dir, husky)
    target, chained = os.path.join(hooks_dir, HOOK), os.path.join(hooks_dir, CHAINED)
    if os.path.lexists(hooks_dir) and not os.path.isdir(hooks_dir):
        raise EnvironmentProblem(f"the hooks directory {hooks_dir} is not a directory", "check core.hooksPath")
    kind, data = _lread(target)
    if kind == "file" and data == _expected(chained):
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
        fh.write(script(runner_for(data if kind == "file" else None)))
    os.chmod(tmp, 0o755)
    if kind != "absent":
        os.rename(target, chained)  # a rename keeps the original's bytes, mode and link-ness
    os.rename(tmp, target)
    installers.save_receipt(ws, "git", target, {"version": 1, "path": target, "created_dir": created_top})
    return installers.Result(target, [HOOK], "chained" if kind != "absent" else "added")


def uninstall(ws: Any, hooks_dir: str) -> installers.Result:
    husky = husky_dir(ws, hooks_dir)
    if husky is not None:
        return _husky_uninstall(ws, hooks_dir, husky)
    target, chained = os.path.join(hooks_dir, HOOK), os.path.join(hooks_dir, CHAINED)
    kind, data = _lread(target)
    ours = kind == "file" and data == _expected(chained)
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
