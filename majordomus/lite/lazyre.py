"""Regular expressions compiled on first use: a hot command pays only for the patterns it matches."""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class LazyRe:
    """Stands for `re.compile(pattern, flags)` and compiles it the first time it is used. A method used
    once is kept on the instance, so later calls (once per record of a large store) cost a plain lookup."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._compiled: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self.flags)
        found = getattr(self._compiled, name)
        self.__dict__[name] = found
        return found
