"""Gemini CLI (design §23): its hooks in `.gemini/settings.json`, and what its hooks must print.

Facts from Gemini CLI 0.61.0, run against a mock model API (docs/gemini-and-copilot.md):
- The file's shape is Claude Code's, with `timeout` in milliseconds and a `name` per hook. A matcher on a
  lifecycle event is compared as an exact string (`"startup|resume"` matches nothing): SessionStart is
  registered with no matcher, so it runs for every source (startup, resume, clear).
- The whole of stdout is parsed as one JSON document; when stdout is empty, stderr is parsed instead. So
  session-start always prints one document, `{}` when it has nothing to inject: a diagnostic on stderr is
  then never mistaken for its answer. (SessionEnd's answer is not waited for: the plain `hook stop` serves.)
- SessionStart reads `hookSpecificOutput.additionalContext` (it HTML-escapes `<` and `>`); no size limit in
  the client, so the budget is `continuity.render_max_bytes`.
- `--resume` sends `source: resume` with the same session id, but the resumed request no longer holds the
  earlier context: the whole briefing goes in at every start. After `/clear` the client keeps only the
  `systemMessage` of the SessionStart result, so there the user is told how to get the briefing back.
- PreCompress fires before every turn's compression check, not only before a compression, and there is no
  post-compression event: with `--compact-bridge` the journal shows checks, not compactions.

The hook side (the top of this module) imports nothing but `json`: `hook session-start` and `hook compact`
run it at every session start and every turn. The installer below imports the install machinery when run.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # on the hooks' path: typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any

    from majordomus.hooks import installers, jsonhooks

NAME = "gemini"
SETTINGS = (".gemini", "settings.json")
TIMEOUT_MS = 30_000  # Gemini's default is 60 s; majordomus answers in well under one
# Keys of `hooks` that are settings, not events (Gemini's HOOKS_CONFIG_FIELDS): not lists, and left alone.
CONFIG_FIELDS = frozenset(("enabled", "disabled", "notifications"))
# payload key -> journal key, for `hook compact --runtime gemini` (PreCompress sends session_id,
# transcript_path, cwd, hook_event_name, timestamp and trigger): never a path, never a prompt.
JOURNAL_KEYS = {"session_id": "session_id", "trigger": "trigger"}
TRUST_NOTE = ("note: Gemini CLI loads project settings, and so these hooks, only in a trusted folder: trust it when "
              "Gemini asks (saved in ~/.gemini/trustedFolders.json), or set GEMINI_CLI_TRUST_WORKSPACE=true; "
              "`--skip-trust` does NOT load them; in an untrusted folder they do not run (`gemini -p` exits 55). "
              "See docs/gemini-and-copilot.md.")
CLEAR_NOTE = ("majordomus: after /clear Gemini CLI does not hand hook context to the model, so the agent has "
              "no briefing now: start gemini again, or ask the agent to run `majordomus brief`.")

# The row of the per-runtime table (merged by the lead with Claude Code's and Codex's).
TABLE = {
    "runtime": NAME,
    "settings": "/".join(SETTINGS),
    "events": {"session-start": "SessionStart", "stop": "SessionEnd", "compact-pre": "PreCompress"},
    "output": '{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":…}} and nothing else; '
              '`{}` with nothing to inject (an empty stdout makes Gemini parse stderr)',
    "budget": ("bytes", "continuity.render_max_bytes"),  # no client limit (300,000 characters arrived whole)
    "journal": JOURNAL_KEYS,
    "policy": "whole briefing at every SessionStart (resume keeps no earlier context; clear keeps none)",
}


# ---------------------------------------------------------------- the hook side


def session_start_output(context: str | None, source: str | None = None) -> str:
    """What `hook session-start --runtime gemini` prints: one JSON document, `{}` outside a work tree."""
    if context is None:
        return "{}"
    out: dict[str, Any] = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}}
    if source == "clear":
        out["systemMessage"] = CLEAR_NOTE  # the one field Gemini keeps after /clear; shown to the user
    return json.dumps(out)


def budget_bytes(config: Any) -> int:
    """Gemini CLI has no limit of its own: the briefing's own bound."""
    return int(config.get("continuity", "render_max_bytes"))


