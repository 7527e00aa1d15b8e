"""A runtime's JSON hook file, merged with a receipt: the install flow of Gemini CLI and Copilot CLI (design §23).

The discipline of `installers` (Claude Code, Codex), whose file helpers and receipts this reuses: install
adds only what is missing and never rewrites what is there; the receipt keeps the file's bytes from
before, so that uninstall restores them exactly when the file was not edited since, and otherwise takes out
exactly the entries majordomus added. What differs per runtime — where an entry lives in the file, what an
entry looks like — is a `Layout`. The file may lie several directories deep (`.github/hooks/`): none of them
may be a symbolic link, and uninstall removes only the directories install created, once they are empty.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple, Protocol

from majordomus.errors import EnvironmentProblem, Refused
from majordomus.hooks import installers
from majordomus.lite import jsonbound
from majordomus.store import files


class Hook(NamedTuple):
    """One command majordomus registers: the runtime's event name, the command, a label, the timeout in
    the runtime's own unit (Gemini: milliseconds; Copilot: seconds)."""

    event: str
    command: str
    name: str
    timeout: int


class Layout(Protocol):
    """Where a runtime keeps its hook entries, and what one looks like."""

    owns_file: bool  # the file is majordomus's own (Copilot's majordomus.json): emptied, it goes

    def check(self, doc: dict[str, Any], path: str) -> None:
        """Refuse (nothing written) a document this layout cannot merge into."""

    def unparsable(self, text: str, path: str) -> Refused | None:
        """A refusal more helpful than "not valid JSON" for what the runtime itself accepts, or None."""

    def present(self, doc: dict[str, Any], hook: Hook) -> bool: ...

    def add(self, doc: dict[str, Any], hook: Hook) -> None: ...

    def remove(self, doc: dict[str, Any], commands: set[str]) -> list[str]:
        """Take out every entry whose command is one of `commands`; the events it took them from."""

    def empty(self, doc: dict[str, Any]) -> bool:
        """Nothing left but what install itself had to add around the entries."""


class Target(NamedTuple):
    """The file: `parts` below the worktree, and the name its receipt goes under."""

    runtime: str
    worktree: str
    parts: tuple[str, ...]

    @property
    def path(self) -> str:
        return os.path.join(self.worktree, *self.parts)

    def directories(self) -> list[str]:
        """The directories from the worktree down to the file, outermost first."""
        return [os.path.join(self.worktree, *self.parts[:i]) for i in range(1, len(self.parts))]


class Gone(NamedTuple):
    """An installed hook that no longer runs majordomus (for doctor's `hooks.missing`)."""

    path: str
    event: str
    command: str
    why: str  # "removed" (the entry is gone), "no file", or the reason the file cannot be read

    def message(self, shown: str, runtime: str) -> tuple[str, str]:
        """(message, hint) for a doctor finding; `shown` is the path as the user sees it."""
        what = {"removed": "is no longer in it", "no file": "is gone with the file"}.get(self.why, f"cannot be read: {self.why}")
        return (f"{shown}: the {self.event} hook `hooks install` added ({self.command}) {what}",
                f"run `majordomus hooks install --runtime {runtime}` again, or `hooks uninstall --runtime {runtime}` "
                "to stop expecting it")


# ---------------------------------------------------------------- reading


def refuse_unsafe(target: Target) -> None:
    """Exit 12, nothing written, when a directory on the way is a symbolic link or not a directory."""
    # installers' check looks at a path and its parent: each directory below the first, then the file,
    # covers every step from the worktree down (the outermost first), with the installers' one message.
    for directory in target.directories()[1:]:
        installers._refuse_links(directory)
    installers._refuse_links(target.path)
    for directory in target.directories():
        if os.path.lexists(directory) and not os.path.isdir(directory):
            raise EnvironmentProblem(f"{directory} is not a directory; nothing was written",
                                     "move that file away, or add the hooks by hand")


def read(target: Target, layout: Layout) -> tuple[bytes | None, dict[str, Any]]:
    """The file's bytes (None when absent) and its document, or a refusal (exit 10, nothing written)."""
    refuse_unsafe(target)
    path = target.path
    data = installers._read(path)
    if data is None or not data.strip():
        return data, {}
    try:
        text = data.decode("utf-8")
        doc = jsonbound.loads(text, unique=True)  # a rewrite would drop a key named twice
    except ValueError as exc:  # UnicodeDecodeError included
        better = None if isinstance(exc, UnicodeDecodeError) else layout.unparsable(text, path)
        if better is not None:
            raise better from None
        installers._parse(data, path)  # raises the installers' own refusal for these bytes
        raise  # unreachable: what json cannot load, _parse refuses
    if not isinstance(doc, dict):
        installers._parse(data, path)  # "must hold a JSON object"
    layout.check(doc, path)
    return data, doc


