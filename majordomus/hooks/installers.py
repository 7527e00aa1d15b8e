"""`hooks install|uninstall` for Claude Code and Codex (design §12): merge into their JSON hook settings.

Install adds only what is missing (idempotent) and never rewrites what is there. It leaves a receipt in
the state directory (`hooks/`) with the file's bytes from before: uninstall restores those bytes exactly
when the file has not been edited since, and otherwise removes exactly the entries majordomus added,
keeping the rest and the file's layout (indent, final newline). git's post-commit hook is in githook.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Callable
from typing import Any, NamedTuple

from majordomus.errors import EnvironmentProblem, Refused
from majordomus.lite import jsonbound, safeio, statepaths
from majordomus.store import files, paths

SETTINGS = {"claude": (".claude", "settings.json"), "codex": (".codex", "hooks.json")}
SETTINGS_MAX_BYTES = 4 << 20


class Entry(NamedTuple):
    event: str
    matcher: str | None
    command: str
    timeout: int | None


def entries(runtime: str, compact_bridge: bool) -> list[Entry]:
    """What majordomus registers: the shape of fixtures/payloads/claude-settings-shape.json."""
    out = [
        # No matcher: every source the runtime has (Codex also has `fork`), now and later (design §12).
        Entry("SessionStart", None, f"majordomus hook session-start --runtime {runtime}", 30),
        Entry("Stop", None, "majordomus hook stop", 30),
    ]
    if compact_bridge:
        for event, phase in (("PreCompact", "pre"), ("PostCompact", "post")):
            out.append(Entry(event, "manual|auto", f"majordomus hook compact --phase {phase} --runtime {runtime}", None))
    return out


# What earlier versions registered, so that uninstall still finds it.
LEGACY_COMMANDS = frozenset(("majordomus hook session-start",))


def our_commands(runtime: str) -> set[str]:
    return {e.command for e in entries(runtime, compact_bridge=True)} | LEGACY_COMMANDS


class Result(NamedTuple):
    path: str
    changed: list[str]  # the events added or removed; empty when nothing had to change
    how: str  # "added", "already", "restored", "removed", "absent"


# ---------------------------------------------------------------- reading and writing the file


def _read(path: str) -> bytes | None:
    _refuse_links(path)
    return safeio.read_optional(path, SETTINGS_MAX_BYTES)


def _parse(data: bytes | None, path: str) -> dict[str, Any]:
    if data is None or not data.strip():
        return {}
    try:
        doc = jsonbound.loads(data.decode("utf-8"), unique=True)  # a rewrite would drop a key named twice
    except UnicodeDecodeError as exc:
        raise Refused(f"{path} is not UTF-8; nothing was written", "fix the file's encoding") from exc
    except json.JSONDecodeError as exc:
        raise Refused(f"{path} {jsonbound.describe(exc)}; nothing was written",
                      "fix the syntax, then run the command again") from exc
    if not isinstance(doc, dict):
        raise Refused(f"{path} must hold a JSON object; nothing was written", "fix the file, then try again")
    for event, groups in table_of(doc, "hooks", path).items():
        if not isinstance(groups, list):
            raise Refused(f"`hooks.{event}` in {path} must be a list; nothing was written",
                          "fix the file, then try again")
    return doc


def table_of(doc: dict[str, Any], key: str, path: str) -> dict[str, Any]:
    """The object at `key` of a settings document: {} when the key is absent; refused when it is there and
    not an object (`null` included: it would be replaced, and the file's own word for it lost)."""
    if key not in doc:
        return {}
    table = doc[key]
    if not isinstance(table, dict):
        raise Refused(f"`{key}` in {path} must be an object; nothing was written", "fix the file, then try again")
    return table


def _style(data: bytes | None) -> dict[str, Any]:
    """How the file is laid out, so that a rewrite looks like the file it replaces."""
    if not data or not data.strip():
        return {"indent": 2, "separators": (",", ": "), "ensure_ascii": False, "newline": True}
    text = data.decode("utf-8")
    indent: Any = None
    lines = text.split("\n")
    for prev, line in zip(lines, lines[1:]):
        if prev.rstrip().endswith(("{", "[")) and line.strip():
            lead = line[: len(line) - len(line.lstrip())]
            indent = lead if "\t" in lead else len(lead)
            break
    separators = (",", ": ") if indent is not None or '": ' in text else (",", ":")
    if indent is None and ", " in text and '": ' in text:
        separators = (", ", ": ")
    return {"indent": indent, "separators": separators, "ensure_ascii": "\\u" in text and text.isascii(),
            "newline": text.endswith("\n")}


def _dump(doc: dict[str, Any], style: dict[str, Any]) -> bytes:
    text = json.dumps(doc, indent=style["indent"], separators=style["separators"],
                      ensure_ascii=style["ensure_ascii"])
    return (text + ("\n" if style["newline"] else "")).encode("utf-8")


def write_file(path: str, data: bytes, mode: int | None) -> None:
    """Atomic replace, keeping the old file's mode (a new file gets 0666 & ~umask): the store's one writer."""
    _refuse_links(path)
    files.replace(path, data, mode=mode)


def _refuse_links(path: str) -> None:
    """A repository may link `.claude` (or the settings file) to the user's own: never write through it."""
    for candidate in (os.path.dirname(path), path):
        if os.path.islink(candidate):
            raise EnvironmentProblem(
                f"{candidate} is a symbolic link; majordomus does not write through it (it could lead to your "
                "own global settings); nothing was written",
                "replace the link with a real directory or file, or add the hooks by hand",
            )


def _mode(path: str) -> int | None:
    try:
        return stat.S_IMODE(os.lstat(path).st_mode)
    except FileNotFoundError:
        return None


# ---------------------------------------------------------------- the entries


def _groups(doc: dict[str, Any], event: str) -> list[Any]:
    hooks = doc.get("hooks")
    groups = hooks.get(event) if isinstance(hooks, dict) else None
    return groups if isinstance(groups, list) else []


def _commands(group: Any) -> list[str]:
    items = group.get("hooks") if isinstance(group, dict) else None
    if not isinstance(items, list):
        return []
    return [h["command"].strip() for h in items if isinstance(h, dict) and isinstance(h.get("command"), str)]


# Every session-start source a runtime sends (the payloads in fixtures/payloads): a hook registered without a
# matcher must run for all of them.
SOURCES = ("startup", "resume", "clear", "compact", "fork")


def covers_every_source(matcher: Any, regex: bool) -> bool:
    """Whether a group's matcher lets its hook run whatever the source: none, an empty one, or, where the
    runtime reads it as a regular expression (Claude Code, Codex), `*` or one that matches each source.
    Gemini CLI compares it as an exact string (`regex=False`): there only no matcher covers them all."""
    if matcher is None or matcher == "":
        return True
    if not regex or not isinstance(matcher, str):
        return False
    if matcher == "*":
        return True
    import re

    try:
        return all(re.fullmatch(matcher, source) for source in SOURCES)
    except re.error:
        return False


def present(doc: dict[str, Any], entry: Entry, regex: bool = True) -> bool:
    """Whether `doc` runs `entry` as we would register it: its command, under its matcher, or, for an entry of
    ours without one, under a matcher that covers every source (one limited to `startup` does not)."""
    for group in _groups(doc, entry.event):
        if entry.command not in _commands(group):
            continue
        matcher = group.get("matcher") if isinstance(group, dict) else None
        if entry.matcher is not None or covers_every_source(matcher, regex):
            return True
    return False


def add(doc: dict[str, Any], entry: Entry) -> None:
    hook: dict[str, Any] = {"type": "command", "command": entry.command}
    if entry.timeout is not None:
        hook["timeout"] = entry.timeout
    group: dict[str, Any] = {"matcher": entry.matcher} if entry.matcher is not None else {}
    group["hooks"] = [hook]
    doc.setdefault("hooks", {}).setdefault(entry.event, []).append(group)


def remove(doc: dict[str, Any], commands: set[str]) -> list[str]:
    """Take out every hook whose command is one of ours, and the groups and events left empty by that."""
    removed: list[str] = []
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict):
        return removed
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            items = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(items, list):
                kept_groups.append(group)
                continue
            kept = [h for h in items if not (isinstance(h, dict) and isinstance(h.get("command"), str)
                                             and h["command"].strip() in commands)]
            if len(kept) != len(items):
                removed.append(event)
                if not kept:
                    continue
                group["hooks"] = kept
            kept_groups.append(group)
        if event in removed and not kept_groups:
            del hooks[event]
        else:
            hooks[event] = kept_groups
    if removed and not hooks:
        del doc["hooks"]
    return removed


