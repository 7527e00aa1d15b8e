"""A git object id that cannot be wrong once built (git-revise's `Oid` is the model).

Full ids only: 40 hex digits (sha1) or 64 (sha256), lower case. Ids enter majordomus from git's own output
and from caches and records that anything could have truncated or edited (design §2a): each is parsed
here, so a short or malformed id never reaches a record.
"""

from __future__ import annotations

_HEX = frozenset("0123456789abcdef")
LENGTHS = (40, 64)  # sha1, sha256


class Oid(str):
    """A full object id; the constructor refuses any other length or any character but lower-case hex."""

    __slots__ = ()

    def __new__(cls, value: str) -> Oid:
        if not isinstance(value, str) or len(value) not in LENGTHS or not _HEX.issuperset(value):
            shown = value[:80] if isinstance(value, str) else type(value).__name__
            raise ValueError(f"not a full object id: {shown!r}")
        return super().__new__(cls, value)

    @classmethod
    def parse(cls, value: object) -> Oid | None:
        """The id, or None when `value` is not a full one."""
        try:
            return cls(value)  # type: ignore[arg-type]
        except ValueError:
            return None

    @property
    def short(self) -> str:
        return self[:7]