# ---------------------------------------------------------------- install / uninstall


def install(ws: Any, target: Target, hooks: list[Hook], layout: Layout) -> installers.Result:
    """Merge `hooks` into the file (made when absent); idempotent; leaves a receipt."""
    path = target.path
    before, doc = read(target, layout)
    added = [h for h in hooks if not layout.present(doc, h)]
    if not added:
        return installers.Result(path, [], "already")
    for hook in added:
        layout.add(doc, hook)
    after = installers._dump(doc, installers._style(before))
    created = [d for d in target.directories() if not os.path.isdir(d)]
    receipt = installers.load_receipt(ws, target.runtime, path)
    if receipt is None or before is None:
        # No receipt, or no file left to describe: what the file was before is what is there now.
        earlier = receipt.get("created_dirs", []) if receipt is not None else []
        receipt = {"version": 1, "path": path, "exact": True, "created_file": before is None,
                   "created_dirs": [d for d in target.directories() if d in earlier or d in created],
                   "before": None if before is None else before.decode("utf-8"), "added": []}
    elif receipt.get("after_sha256") != installers._digest(before):
        # Edited since majordomus last wrote it: its earlier bytes no longer describe what to go back to,
        # so uninstall will take out the entries it added instead of restoring bytes.
        receipt.update(exact=False, before=None)
    receipt["added"] = sorted(set(receipt.get("added", [])) | {h.command for h in added})
    receipt["after_sha256"] = installers._digest(after)
    refuse_unsafe(target)
    installers.write_with_receipt(ws, target.runtime, path, receipt, after, created[-1] if created else None)
    return installers.Result(path, sorted({h.event for h in added}, key=[h.event for h in hooks].index), "added")


def _remove_created_dirs(receipt: dict[str, Any]) -> None:
    for directory in reversed(receipt.get("created_dirs", [])):
        try:
            os.rmdir(directory)
        except OSError:
            return  # something else lives there now: leave it, and the directories above it


def uninstall(ws: Any, target: Target, ours: set[str], layout: Layout) -> installers.Result:
    """Remove exactly what `install` added: the earlier bytes when not edited since, else only our entries."""
    path = target.path
    current, doc = read(target, layout)
    receipt = installers.load_receipt(ws, target.runtime, path)
    if current is None:
        if receipt is not None:
            _remove_created_dirs(receipt)  # the file went by other hands: the directories install made go too
        installers.drop_receipt(ws, target.runtime, path)
        return installers.Result(path, [], "absent")
    commands = set(receipt.get("added", [])) & ours if receipt is not None else ours
    events = sorted(set(layout.remove(doc, commands)))
    if (receipt is not None and receipt.get("exact") and receipt.get("after_sha256") == installers._digest(current)
            and installers.restores(receipt.get("before"), doc, lambda d: installers._bare(
                {k: v for k, v in d.items() if not layout.empty({k: v})}))):
        previous = receipt.get("before")
        if previous is None:
            files.remove(path)
            _remove_created_dirs(receipt)
        else:
            installers.write_file(path, previous.encode("utf-8"), installers._mode(path))
        installers.drop_receipt(ws, target.runtime, path)
        return installers.Result(path, events, "restored")
    installers.drop_receipt(ws, target.runtime, path)
    if not events:
        return installers.Result(path, [], "absent")
    if layout.empty(doc) and (layout.owns_file or (receipt is not None and receipt.get("created_file"))):
        files.remove(path)  # nothing of anyone's is left in it
        if receipt is not None:
            _remove_created_dirs(receipt)
        return installers.Result(path, events, "removed")
    installers.write_file(path, installers._dump(doc, installers._style(current)), installers._mode(path))
    return installers.Result(path, events, "removed")


def missing(ws: Any, target: Target, hooks: list[Hook], layout: Layout) -> list[Gone]:
    """The hooks the receipt says install added that the file no longer has (nothing when never installed)."""
    path = target.path
    receipt = installers.load_receipt(ws, target.runtime, path)
    if receipt is None:
        return []
    listed = [h for h in hooks if h.command in set(receipt.get("added", []))]
    try:
        data, doc = read(target, layout)
    except (Refused, EnvironmentProblem) as exc:
        return [Gone(path, h.event, h.command, exc.message) for h in listed]
    if data is None:
        return [Gone(path, h.event, h.command, "no file") for h in listed]
    return [Gone(path, h.event, h.command, "removed") for h in listed if not layout.present(doc, h)]
