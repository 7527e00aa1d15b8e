"""`hooks install|uninstall --runtime git`: git's post-commit and post-rewrite hooks (design §12, §21).

post-commit keeps the checkpoint time fresh; post-rewrite records each amend and rebase's old → new
mapping (`majordomus hook rewrite`). Both go where git runs hooks from (`core.hooksPath` honoured, e.g.
Husky's `.husky/_`), by one code path over a `Hook`. An existing hook is chained, not replaced: it is
renamed to `<hook>.majordomus-chained` (bytes, mode and all) and our hook runs it first with the same
arguments, stdin and `$0` (see `runner_for`). Uninstall renames it back, so the original is byte-identical
afterwards. A hook never fails a commit or a rebase, even where majordomus is missing.
"""

from __future__ import annotations

import os
import stat
from typing import Any

from majordomus.errors import EnvironmentProblem, Refused
from majordomus.hooks import installers
from majordomus.lite import safeio

_SHELLS = ("sh", "bash", "dash", "zsh", "ksh", "ash")


class Hook:
    """One git hook of ours: its name, the majordomus command it runs, and whether git gives it stdin."""

    __slots__ = ("command", "name", "purpose", "stdin")

    def __init__(self, name: str, command: str, purpose: str, stdin: bool) -> None:
        self.name, self.command, self.purpose, self.stdin = name, command, purpose, stdin

    @property
    def chained(self) -> str:
        return f"{self.name}.majordomus-chained"

    @property
    def marker(self) -> str:
        return f"# majordomus {self.name} hook"

    @property
    def husky_begin(self) -> str:
        return f"# >>> majordomus {self.name} hook: installed by `majordomus hooks install --runtime git`"

    @property
    def husky_end(self) -> str:
        return f"# <<< majordomus {self.name} hook (removed by `majordomus hooks uninstall --runtime git`)"


POST_COMMIT = Hook("post-commit", "majordomus check --checkpoint",
                   "moves the active task's checkpoint time after each commit", stdin=False)
# git gives post-rewrite `amend` or `rebase` as $1 and `<old> <new>` lines on stdin (githooks(5)).
POST_REWRITE = Hook("post-rewrite", 'majordomus hook rewrite "$1"',
                    "records each amend or rebase's old -> new commit ids (a `git.rewrite` event)", stdin=True)
HOOKS = (POST_COMMIT, POST_REWRITE)  # installed in this order, removed in the reverse one

# The post-commit names as they were before post-rewrite joined it (callers and tests use them).
HOOK, CHAINED, MARKER = POST_COMMIT.name, POST_COMMIT.chained, POST_COMMIT.marker


def script(runner: str, hook: Hook = POST_COMMIT) -> bytes:
    """Our hook; `runner` is the line that runs the hook it chains (see `runner_for`). A hook that git gives
    stdin keeps it once (bounded by what git sends), for the chained hook and for majordomus alike."""
    if hook.stdin:
        keep = 'input="$(cat 2>/dev/null)"\n'
        chained_run = f"printf '%s\\n' \"$input\" | {runner} || status=$?"
        ours = f"printf '%s\\n' \"$input\" | {hook.command} >/dev/null 2>&1 || :"
    else:
        keep, chained_run, ours = "", f"{runner} || status=$?", f"{hook.command} >/dev/null 2>&1 || :"
    return f"""#!/bin/sh
{hook.marker}: installed by `majordomus hooks install --runtime git`,
# removed by `majordomus hooks uninstall --runtime git` (which puts back the hook it chained, if any).
# It {hook.purpose} and never fails the git command that runs it,
# not even where majordomus is not installed.
status=0
{keep}chained="$(dirname "$0")/{hook.chained}"
if [ -x "$chained" ]; then
\t{chained_run}
fi
if command -v majordomus >/dev/null 2>&1; then
\t{ours}
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


SCRIPT = script(PLAIN_RUNNER)  # what a post-commit hook with nothing to chain looks like


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


def _expected(chained: str, hook: Hook) -> bytes:
    """Our hook as install wrote it, given the hook it chains (if any)."""
    kind, data = _lread(chained)
    return script(runner_for(data) if kind == "file" else PLAIN_RUNNER, hook)


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


def _replace(directory: str, target: str, data: bytes, mode: int) -> None:
    """Write `data` to `target` by a temporary file renamed over it (a reader sees one or the other)."""
    tmp = os.path.join(directory, f".{os.path.basename(target)}.majordomus-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.chmod(tmp, mode)
    os.rename(tmp, target)


# ---------------------------------------------------------------- Husky v9 (design §12)
# Husky's `husky` command (its `prepare` script, at every `npm install`) rewrites each `.husky/_/<hook>` as
# `#!/usr/bin/env sh` + `. "$(dirname "$0")/h"`, and `h` runs `sh -e .husky/<hook>` when that file exists
# (stdin and arguments passed on). `.husky/_` is git-ignored and regenerated; `.husky/post-commit` and
# `.husky/post-rewrite` are where Husky users keep their hooks, committed.

def husky_block(hook: Hook) -> str:
    return (f"{hook.husky_begin}\n"
            f"# It {hook.purpose}; never fails the git command (Husky runs\n"
            "# this file with `sh -e`), not even where majordomus is not installed.\n"
            f"if command -v majordomus >/dev/null 2>&1; then {hook.command} >/dev/null 2>&1 || :; fi\n"
            f"{hook.husky_end}\n")


HUSKY_BEGIN, HUSKY_END, HUSKY_BLOCK = POST_COMMIT.husky_begin, POST_COMMIT.husky_end, husky_block(POST_COMMIT)
_HUSKY_STUB = b'. "$(dirname "$0")/h"'


def husky_dir(ws: Any, hooks_dir: str) -> str | None:
    """`.husky` when git runs hooks from Husky v9's `.husky/_` (its dispatcher `h` beside them), else None."""
    real = os.path.realpath(hooks_dir)
    if os.path.basename(real) != "_" or os.path.basename(os.path.dirname(real)) != ".husky":
        return None
    if not os.path.isfile(os.path.join(real, "h")):
        return None
    return os.path.dirname(real)


