"""This machine's stable id (design §13): created once in the state, the name of the one ref it pushes.

One writer per ref is what lets any number of machines push at the same moment without a race: each
writes `refs/majordomus/machines/<id>` and nothing else. The id is the host name (as a slug, for people
reading `sync status`) and eight random hex digits (so two hosts of one name never share a ref).
"""

from __future__ import annotations

import os
import re
import socket

from majordomus.errors import EnvironmentProblem
from majordomus.lite import safeio
from majordomus.store import files
from majordomus.workspace import Workspace

PREFIX = "refs/majordomus/machines/"
STATE_REF = "refs/majordomus/state"  # the folded (compacted) state, and the whole state of format 1
MACHINE_ID = re.compile(r"[a-z0-9][a-z0-9-]{2,62}")


def is_machine_id(value: object) -> bool:
    return isinstance(value, str) and MACHINE_ID.fullmatch(value) is not None


def ref(machine_id: str) -> str:
    return PREFIX + machine_id


def _path(ws: Workspace) -> str:
    return ws.paths.machine_id


def read(ws: Workspace) -> str | None:
    """This machine's id, or None when it has none yet; a file that is not one is exit 12 naming it."""
    path = _path(ws)
    data = safeio.read_optional(path, 128)
    if data is None:
        return None
    text = data.decode("utf-8", "replace")
    value = text[:-1] if text.endswith("\n") else text
    if not is_machine_id(value):
        raise EnvironmentProblem(
            f"{path} does not hold a machine id (1 line of a-z, 0-9 and `-`)",
            "move it away: the next `majordomus sync push` makes a new id (this machine's ref on the remote "
            "then has a new name; `majordomus sync compact` folds the old one)")
    return value


def _generate() -> str:
    host = re.sub(r"[^a-z0-9]+", "-", socket.gethostname().lower()).strip("-")[:40] or "machine"
    return f"{host}-{os.urandom(4).hex()}"


def ensure(ws: Workspace) -> str:
    """This machine's id, made now if it has none (exclusively: two syncs at once agree on one)."""
    found = read(ws)
    if found is not None:
        return found
    ws.ensure_state()
    files.link_in(os.path.dirname(_path(ws)), os.path.basename(_path(ws)), (_generate() + "\n").encode("ascii"))
    made = read(ws)
    assert made is not None
    return made