# ---------------------------------------------------------------- receipts


def _digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def receipt_path(ws: Any, runtime: str, path: str) -> str:
    statepaths.readable_dir(ws.paths, ws.paths.receipts)  # a link where `hooks/` belongs: refused, exit 12
    found: str = ws.paths.receipt(runtime, path)
    return found


def load_receipt(ws: Any, runtime: str, path: str) -> dict[str, Any] | None:
    try:
        data = jsonbound.loads(safeio.read(receipt_path(ws, runtime, path), SETTINGS_MAX_BYTES * 2 + 4096))
    except (OSError, ValueError, safeio.UnsafeFile):
        return None
    return data if isinstance(data, dict) and data.get("path") == path and _receipt_fields_hold(data) else None


# A receipt's fields and what each holds: a receipt any of whose fields is of another type (a list where a
# flag belongs, a number where the list of commands added belongs) is no receipt, as a torn one is: the
# uninstall then takes out only the hooks that are recognisably ours.
_RECEIPT_FIELDS: dict[str, tuple[type, ...]] = {
    "version": (int,), "exact": (bool,), "created_file": (bool,), "before": (str, type(None)),
    "after_sha256": (str,), "added": (list,), "created_dirs": (list,)}


def _receipt_fields_hold(data: dict[str, Any]) -> bool:
    for key, kinds in _RECEIPT_FIELDS.items():
        if key in data and not isinstance(data[key], kinds):
            return False
    return all(isinstance(item, str) for key in ("added", "created_dirs") for item in data.get(key, []))


