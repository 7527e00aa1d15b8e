"""GitHub Copilot CLI (design §23): its hooks in `.github/hooks/majordomus.json`, and what its hooks must print.

Facts from Copilot CLI 1.0.102, run against a mock model API (docs/gemini-and-copilot.md):
- Every `.github/hooks/*.json` is read; a version-1 file holds `{"version": 1, "hooks": {event: [{"type":
  "command", "bash": …, "timeoutSec": …}]}}` and its hooks get camelCase JSON on stdin (`sessionId`,
  `source`, `initialPrompt`, `reason`, …; `timestamp` in epoch milliseconds). majordomus owns its own file
  there, so the rest of `.github` is never rewritten. No `powershell` command: majordomus runs on POSIX only,
  and a Windows teammate's Copilot then skips the entry instead of failing on it.
- sessionStart reads only a top-level `additionalContext` (`hookSpecificOutput` and plain text are ignored,
  silently) and sends it raw as its own user message before the first prompt.
- The limit is the model's prompt, in tokens: context that does not fit is dropped whole and silently.
  majordomus keeps it within `continuity.render_max_bytes` (24 KiB by default): a byte-level tokenizer
  never makes more tokens than bytes, so that is at most 24,576 tokens — 6,000 or so for English — far inside
  any model Copilot serves, while 200 KB arrived whole in the measured run.
- `--resume` sends `source: resume` with the same session id, and the resumed request holds only the new
  context, not the earlier one: the whole briefing goes in at every start.
- The initial prompt arrives on sessionStart (`initialPrompt`), and the final message may on sessionEnd
  (`finalMessage`): neither is ever kept, only the message's length.

The hook side (the top of this module) imports nothing but `json`: the hooks run it at every session
start. The installer below imports the install machinery when run.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # on the hooks' path: typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any

    from majordomus.hooks import installers, jsonhooks

NAME = "copilot"
SETTINGS = (".github", "hooks", "majordomus.json")
TIMEOUT_SEC = 30
FILE_VERSION = 1
TRUST_NOTE = ("note: Copilot CLI runs repository hooks only in a trusted folder: trust it when Copilot asks (or add "
              "it to \"trustedFolders\" in ~/.copilot/config.json), or for `copilot -p` pass --trust-folder (not with "
              "--resume) or set GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS=true; until then it skips them silently. "
              "Commit .github/hooks/majordomus.json to give the team the hooks. See docs/gemini-and-copilot.md.")
# payload key -> journal key, for `hook compact --runtime copilot` (preCompact: the common fields of every
# Copilot hook, sessionId, agentId, agentType, plus trigger; never initialPrompt, prompt or finalMessage).
JOURNAL_KEYS = {"sessionId": "session_id", "trigger": "trigger", "agentId": "agent_id", "agentType": "agent_type"}
# payload key -> the name the session bookkeeping reads; the text fields are not among them.
SESSION_KEYS = {"sessionId": "session_id", "source": "source", "reason": "reason",
                "transcriptPath": "transcript_path"}

# The row of the per-runtime table (merged by the lead with Claude Code's and Codex's).
TABLE = {
    "runtime": NAME,
    "settings": "/".join(SETTINGS),
    "events": {"session-start": "sessionStart", "stop": "sessionEnd", "compact-pre": "preCompact"},
    "output": '{"additionalContext": …} at the top level (hookSpecificOutput is ignored); nothing outside a work tree',
    "budget": ("bytes", "continuity.render_max_bytes"),  # over the model's prompt tokens: dropped whole
    "journal": JOURNAL_KEYS,
    "policy": "whole briefing at every sessionStart (a resumed session keeps only the new context)",
}


# ---------------------------------------------------------------- the hook side


def session_start_output(context: str | None, source: str | None = None) -> str | None:
    """What `hook session-start --runtime copilot` prints; None (print nothing) outside a work tree."""
    return None if context is None else json.dumps({"additionalContext": context})


def budget_bytes(config: Any) -> int:
    """The bound that keeps the context far below any model's prompt limit (see the module's docstring)."""
    return int(config.get("continuity", "render_max_bytes"))


def inject_whole(source: str | None) -> bool:
    """Always: a resumed Copilot session keeps only the context of its own start."""
    return True


def session_fields(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload in the names the session bookkeeping reads, and the final message's length (never its
    text). A Claude-style file under `.github/hooks/` gets snake_case instead: both are understood."""
    out = {ours: payload.get(theirs, payload.get(ours)) for theirs, ours in SESSION_KEYS.items()}
    final = payload.get("finalMessage")
    out["message_length"] = len(final) if isinstance(final, str) else None
    return out