def _stale_chained(hooks_dir: str, hook: Hook) -> str | None:
    """A `<hook>.majordomus-chained` that an earlier install left in `.husky/_` and Husky's
    regeneration orphaned: our hook there is gone, and the parked file is Husky's own stub."""
    target, chained = os.path.join(hooks_dir, hook.name), os.path.join(hooks_dir, hook.chained)
    kind, data = _lread(chained)
    if kind != "file" or data is None or _HUSKY_STUB not in data:
        return None
    _, current = _lread(target)
    if current is not None and hook.marker.encode() in current:
        return None  # still our chaining hook: the plain uninstall puts it back
    return chained


class _Plan:
    """What install or uninstall will do to one hook, decided (and refused) before anything is written."""

    __slots__ = ("chained", "data", "hook", "kind", "target")

    def __init__(self, hook: Hook, target: str, chained: str, kind: str, data: bytes | None) -> None:
        self.hook, self.target, self.chained, self.kind, self.data = hook, target, chained, kind, data


def _husky_plan(husky: str, hook: Hook, installing: bool) -> _Plan:
    target = os.path.join(husky, hook.name)
    kind, data = _lread(target)
    if installing and kind not in ("absent", "file"):
        raise Refused(f"{target} is not a file; nothing was written", "move it away, then try again")
    text = (data or b"").decode("utf-8", "replace")
    if hook.husky_begin in text and husky_block(hook) not in text:
        raise _edited(target)
    return _Plan(hook, target, "", kind, data)


def _husky_install(ws: Any, hooks_dir: str, plan: _Plan) -> installers.Result:
    hook, target, kind, data = plan.hook, plan.target, plan.kind, plan.data
    stale = _stale_chained(hooks_dir, hook)
    text = (data or b"").decode("utf-8", "replace")
    block = husky_block(hook)
    if block in text:
        if stale is not None:
            os.unlink(stale)
        _receipt(ws, target, kind == "absent" and data is None)
        return installers.Result(target, [], "already")
    joined = text + ("" if not text or text.endswith("\n") else "\n") + block
    _replace(os.path.dirname(target), target, joined.encode("utf-8"),
             (os.lstat(target).st_mode & 0o7777) if kind == "file" else 0o755)
    if stale is not None:
        os.unlink(stale)  # Husky's own stub, parked by an earlier install into .husky/_: Husky rewrote it
    installers.save_receipt(ws, "git", target, {"version": 1, "path": target, "husky": True,
                                                "created_file": kind == "absent"})
    return installers.Result(target, [hook.name], "added")


def _receipt(ws: Any, target: str, created: bool) -> None:
    if installers.load_receipt(ws, "git", target) is None:
        installers.save_receipt(ws, "git", target, {"version": 1, "path": target, "husky": True,
                                                    "created_file": created})


