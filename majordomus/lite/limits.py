"""The configuration's documented defaults (design §3), and its validated cache, read without yaml.

There is one reader of `.ai/config.yaml`: `config.py`, with a real YAML parser, which keeps the validated
result as JSON in `cache/config.json` under the file's stat signature. A hot path reads only that copy —
what majordomus itself wrote, for exactly this file — and falls back to the full reader otherwise, so no
second parser can disagree with the first.
"""

from __future__ import annotations

import os

from majordomus.lite import jsonbound, names, safeio, statepaths

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
# of 0 bytes, a context of no characters), so the configuration is refused instead, naming the key. A size,
# a count of files or lines, or a number of minutes where zero makes no sense (a journal rotated at every
# line, a body of no bytes, a task stale the moment it starts) is at least 1; the limits set too low past
# that refuse loudly (a body over them is refused with a message). Only `checkpoint.max_changed_files` may
# be 0: a checkpoint then lists no changed file and says how many it left out.
MINIMUMS = {
    "checkpoint.max_body_lines": 1,
    "checkpoint.max_body_bytes": 1,
    "checkpoint.retention_max_files": 1,
    "checkpoint.stale_after_minutes": 1,
    "handoff.max_bytes": 1,
    "handoff.retention_max_files": 1,
    "continuity.pin_max_bytes": 1,
    "continuity.max_bytes": 1,
    "continuity.render_max_bytes": 256,
    "journal.line_max_bytes": 1,
    "journal.rotate_bytes": 1,
    "hooks.max_context_chars": 256,
    "hooks.codex_max_tokens": 64,
}
MIN_RENDER_BYTES = MINIMUMS["continuity.render_max_bytes"]
CONFIG_MAX_BYTES = 64 << 10  # design §2a: a committed config is read up to this bound
PROFILE_MAX_BYTES = 64 << 10
NUMBER_MAX = 1 << 31  # a configured number above this is refused, naming the key

def signature(path: str, st: os.stat_result) -> list[Any]:
    """What a cached configuration is valid for: the file's path, inode, size and times."""
    return [path, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def read_cache(cache_path: str, sig: list[Any]) -> tuple[dict[str, Any], list[str]] | None:
    """(values, unknown keys) of the validated copy `config.remember` wrote for exactly `sig`; None when it
    holds anything else. The cache is untrusted (design §2a): its values are checked against the types of
    `DEFAULTS`, and any doubt sends the caller to the full reader."""
    try:
        if not statepaths.is_real_dir(os.path.dirname(cache_path)):  # a link where `cache/` belongs: not read
            return None
        data = jsonbound.loads(safeio.read(cache_path, CONFIG_MAX_BYTES * 4))
    except (OSError, ValueError, safeio.EnvironmentProblem):
        return None
    if not isinstance(data, dict) or data.get("signature") != sig:
        return None
    values, unknown = data.get("values"), data.get("unknown_keys")
    if not isinstance(values, dict) or not isinstance(unknown, list) or set(values) != set(DEFAULTS):
        return None
    for key, default in DEFAULTS.items():
        value = values[key]
        if isinstance(default, dict):
            if not isinstance(value, dict) or set(value) != set(default):
                return None
            if not all(type(value[k]) is type(d) for k, d in default.items()):
                return None
            if not all(value[k] >= MINIMUMS.get(f"{key}.{k}", 0) for k, d in default.items() if type(d) is int):
                return None
        elif type(value) is not type(default):
            return None
    if not names.is_profile_name(values["profile"]):
        return None
    return values, [str(k) for k in unknown]


def journal_limits(config_file: str | None, cache_path: str) -> dict[str, int] | None:
    """`journal.*` for `hook compact`, without yaml: the defaults when there is no `.ai/config.yaml`, the
    validated cache when it is the file's, else None: then only the full reader (`config.load`) can say."""
    if config_file is None:
        return dict(DEFAULTS["journal"])
    try:
        fd = safeio.open_regular(config_file, CONFIG_MAX_BYTES)
    except FileNotFoundError:
        return dict(DEFAULTS["journal"])
    except (OSError, safeio.EnvironmentProblem):
        return None
    try:
        sig = signature(config_file, os.fstat(fd))
    finally:
        os.close(fd)
    cached = read_cache(cache_path, sig)
    return None if cached is None else {key: int(value) for key, value in cached[0]["journal"].items()}