def save_receipt(ws: Any, runtime: str, path: str, receipt: dict[str, Any]) -> None:
    ws.ensure_state("hooks")
    files.replace(receipt_path(ws, runtime, path), json.dumps(receipt, indent=1).encode("utf-8") + b"\n")


def write_with_receipt(ws: Any, runtime: str, path: str, receipt: dict[str, Any], data: bytes,
                       make_dir: str | None = None) -> None:
    """The receipt first (a crash between the two still leaves uninstall what it needs), then the settings
    file; when the file cannot be written, the receipt goes back to what it was, so a failed install
    leaves no receipt of a hook that never ran (doctor would call it missing)."""
    earlier = load_receipt(ws, runtime, path)
    try:
        save_receipt(ws, runtime, path, receipt)
        _refuse_links(path)
        if make_dir is not None:
            paths.make_parent(make_dir)
        write_file(path, data, _mode(path))
    except BaseException:
        try:
            if earlier is None:
                drop_receipt(ws, runtime, path)
            else:
                save_receipt(ws, runtime, path, earlier)
        except (OSError, EnvironmentProblem):
            pass  # the first error is the one to report
        raise


def restores(before: Any, rest: dict[str, Any], bare: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> bool:
    """Whether a receipt's `before` may be written back: it must be the current document with our entries
    taken out (`rest`), layout aside. A receipt is a state file, so an edited or copied-in one may hold any
    text (design §2a); writing it back unchecked would install whatever it says. `None` (the file did not
    exist) may be restored only when nothing but ours is in the file. `bare` strips what install adds or
    leaves empty in the runtime's layout (by default an empty `hooks` or `mcpServers`)."""
    bare = bare or _bare
    if before is None:
        return not bare(rest)
    if not isinstance(before, str):
        return False
    if not before.strip():  # an empty file, which install read as `{}`: it goes back to being empty
        return not bare(rest)
    try:
        doc = jsonbound.loads(before)
    except ValueError:
        return False
    return isinstance(doc, dict) and bare(doc) == bare(rest)


def _bare(doc: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in doc.items() if not (key in ("hooks", "mcpServers") and value == {})}


def drop_receipt(ws: Any, runtime: str, path: str) -> None:
    receipt = receipt_path(ws, runtime, path)
    try:
        os.unlink(receipt)
    except FileNotFoundError:
        pass
    except OSError as exc:  # a directory (or worse) where the receipt belongs
        raise EnvironmentProblem(f"cannot remove the receipt {receipt}: {exc.strerror}",
                                 "move it away (`majordomus doctor` lists what is wrong), then try again") from exc


# ---------------------------------------------------------------- install / uninstall


def settings_path(ws: Any, runtime: str) -> str:
    directory, name = SETTINGS[runtime]
    return os.path.join(ws.worktree, directory, name)


def install(ws: Any, runtime: str, compact_bridge: bool) -> Result:
    path = settings_path(ws, runtime)
    before = _read(path)
    doc = _parse(before, path)
    added = [e for e in entries(runtime, compact_bridge) if not present(doc, e)]
    if not added:
        return Result(path, [], "already")
    for entry in added:
        add(doc, entry)
    after = _dump(doc, _style(before))
    directory = os.path.dirname(path)
    receipt = load_receipt(ws, runtime, path)
    if receipt is None:
        receipt = {"version": 1, "path": path, "exact": True, "created_dir": not os.path.isdir(directory),
                   "before": None if before is None else before.decode("utf-8"), "added": []}
    elif receipt.get("after_sha256") != _digest(before):
        # Edited since majordomus last wrote it: its earlier bytes no longer describe what to go back to,
        # so uninstall will take out the entries it added instead of restoring bytes.
        receipt.update(exact=False, before=None)
    receipt["added"] = sorted(set(receipt.get("added", [])) | {e.command for e in added})
    receipt["after_sha256"] = _digest(after)
    write_with_receipt(ws, runtime, path, receipt, after, None if os.path.isdir(directory) else directory)
    return Result(path, [e.event for e in added], "added")


def uninstall(ws: Any, runtime: str) -> Result:
    path = settings_path(ws, runtime)
    current = _read(path)
    receipt = load_receipt(ws, runtime, path)
    if current is None:
        drop_receipt(ws, runtime, path)
        return Result(path, [], "absent")
    ours = set(receipt.get("added", [])) & our_commands(runtime) if receipt else our_commands(runtime)
    rest = _parse(current, path)
    events = sorted(set(remove(rest, ours)))
    if (receipt is not None and receipt.get("exact") and receipt.get("after_sha256") == _digest(current)
            and restores(receipt.get("before"), rest)):
        previous = receipt.get("before")
        if previous is None:
            files.remove(path)
            if receipt.get("created_dir"):
                try:
                    os.rmdir(os.path.dirname(path))
                except OSError:
                    pass  # something else lives there now: leave it
        else:
            write_file(path, previous.encode("utf-8"), _mode(path))
        drop_receipt(ws, runtime, path)
        return Result(path, events, "restored")
    drop_receipt(ws, runtime, path)
    if not events:
        return Result(path, [], "absent")
    write_file(path, _dump(rest, _style(current)), _mode(path))
    return Result(path, events, "removed")
