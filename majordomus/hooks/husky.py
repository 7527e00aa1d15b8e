"""Husky v9 (design §12): where git runs hooks from `.husky/_`, majordomus's lines live in `.husky/<hook>`,
the committed file Husky users keep their hooks in, and survive Husky's regeneration of `.husky/_`."""

from __future__ import annotations

import os
from typing import Any

from majordomus.errors import Refused
from majordomus.hooks import installers
from majordomus.hooks.gitfiles import HOOKS, Hook, Plan, edited, lread, remove, replace

# Husky's `husky` command (its `prepare` script, at every `npm install`) rewrites each `.husky/_/<hook>` as
# `#!/usr/bin/env sh` + `. "$(dirname "$0")/h"`, and `h` runs `sh -e .husky/<hook>` when that file exists
# (stdin and arguments passed on). `.husky/_` is git-ignored and regenerated; `.husky/post-commit` and
# `.husky/post-rewrite` are where Husky users keep their hooks, committed.

def husky_block(hook: Hook) -> str:
    """Our lines in `.husky/<hook>`. They go first (after a `#!` line): Husky runs the file with `sh -e`, and
    lines after a user's `exit 0` or `exec …` would never run. A hook that git gives stdin reads it once
    and hands it on to the lines below unchanged (`exec` from a here-document)."""
    if hook.stdin:
        run = ('majordomus_input="$(cat 2>/dev/null || :)"\n'
               "if command -v majordomus >/dev/null 2>&1; then printf '%s\\n' \"$majordomus_input\" | "
               f"{hook.command} >/dev/null 2>&1 || :; fi\n"
               "exec 0<<MAJORDOMUS_INPUT\n$majordomus_input\nMAJORDOMUS_INPUT\n")
    else:
        run = f"if command -v majordomus >/dev/null 2>&1; then {hook.command} >/dev/null 2>&1 || :; fi\n"
    return (f"{hook.husky_begin}\n"
            f"# It {hook.purpose}; never fails the git command (Husky runs\n"
            "# this file with `sh -e`), not even where majordomus is not installed.\n"
            f"{run}{hook.husky_end}\n")


def _husky_block_appended(hook: Hook) -> str:
    """The block as earlier versions appended it at the end of the file (uninstall and a new install still
    recognise it; install moves it to the top)."""
    return (f"{hook.husky_begin}\n"
            f"# It {hook.purpose}; never fails the git command (Husky runs\n"
            "# this file with `sh -e`), not even where majordomus is not installed.\n"
            f"if command -v majordomus >/dev/null 2>&1; then {hook.command} >/dev/null 2>&1 || :; fi\n"
            f"{hook.husky_end}\n")


def _top(text: str) -> int:
    """Where our block goes in a `.husky/<hook>`: after its `#!` line, if it has one, else at the start."""
    if text.startswith("#!"):
        end = text.find("\n")
        return len(text) if end < 0 else end + 1
    return 0


def _without_ours(text: str, hook: Hook) -> str:
    for block in (husky_block(hook), _husky_block_appended(hook)):
        if block in text:
            return text.replace(block, "", 1)
    return text


def husky_reachable(text: str, hook: Hook) -> bool:
    """Whether our block is in `text` with only a `#!` line, comments and blank lines before it: then the
    shell reaches it whatever follows (what doctor checks)."""
    at = text.find(husky_block(hook))
    return at >= 0 and all(not line.strip() or line.lstrip().startswith("#") for line in text[:at].splitlines())


_HUSKY_STUB = b'. "$(dirname "$0")/h"'
_HUSKY_STUB_FILE = b'#!/usr/bin/env sh\n' + _HUSKY_STUB


def husky_dir(hooks_dir: str) -> str | None:
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
    kind, data = lread(chained)
    if kind != "file" or data is None or _HUSKY_STUB not in data:
        return None
    _, current = lread(target)
    if current is not None and hook.marker.encode() in current:
        return None  # still our chaining hook: the plain uninstall puts it back
    return chained


def _text(data: bytes | None) -> str:
    """A user's hook file as text, each byte that is not UTF-8 kept (`surrogateescape`): written back, the
    file's own bytes are there again, a Latin-1 comment included, never U+FFFD in their place."""
    return (data or b"").decode("utf-8", "surrogateescape")


