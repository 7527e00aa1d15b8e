"""The grammars of identifiers and record names (design §2a, §5, §6): one each, always a full match.

A `$` in a pattern accepts a trailing newline, so every check here is `fullmatch`; an id is checked
before it ever becomes part of a path.
"""

from __future__ import annotations

import re

from majordomus.lite.lazyre import LazyRe

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TASK_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
PROFILE_NAME = LazyRe(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
PIN_ID = LazyRe(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# <YYYYMMDDTHHMMSSZ>--<branch slug>--<7-hex head>--<first 16 hex of the record's sha256>.md
RECORD_NAME = LazyRe(
    r"([0-9]{8}T[0-9]{6}Z)--([A-Za-z0-9._-]{1,64})--([0-9a-f]{7})--([0-9a-f]{16})\.md"
)
_SLUG_OUT = LazyRe(r"[^A-Za-z0-9._-]")


def is_task_id(value: Any) -> bool:
    return isinstance(value, str) and TASK_ID.fullmatch(value) is not None


def is_profile_name(value: Any) -> bool:
    return isinstance(value, str) and PROFILE_NAME.fullmatch(value) is not None


def is_pin_id(value: Any) -> bool:
    return isinstance(value, str) and PIN_ID.fullmatch(value) is not None


def branch_slug(branch: str | None) -> str:
    if branch is None:
        return "detached"
    return _SLUG_OUT.sub("-", branch)[:64] or "-"


def record_name(timestamp_compact: str, branch: str | None, head: str | None, digest: str) -> str:
    """The file name of a record: `RecordName` parses exactly what this builds."""
    head7 = (head or "0" * 7)[:7]
    return f"{timestamp_compact}--{branch_slug(branch)}--{head7}--{digest[:16]}.md"


class RecordName(tuple[str, str, str, str]):  # a named tuple without importing typing or collections on the hot path
    """A parsed record file name: (timestamp, slug, head7, digest16)."""

    __slots__ = ()

    @property
    def timestamp(self) -> str:
        return str(self[0])

    @property
    def slug(self) -> str:
        return str(self[1])

    @property
    def head7(self) -> str:
        return str(self[2])

    @property
    def digest(self) -> str:
        return str(self[3])

    @classmethod
    def parse(cls, name: str) -> RecordName | None:
        """The parts of a record name, or None when `name` is not one (no `/`, no `..`, nothing else)."""
        match = RECORD_NAME.fullmatch(name) if isinstance(name, str) else None
        return cls(match.groups()) if match else None


def name_digest(name: str) -> str | None:
    """The 16-hex digest a record's file name claims, or None when the name is not a record name."""
    parsed = RecordName.parse(name)
    return parsed[3] if parsed is not None else None


def is_record_pointer(value: Any, directory: str) -> bool:
    """Whether `value` is `DIRECTORY/<record name>`, as a task record points at its latest record."""
    if not isinstance(value, str):
        return False
    head, sep, name = value.partition("/")
    return head == directory and sep == "/" and RecordName.parse(name) is not None
