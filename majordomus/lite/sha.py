"""SHA-256 of a few bytes, without loading OpenSSL for them.

`hashlib.sha256` is OpenSSL's: importing `hashlib` loads `_hashlib` and libcrypto, 2–3 ms of a hook
that must stay within 1.5× of `python` + `git status` (design §16), to hash a few KiB. The interpreter's
own SHA-256 (`_sha2` from Python 3.12, `_sha256` before) gives the same digest and loads in a tenth of
that, but runs many times slower than OpenSSL's on large inputs (no SHA extensions). So the first
`SMALL_BYTES` a process hashes go through the interpreter's module, and anything past them — a
`ledger --verify` of a million lines, a large record — through `hashlib`: a hook never pays for
OpenSSL, and a scan pays for it once. The digest is the same either way.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # on every hook's path: typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any

SMALL_BYTES = 64 << 10  # about what the interpreter's module hashes in the time OpenSSL takes to load


def _interpreters() -> Any:
    try:  # named `_sha2` from Python 3.12 on
        return __import__("_sha2" if sys.version_info >= (3, 12) else "_sha256").sha256
    except (ImportError, AttributeError):
        return None  # a build without it: hashlib for everything


_small: Any = _interpreters()
_left = SMALL_BYTES if _small is not None else 0
_large: Any = None  # hashlib.sha256, once the small budget is spent


def hexdigest(data: bytes | bytearray | memoryview) -> str:
    """The SHA-256 of `data` (bytes-like), in lowercase hex."""
    global _left, _large
    if _large is None:
        size = data.nbytes if isinstance(data, memoryview) else len(data)
        if size <= _left:
            _left -= size
            small: str = _small(data).hexdigest()
            return small
        import hashlib

        _large = hashlib.sha256
    large: str = _large(data).hexdigest()
    return large