def plan(husky: str, hook: Hook, installing: bool) -> Plan:
    target = os.path.join(husky, hook.name)
    kind, data = lread(target)
    if installing and kind not in ("absent", "file"):
        raise Refused(f"{target} is not a file; nothing was written", "move it away, then try again")
    text = _text(data)
    if hook.husky_begin in text and _without_ours(text, hook) == text:
        raise edited(target)
    return Plan(hook, target, "", kind, data)


def install(ws: Any, hooks_dir: str, plan: Plan) -> installers.Result:
    hook, target, kind, data = plan.hook, plan.target, plan.kind, plan.data
    stale = _stale_chained(hooks_dir, hook)
    text = _text(data)
    stub = _missing_stub(hooks_dir, hook)
    if husky_reachable(text, hook) and stub is None:
        if stale is not None:
            remove(stale)
        _receipt(ws, target, kind == "absent" and data is None)
        return installers.Result(target, [], "already")
    rest = _without_ours(text, hook)  # an earlier install's block at the end (after a user's exit: moved)
    at = _top(rest)
    joined = rest[:at] + ("\n" if at and not rest[:at].endswith("\n") else "") + husky_block(hook) + rest[at:]
    replace(os.path.dirname(target), target, joined.encode("utf-8", "surrogateescape"),
             (os.lstat(target).st_mode & 0o7777) if kind == "file" else 0o755)
    if stub is not None:  # git runs `.husky/_/<hook>` only: Husky's own dispatcher stub, as `husky` writes it
        replace(hooks_dir, stub, _HUSKY_STUB_FILE, 0o755)
    if stale is not None:
        remove(stale)  # Husky's own stub, parked by an earlier install into .husky/_: Husky rewrote it
    previous = installers.load_receipt(ws, "git", target) or {}
    installers.save_receipt(ws, "git", target, {
        "version": 1, "path": target, "husky": True,
        "created_file": previous.get("created_file", kind == "absent") is True,
        **({"created_stub": stub} if stub is not None else
           {"created_stub": previous["created_stub"]} if isinstance(previous.get("created_stub"), str) else {})})
    return installers.Result(target, [hook.name], "added")


def _missing_stub(hooks_dir: str, hook: Hook) -> str | None:
    """`.husky/_/<hook>` when it is absent (a trimmed or older Husky layout): without it git never runs the
    hook."""
    stub = os.path.join(hooks_dir, hook.name)
    return None if os.path.lexists(stub) else stub




def _receipt(ws: Any, target: str, created: bool) -> None:
    if installers.load_receipt(ws, "git", target) is None:
        installers.save_receipt(ws, "git", target, {"version": 1, "path": target, "husky": True,
                                                    "created_file": created})


def uninstall(ws: Any, hooks_dir: str, plan: Plan) -> installers.Result:
    hook, target, kind, data = plan.hook, plan.target, plan.kind, plan.data
    stale = _stale_chained(hooks_dir, hook)
    if stale is not None:
        remove(stale)
    text = _text(data)
    rest = _without_ours(text, hook)
    receipt = installers.load_receipt(ws, "git", target) or {}
    stub = receipt.get("created_stub")
    if isinstance(stub, str) and os.path.dirname(stub) == hooks_dir and lread(stub) == ("file", _HUSKY_STUB_FILE):
        remove(stub)
    if kind != "file" or rest == text:
        installers.drop_receipt(ws, "git", target)
        return installers.Result(target, [hook.name] if stale else [], "removed" if stale else "absent")
    if not rest.strip() and receipt.get("created_file"):
        remove(target)
    else:
        replace(os.path.dirname(target), target, rest.encode("utf-8", "surrogateescape"), os.lstat(target).st_mode & 0o7777)
    installers.drop_receipt(ws, "git", target)
    return installers.Result(target, [hook.name], "removed")




def reachable(text: str) -> bool | None:
    """For a `.husky/<hook>` holding our block: whether the shell reaches it; None for any other file."""
    for hook in HOOKS:
        if hook.husky_begin in text:
            return husky_reachable(text, hook)
    return None