def inject_whole(source: str | None) -> bool:
    """Always: a resumed Gemini session does not keep the earlier context (design §12's exactly-once)."""
    return True


def session_fields(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload in the names the session bookkeeping reads (Gemini already sends snake_case)."""
    return {key: payload.get(key) for key in ("session_id", "source", "reason", "transcript_path")}


def journal_fields(payload: dict[str, Any]) -> dict[str, Any]:
    """The whitelisted keys of a PreCompress payload, under their journal names."""
    return {ours: payload[theirs] for theirs, ours in JOURNAL_KEYS.items() if theirs in payload}


# ---------------------------------------------------------------- the installer


def hooks(compact_bridge: bool) -> list[jsonhooks.Hook]:
    from majordomus.hooks.jsonhooks import Hook

    out = [Hook("SessionStart", f"majordomus hook session-start --runtime {NAME}", "majordomus-session-start",
                TIMEOUT_MS),
           # Gemini's payload has Claude Code's names, so the plain stop hook reads it as it is.
           Hook("SessionEnd", "majordomus hook stop", "majordomus-session-end", TIMEOUT_MS)]
    if compact_bridge:
        out.append(Hook("PreCompress", f"majordomus hook compact --phase pre --runtime {NAME}",
                        "majordomus-pre-compress", TIMEOUT_MS))
    return out


class SettingsLayout:
    """`{"hooks": {Event: [{"hooks": [{name, type, command, timeout}]}]}}`, beside the user's other settings."""

    owns_file = False

    def check(self, doc: dict[str, Any], path: str) -> None:
        from majordomus.errors import Refused
        from majordomus.hooks import installers

        for event, groups in installers.table_of(doc, "hooks", path).items():
            if event not in CONFIG_FIELDS and not isinstance(groups, list):
                raise Refused(f"`hooks.{event}` in {path} must be a list; nothing was written",
                              "fix the file, then try again")

    def unparsable(self, text: str, path: str) -> Any:
        from majordomus.errors import Refused

        if "//" in text or "/*" in text:
            return Refused(f"{path} is not plain JSON (it has comments, or is not valid); majordomus rewrites "
                           "plain JSON only and would drop comments; nothing was written",
                           "take the comments out, or add the hooks by hand (docs/gemini-and-copilot.md)")
        return None

    def present(self, doc: dict[str, Any], hook: jsonhooks.Hook) -> bool:
        from majordomus.hooks import installers

        # Gemini compares a matcher as an exact string: only an entry without one runs for every source.
        return installers.present(doc, installers.Entry(hook.event, None, hook.command, None), regex=False)

    def add(self, doc: dict[str, Any], hook: jsonhooks.Hook) -> None:
        entry = {"name": hook.name, "type": "command", "command": hook.command, "timeout": hook.timeout}
        doc.setdefault("hooks", {}).setdefault(hook.event, []).append({"hooks": [entry]})

    def remove(self, doc: dict[str, Any], commands: set[str]) -> list[str]:
        from majordomus.hooks import installers

        return installers.remove(doc, commands)

    def empty(self, doc: dict[str, Any]) -> bool:
        return not doc


def _target(ws: Any) -> jsonhooks.Target:
    from majordomus.hooks.jsonhooks import Target

    return Target(NAME, ws.worktree, SETTINGS)


def install(ws: Any, compact_bridge: bool) -> installers.Result:
    """`hooks install --runtime gemini [--compact-bridge]`."""
    from majordomus.hooks import jsonhooks

    return jsonhooks.install(ws, _target(ws), hooks(compact_bridge), SettingsLayout())


def uninstall(ws: Any) -> installers.Result:
    """`hooks uninstall --runtime gemini`."""
    from majordomus.hooks import jsonhooks

    return jsonhooks.uninstall(ws, _target(ws), {h.command for h in hooks(True)}, SettingsLayout())


def missing(ws: Any) -> list[jsonhooks.Gone]:
    """For doctor's `hooks.missing`: the hooks install added that `.gemini/settings.json` no longer has."""
    from majordomus.hooks import jsonhooks

    return jsonhooks.missing(ws, _target(ws), hooks(True), SettingsLayout())
