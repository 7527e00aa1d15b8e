"""`state/active.json`, the one reader: which task is active in each (worktree, branch) of this machine.

The index maps `json.dumps([worktree, branch])` to a task id. It is read by hot paths (checkpoint, the
hooks) and by every task command alike, and it is untrusted input (design §2a): a file that is not a
regular file, not a JSON object of strings, or names anything but a valid task id is refused whole
(`CorruptIndex`, exit 12), never half-read and never rewritten around.
"""

from __future__ import annotations

import json

from majordomus.errors import EnvironmentProblem
from majordomus.lite import jsonbound, names, safeio
from majordomus.lite.statepaths import StatePaths, state_exists

TYPE_CHECKING = False
if TYPE_CHECKING:
    pass

MAX_BYTES = 1 << 20


class CorruptIndex(EnvironmentProblem):
    def __init__(self, path: str, what: str) -> None:
        super().__init__(
            f"{path} {what}; majordomus cannot tell which task is active",
            f"run `majordomus doctor`; if it is damaged, move it away (`mv {path} {path}.bad`) and "
            "`majordomus task resume ID` the task you work on",
        )
        self.path = path


def slot(worktree: str, branch: str | None) -> str:
    return json.dumps([worktree, branch])


def unslot(key: str) -> tuple[str, str | None] | None:
    """(worktree, branch) of a slot key, or None when the key is not one."""
    try:
        value = jsonbound.loads(key)
    except ValueError:
        return None
    if (isinstance(value, list) and len(value) == 2 and isinstance(value[0], str)
            and (value[1] is None or isinstance(value[1], str))):
        return value[0], value[1]
    return None


def read(state_root: str) -> dict[str, str]:
    """The whole index; {} when there is none yet."""
    paths = StatePaths.at(state_root)
    if not state_exists(paths):  # and never through a link on the way to it (design §2a)
        return {}
    path = paths.active_index
    data = safeio.read_optional(path, MAX_BYTES)
    if data is None:
        return {}
    try:
        index = jsonbound.loads(data)
    except (ValueError, RecursionError):
        raise CorruptIndex(path, "is not valid JSON (truncated or edited)") from None
    if not isinstance(index, dict):
        raise CorruptIndex(path, "is not a JSON object")
    for key, value in index.items():
        if unslot(key) is None:
            raise CorruptIndex(path, f"has a key that is not a [worktree, branch] pair: {key[:80]!r}")
        if not names.is_task_id(value):
            shown = value[:80] if isinstance(value, str) else value
            raise CorruptIndex(path, f"names {shown!r}, which is not a valid task id")
    return index


def active_id(state_root: str, worktree: str, branch: str | None) -> str | None:
    """The id of the task active in this worktree and branch, or None."""
    return read(state_root).get(slot(worktree, branch))