def _husky_uninstall(ws: Any, hooks_dir: str, plan: _Plan) -> installers.Result:
    hook, target, kind, data = plan.hook, plan.target, plan.kind, plan.data
    stale = _stale_chained(hooks_dir, hook)
    if stale is not None:
        os.unlink(stale)
    text = (data or b"").decode("utf-8", "replace")
    block = husky_block(hook)
    if kind != "file" or block not in text:
        installers.drop_receipt(ws, "git", target)
        return installers.Result(target, [hook.name] if stale else [], "removed" if stale else "absent")
    rest = text.replace(block, "", 1)
    receipt = installers.load_receipt(ws, "git", target) or {}
    if not rest.strip() and receipt.get("created_file"):
        os.unlink(target)
    else:
        _replace(os.path.dirname(target), target, rest.encode("utf-8"), os.lstat(target).st_mode & 0o7777)
    installers.drop_receipt(ws, "git", target)
    return installers.Result(target, [hook.name], "removed")


def runs_majordomus(path: str) -> bool:
    """Whether the hook file at `path` still runs majordomus (what doctor's `hooks.missing` checks)."""
    try:
        kind, data = _lread(path)
    except (OSError, safeio.EnvironmentProblem):
        return False
    return kind == "file" and data is not None and any(h.command.encode() in data for h in HOOKS)


# ---------------------------------------------------------------- a plain hooks directory


def _plain_plan(hooks_dir: str, hook: Hook, installing: bool) -> _Plan:
    target, chained = os.path.join(hooks_dir, hook.name), os.path.join(hooks_dir, hook.chained)
    kind, data = _lread(target)
    ours = kind == "file" and data == _expected(chained, hook)
    if not ours and kind == "file" and data is not None and hook.marker.encode() in data:
        raise _edited(target)
    if installing and not ours:
        if kind == "other":
            raise Refused(f"{target} is not a file; nothing was written", "move it away, then try again")
        if kind != "absent" and os.path.lexists(chained):
            raise Refused(f"{chained} already exists, so {target} cannot be chained; nothing was written",
                          f"merge or remove {chained} by hand, then try again")
    return _Plan(hook, target, chained, "ours" if ours else kind, data)


def _plain_install(ws: Any, hooks_dir: str, plan: _Plan) -> installers.Result:
    hook, target, chained, kind, data = plan.hook, plan.target, plan.chained, plan.kind, plan.data
    if kind == "ours":
        return installers.Result(target, [], "already")
    created_top = _first_missing(hooks_dir)
    os.makedirs(hooks_dir, exist_ok=True)
    tmp = os.path.join(hooks_dir, f".{hook.name}.majordomus-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o700)
    with os.fdopen(fd, "wb") as fh:
        fh.write(script(runner_for(data if kind == "file" else None), hook))
    os.chmod(tmp, 0o755)
    if kind != "absent":
        os.rename(target, chained)  # a rename keeps the original's bytes, mode and link-ness
    os.rename(tmp, target)
    installers.save_receipt(ws, "git", target, {"version": 1, "path": target, "created_dir": created_top})
    return installers.Result(target, [hook.name], "chained" if kind != "absent" else "added")


def _plain_uninstall(ws: Any, hooks_dir: str, plan: _Plan) -> installers.Result:
    hook, target, chained = plan.hook, plan.target, plan.chained
    ours = plan.kind == "ours"
    if not ours and plan.kind != "absent":
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
    return installers.Result(target, [hook.name] if how != "absent" else [], how)


# ---------------------------------------------------------------- install and uninstall, every hook


def install(ws: Any, hooks_dir: str) -> list[installers.Result]:
    """Install every hook of `HOOKS`; each is checked before any is written, so a refusal writes nothing."""
    husky = husky_dir(ws, hooks_dir)
    if husky is not None:
        plans = [_husky_plan(husky, hook, True) for hook in HOOKS]
        return [_husky_install(ws, hooks_dir, plan) for plan in plans]
    if os.path.lexists(hooks_dir) and not os.path.isdir(hooks_dir):
        raise EnvironmentProblem(f"the hooks directory {hooks_dir} is not a directory", "check core.hooksPath")
    plans = [_plain_plan(hooks_dir, hook, True) for hook in HOOKS]
    return [_plain_install(ws, hooks_dir, plan) for plan in plans]


def uninstall(ws: Any, hooks_dir: str) -> list[installers.Result]:
    """Remove every hook of `HOOKS` (newest first, so the directory install created goes last)."""
    husky = husky_dir(ws, hooks_dir)
    if husky is not None:
        plans = [_husky_plan(husky, hook, False) for hook in reversed(HOOKS)]
        return [_husky_uninstall(ws, hooks_dir, plan) for plan in plans][::-1]
    plans = [_plain_plan(hooks_dir, hook, False) for hook in reversed(HOOKS)]
    return [_plain_uninstall(ws, hooks_dir, plan) for plan in plans][::-1]
