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
from typing import Any

from majordomus.errors import EnvironmentProblem, Refused, rerun
from majordomus.hooks import husky, installers
from majordomus.hooks.gitfiles import (
    HOOKS,
    POST_COMMIT,
    Hook,
    NotWritten,
    Plan,
    edited,
    lread,
    unlink_quietly,
    write_temp,
)
from majordomus.lite import safeio

__all__ = ["HOOKS", "SCRIPT", "install", "runner_for", "runs_majordomus", "uninstall"]

_SHELLS = ("sh", "bash", "dash", "zsh", "ksh", "ash")


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


def _expected(chained: str, hook: Hook) -> bytes:
    """Our hook as install wrote it, given the hook it chains (if any)."""
    kind, data = lread(chained)
    return script(runner_for(data) if kind == "file" else PLAIN_RUNNER, hook)


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


def runs_majordomus(path: str) -> bool:
    """Whether the hook file at `path` still runs majordomus (what doctor's `hooks.missing` checks)."""
    try:
        kind, data = lread(path)
    except (OSError, safeio.EnvironmentProblem):
        return False
    if kind != "file" or data is None:
        return False
    reached = husky.reachable(data.decode("utf-8", "replace"))  # `.husky/<hook>`: where the shell reaches it
    if reached is not None:
        return reached
    return any(h.command.encode() in data for h in HOOKS)


# ---------------------------------------------------------------- a plain hooks directory


def _plain_plan(hooks_dir: str, hook: Hook, installing: bool) -> Plan:
    target, chained = os.path.join(hooks_dir, hook.name), os.path.join(hooks_dir, hook.chained)
    kind, data = lread(target)
    ours = kind == "file" and data == _expected(chained, hook)
    if not ours and kind == "file" and data is not None and hook.marker.encode() in data:
        raise edited(target)
    if installing and not ours:
        if kind == "other":
            raise Refused(f"{target} is not a file; nothing was written", "move it away, then try again")
        if kind != "absent" and os.path.lexists(chained):
            raise Refused(f"{chained} already exists, so {target} cannot be chained; nothing was written",
                          f"merge or remove {chained} by hand, then try again")
    return Plan(hook, target, chained, "ours" if ours else kind, data)


def _plain_install(ws: Any, hooks_dir: str, plan: Plan) -> installers.Result:
    hook, target, chained, kind, data = plan.hook, plan.target, plan.chained, plan.kind, plan.data
    if kind == "ours":
        return installers.Result(target, [], "already")
    created_top = _first_missing(hooks_dir)
    try:
        os.makedirs(hooks_dir, exist_ok=True)
    except OSError as exc:
        raise NotWritten(hooks_dir, exc) from exc
    tmp = write_temp(hooks_dir, target, script(runner_for(data if kind == "file" else None), hook), 0o755)
    # The user's hook moves aside (a rename keeps its bytes, mode and link-ness) only for ours to take its
    # place at once; if that fails, it moves back: a failure never leaves the directory without it.
    try:
        if kind != "absent":
            os.rename(target, chained)
        try:
            os.rename(tmp, target)
        except OSError:
            if kind != "absent":
                os.rename(chained, target)
            raise
    except OSError as exc:
        unlink_quietly(tmp)
        raise NotWritten(target, exc) from exc
    installers.save_receipt(ws, "git", target, {"version": 1, "path": target, "created_dir": created_top})
    return installers.Result(target, [hook.name], "chained" if kind != "absent" else "added")


def _plain_uninstall(ws: Any, hooks_dir: str, plan: Plan) -> installers.Result:
    hook, target, chained = plan.hook, plan.target, plan.chained
    ours = plan.kind == "ours"
    if not ours and plan.kind != "absent":
        installers.drop_receipt(ws, "git", target)  # a receipt an interrupted uninstall left: nothing of ours here
        return installers.Result(target, [], "absent")  # someone else's hook: not ours to remove
    how = "removed" if ours else "absent"
    try:
        if os.path.lexists(chained):
            os.rename(chained, target)  # over ours at once: the user's hook is never missing in between
            how = "restored"
        elif ours:
            os.unlink(target)
    except OSError as exc:
        raise NotWritten(target, exc) from exc
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


def _refuse_links_in_the_work_tree(ws: Any, hooks_dir: str) -> None:
    """A hooks directory reached through a symbolic link in the work tree (a committed `.husky` that links
    elsewhere) is never written through: the link could lead anywhere on this machine. One that
    core.hooksPath names outside the work tree, or under `.git`, is where the user or git put it."""
    rel = os.path.relpath(os.path.abspath(hooks_dir), ws.worktree)
    parts = rel.split(os.sep)
    if parts[0] in ("..", ".git", "."):
        return
    path = ws.worktree
    for part in parts:
        path = os.path.join(path, part)
        if os.path.islink(path):
            raise EnvironmentProblem(
                f"{path} is a symbolic link: the hooks directory {hooks_dir} is reached through it, and majordomus "
                "does not write through a link in the work tree (it could lead anywhere); nothing was written",
                "replace the link with a real directory, or point core.hooksPath at the real one")


def install(ws: Any, hooks_dir: str) -> list[installers.Result]:
    """Install every hook of `HOOKS`; each is checked before any is written, so a refusal writes nothing."""
    _refuse_links_in_the_work_tree(ws, hooks_dir)
    committed = husky.husky_dir(hooks_dir)
    if committed is not None:
        plans = [husky.plan(committed, hook, True) for hook in HOOKS]
        return _each(plans, lambda plan: husky.install(ws, hooks_dir, plan))
    if os.path.lexists(hooks_dir) and not os.path.isdir(hooks_dir):
        raise EnvironmentProblem(f"the hooks directory {hooks_dir} is not a directory", "check core.hooksPath")
    plans = [_plain_plan(hooks_dir, hook, True) for hook in HOOKS]
    return _each(plans, lambda plan: _plain_install(ws, hooks_dir, plan))


def _each(plans: list[Plan], step: Any) -> list[installers.Result]:
    """`step` of each plan in turn. One that fails after others were installed says so: those are in place
    (the one that failed is as it was), and the same command again installs the rest."""
    done: list[installers.Result] = []
    for plan in plans:
        try:
            done.append(step(plan))
        except EnvironmentProblem as exc:
            landed = [os.path.basename(r.path) for r in done if r.how != "already"]
            if landed:
                if isinstance(exc, NotWritten):
                    exc.after(landed)
                exc.hint = rerun(exc.hint, "it installs the rest")
            raise
    return done


def uninstall(ws: Any, hooks_dir: str) -> list[installers.Result]:
    """Remove every hook of `HOOKS` (newest first, so the directory install created goes last)."""
    committed = husky.husky_dir(hooks_dir)
    if committed is not None:
        plans = [husky.plan(committed, hook, False) for hook in reversed(HOOKS)]
        return [husky.uninstall(ws, hooks_dir, plan) for plan in plans][::-1]
    plans = [_plain_plan(hooks_dir, hook, False) for hook in reversed(HOOKS)]
    return [_plain_uninstall(ws, hooks_dir, plan) for plan in plans][::-1]

