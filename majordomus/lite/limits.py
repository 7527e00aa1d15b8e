"""The configuration's documented defaults (design §3), and the two journal limits `hook compact` reads.

`config.py` validates `.ai/config.yaml` against `DEFAULTS` with a real YAML parser. `hook compact` runs at
every compaction and cannot afford yaml, so `journal_limits` reads its two numbers with a deliberately
tiny parser; a value it cannot read keeps its default here, and every other command reports the error.
"""

from __future__ import annotations

import os

from majordomus.lite import safeio
from majordomus.lite.lazyre import LazyRe
from majordomus.lite.statepaths import CONFIG_RELPATH

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DEFAULTS: dict[str, Any] = {
    "checkpoint": {
        "max_body_lines": 40,
        "max_body_bytes": 16384,
        "retention_max_files": 500,
        "stale_after_minutes": 120,
        "max_changed_files": 200,
    },
    "handoff": {
        "required_sections": ["State", "Decisions", "Open items", "Next actions"],
        "max_bytes": 65536,
        "retention_max_files": 200,
    },
    "continuity": {
        "pin_max_bytes": 4096,
        "max_bytes": 131072,
        "render_max_bytes": 24576,
    },
    "journal": {
        "line_max_bytes": 16384,
        "rotate_bytes": 1048576,
    },
    "hooks": {
        "max_context_chars": 10000,
        "codex_max_tokens": 2500,
    },
    "profile": "default",
}
# The smallest value that still does the job: below it a limit silently empties what it bounds (a briefing
# of 0 bytes, a context of no characters), so the configuration is refused instead, naming the key.
# (The other limits refuse loudly when set too low: a body over them is refused with a message.)
MINIMUMS = {"continuity.render_max_bytes": 256, "hooks.max_context_chars": 256, "hooks.codex_max_tokens": 64}
MIN_RENDER_BYTES = MINIMUMS["continuity.render_max_bytes"]
CONFIG_MAX_BYTES = 64 << 10  # design §2a: a committed config is read up to this bound
PROFILE_MAX_BYTES = 64 << 10
NUMBER_MAX = 1 << 31  # a configured number above this is refused, naming the key

_SECTION = LazyRe(r"journal[ \t]*:[ \t]*(?:#.*)?")
_FLOW = LazyRe(r"journal[ \t]*:[ \t]*\{(?P<body>[^{}]*)\}[ \t]*(?:#.*)?")
_ENTRY = LazyRe(r"""(?P<q>["']?)(?P<key>[A-Za-z_]+)(?P=q)[ \t]*:[ \t]*(?P<value>[^#]*?)[ \t]*(?:#.*)?""")
_INT = LazyRe(r"\+?[0-9][0-9_]*")


def _int_or_none(text: str) -> int | None:
    if not _INT.fullmatch(text):
        return None
    value = int(text.replace("_", ""))
    return value if value <= NUMBER_MAX else None


def parse_journal_limits(text: str) -> dict[str, int]:
    """`journal.rotate_bytes` and `journal.line_max_bytes` from the text of `.ai/config.yaml`.

    Understood: the block form the template uses (a top-level `journal:` line, then indented
    `key: value  # comment` lines) and the one-line flow form `journal: {rotate_bytes: 4096}`.
    Values are plain whole numbers (`_` separators allowed).
    """
    defaults = DEFAULTS["journal"]
    found: dict[str, int] = {}
    entries: list[str] = []
    in_section = False
    for raw in text.lstrip("\ufeff").splitlines():
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        if raw[0] in " \t":
            if in_section:
                entries.append(raw.strip())
            continue
        in_section = bool(_SECTION.fullmatch(raw))
        flow = _FLOW.fullmatch(raw)
        if flow:
            entries.extend(part.strip() for part in flow.group("body").split(","))
    for entry in entries:
        match = _ENTRY.fullmatch(entry)
        if match and match.group("key") in defaults:
            value = _int_or_none(match.group("value"))
            if value is not None:
                found[match.group("key")] = value
            else:
                found.pop(match.group("key"), None)
    return {key: found.get(key, default) for key, default in defaults.items()}


def journal_limits(config_root: str | None) -> dict[str, int]:
    if config_root is None:
        return dict(DEFAULTS["journal"])
    try:
        data = safeio.read_optional(os.path.join(config_root, CONFIG_RELPATH), CONFIG_MAX_BYTES)
    except (OSError, safeio.EnvironmentProblem):
        data = None
    if data is None:
        return dict(DEFAULTS["journal"])
    return parse_journal_limits(data.decode("utf-8", "replace"))