def journal_fields(payload: dict[str, Any]) -> dict[str, Any]:
    """The whitelisted keys of a preCompact payload, under their journal names."""
    return {ours: payload[theirs] for theirs, ours in JOURNAL_KEYS.items() if theirs in payload}


# ---------------------------------------------------------------- the installer


def hooks(compact_bridge: bool) -> list[jsonhooks.Hook]:
    from majordomus.hooks.jsonhooks import Hook

    out = [Hook("sessionStart", f"majordomus hook session-start --runtime {NAME}", "", TIMEOUT_SEC),
           Hook("sessionEnd", f"majordomus hook stop --runtime {NAME}", "", TIMEOUT_SEC)]
    if compact_bridge:
        out.append(Hook("preCompact", f"majordomus hook compact --phase pre --runtime {NAME}", "", TIMEOUT_SEC))
    return out


def _entries(doc: dict[str, Any], event: str) -> list[Any]:
    table = doc.get("hooks")
    entries = table.get(event) if isinstance(table, dict) else None
    return entries if isinstance(entries, list) else []


def _command(entry: Any) -> str | None:
    bash = entry.get("bash") if isinstance(entry, dict) else None
    return bash.strip() if isinstance(bash, str) else None


class HooksFileLayout:
    """`{"version": 1, "hooks": {event: [{"type": "command", "bash": …, "timeoutSec": …}]}}`."""

    owns_file = True

    def check(self, doc: dict[str, Any], path: str) -> None:
        from majordomus.errors import Refused
        from majordomus.hooks import installers

        if doc.get("version", FILE_VERSION) != FILE_VERSION:
            raise Refused(f"{path} is a version {doc['version']!r} hooks file; majordomus writes version "
                          f"{FILE_VERSION} only; nothing was written", "move that file away, or add the hooks by hand")
        for event, entries in installers.table_of(doc, "hooks", path).items():
            if not isinstance(entries, list):
                raise Refused(f"`hooks.{event}` in {path} must be a list; nothing was written",
                              "fix the file, then try again")

    def unparsable(self, text: str, path: str) -> Any:
        return None

    def present(self, doc: dict[str, Any], hook: jsonhooks.Hook) -> bool:
        return any(_command(entry) == hook.command for entry in _entries(doc, hook.event))

    def add(self, doc: dict[str, Any], hook: jsonhooks.Hook) -> None:
        if "version" not in doc:  # first, where a reader looks for it
            rest = dict(doc)
            doc.clear()
            doc.update({"version": FILE_VERSION, **rest})
        entry = {"type": "command", "bash": hook.command, "timeoutSec": hook.timeout}
        doc.setdefault("hooks", {}).setdefault(hook.event, []).append(entry)

    def remove(self, doc: dict[str, Any], commands: set[str]) -> list[str]:
        removed: list[str] = []
        table = doc.get("hooks")
        if not isinstance(table, dict):
            return removed
        for event in list(table):
            entries = table[event]
            if not isinstance(entries, list):
                continue
            kept = [e for e in entries if _command(e) not in commands]
            if len(kept) != len(entries):
                removed.append(event)
                if kept:
                    table[event] = kept
                else:
                    del table[event]
        if removed and not table:
            del doc["hooks"]
        return removed

    def empty(self, doc: dict[str, Any]) -> bool:
        return not {k: v for k, v in doc.items() if not (k == "version" and v == FILE_VERSION)}


def _target(ws: Any) -> jsonhooks.Target:
    from majordomus.hooks.jsonhooks import Target

    return Target(NAME, ws.worktree, SETTINGS)


def install(ws: Any, compact_bridge: bool) -> installers.Result:
    """`hooks install --runtime copilot [--compact-bridge]`."""
    from majordomus.hooks import jsonhooks

    return jsonhooks.install(ws, _target(ws), hooks(compact_bridge), HooksFileLayout())


def uninstall(ws: Any) -> installers.Result:
    """`hooks uninstall --runtime copilot`."""
    from majordomus.hooks import jsonhooks

    return jsonhooks.uninstall(ws, _target(ws), {h.command for h in hooks(True)}, HooksFileLayout())


def missing(ws: Any) -> list[jsonhooks.Gone]:
    """For doctor's `hooks.missing`: the hooks install added that `.github/hooks/majordomus.json` no longer has."""
    from majordomus.hooks import jsonhooks

    return jsonhooks.missing(ws, _target(ws), hooks(True), HooksFileLayout())
