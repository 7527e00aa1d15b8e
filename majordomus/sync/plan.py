"""What a pull will do (design §13), as plain data: the records it takes in, the task versions it settles
on, the conflicts and refusals; and the reads both halves of the union share (the settled base, an
entry's bytes)."""

from __future__ import annotations

from dataclasses import dataclass, field

from majordomus.git import odb
from majordomus.lite import safeio
from majordomus.store import records
from majordomus.sync import layout
from majordomus.sync.layout import Refusal
from majordomus.sync.remote import RemoteRef
from majordomus.workspace import Workspace

HELD_DEPTH = 1024  # commits of this machine's own ref and of its settled ref read for the versions it held
SYNCED_REF = "refs/majordomus/synced"  # what this machine settled on at its last pull (never pushed itself)
LEGACY_REF = "refs/majordomus/state"  # the same, as majordomus before the per-machine layout kept it here


@dataclass
class Conflict:
    task: str
    kept: str  # "local" or "remote"
    local_updated_at: str | None
    remote_updated_at: str | None
    local_sha256: str
    remote_sha256: str
    machine: str | None  # the remote ref whose version competed


@dataclass
class RecordIn:
    directory: str
    name: str
    oid: str
    data: bytes
    ref: str
    task: str | None  # as its front matter says
    present: bool = False  # linked in already by a pull that failed before its event: only the event is due


@dataclass
class TaskIn:
    task: str
    oid: str
    data: bytes
    ref: str
    disk: str | None  # blob id of the file here when planned (None: absent); changed since: not replaced
    ours: bool = False  # this machine's version stays, with claims merged in: nothing is held elsewhere


@dataclass
class Plan:
    records: list[RecordIn] = field(default_factory=list)  # to import
    known: list[tuple[str, str, str]] = field(default_factory=list)  # (dir, name, oid) held here already
    tasks: list[TaskIn] = field(default_factory=list)
    settled: dict[str, str] = field(default_factory=dict)  # task id -> blob id this machine settles on
    kept: dict[str, bytes] = field(default_factory=dict)  # blob id -> bytes of a version of ours settled on
    conflicts: list[Conflict] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)


def base_view(ws: Workspace) -> tuple[str | None, odb.TreeView | None, int]:
    """(commit, tree, format) of what this machine settled on last; the pre-issue-16 ref when that is all."""
    for name in (SYNCED_REF, LEGACY_REF):
        tip = odb.ref_target(ws.repo, name)
        found = odb.commit(ws.repo, tip) if tip else None
        if tip and found is None:  # it names a blob, or nothing here: damaged, never a race to retry
            from majordomus.errors import EnvironmentProblem

            raise EnvironmentProblem(f"{name} names {odb.kind(ws.repo, tip) or 'no object'} {tip}, not a commit: "
                                     "the repository is damaged there",
                                     f"remove it (`git update-ref -d {name}`): the next pull settles on what the "
                                     "remote holds; `git fsck` says what else is damaged")
        view = odb.tree(ws.repo, found.tree) if found is not None else None
        if view is not None:
            try:
                return tip, view, layout.format_of(view)
            except layout.NewerFormat:
                continue
    return None, None, 2


def key(data: bytes) -> tuple[str, str]:
    """What orders two versions of a task: `updated_at`, then the digest (every machine decides alike)."""
    try:
        updated = records.parse_yaml(data.decode("utf-8")).get("updated_at")
    except Exception:
        updated = None
    return (updated if isinstance(updated, str) else ""), records.sha256(data)


def refuse(plan: Plan, ref: RemoteRef, where: str, reason: str) -> None:
    plan.refused.append(Refusal(where, reason, ref=ref.name))


def read_entry(ws: Workspace, entry: odb.Entry, limit: int) -> tuple[bytes | None, str | None]:
    """A blob entry's bytes, or why it is refused: not a regular file, or over `limit` (told by the header)."""
    if not entry.is_blob:
        return None, "not a regular file"
    size = odb.blob_size(ws.repo, entry.oid)
    if size is None:
        return None, "not a regular file"
    if size > limit:
        return None, f"{size} bytes, over the {limit}-byte bound"
    return odb.read_blob(ws.repo, entry.oid), None


def read_local(path: str, limit: int) -> bytes | None:
    try:
        return safeio.read_optional(path, limit)
    except OSError:
        return None
    except Exception:
        return None


