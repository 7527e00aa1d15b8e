"""Claims (design §18): who holds a task, where, and since when — kept in the task record, so they travel.

A claim is `{id, owner, host, worktree, branch, at}`; giving it up adds `ended_at` and `ended_by`. It is
recorded when a worker takes a task (`task start`, `task resume`) and ended when that worker lets it go
(`task release`, `handoff`, `done`, another task started in its place, a takeover). One machine never
holds two live claims on one task: a second live claim can only arrive from another machine, through
`majordomus sync` — two workers who both resumed a handed-off task before syncing. That is a double
claim: `doctor` fails (`task.double-claim`) and `brief` opens with it, until one of them releases.

How claims from two machines meet. Task records merge by their newest `updated_at` (design §13), which
would drop the losing side's claim whole. Two rules keep it:
- `merge(...)` is the union of claim lists by id, an end on any side winning; a sync that merges two
  versions of a task record should keep the chosen version with the merged claims (`merge_task_data`).
- Each machine remembers its own live claims in `state/claims.json` (task id -> claim, machine-local,
  never synced). When sync imports a version of a task that lost this machine's live claim,
  `restore_mine` puts it back, so the next push carries both claims whatever the merge chose.
"""

from __future__ import annotations

import json

from majordomus.lite import jsonbound, names, safeio
from majordomus.store.taskfile import MAX_CLAIMS, check_claims

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from majordomus.workspace import Workspace

KEEP_ENDED = 8  # ended claims kept in the record: an end must outlive the sync rounds that carry it
INDEX_MAX_BYTES = 1 << 20
check = check_claims  # a stored claim list's form: the task record's file checks it (`store.taskfile`)


def host() -> str:
    """This machine's host name, as a claim records it: held to the one-line field grammar at ingest, as
    every machine's sync holds it (exit 10 before anything is written, naming where it comes from)."""
    import socket

    from majordomus.lite import textrules

    return textrules.checked("host", socket.gethostname() or "unknown", source="this machine's host name",
                             hint="a claim records the host name, and no machine's sync takes one that is not "
                                  "one plain line: give this machine a plain host name (`hostnamectl hostname`)")


def new(owner: str, worktree: str, branch: str | None, at: str) -> dict[str, Any]:
    import uuid  # here, not at the top: the hot paths read claims, only `start`/`resume` make one

    return {"id": uuid.uuid4().hex[:16], "owner": owner, "host": host(),
            "worktree": worktree, "branch": branch, "at": at}


def live(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in items if c.get("ended_at") is None]


def end(items: list[dict[str, Any]], ids: Any, at: str, why: str) -> list[str]:
    """End the live claims whose id is in `ids` (in place); the ids ended."""
    ended = []
    for claim in items:
        if claim["id"] in ids and claim.get("ended_at") is None:
            claim["ended_at"], claim["ended_by"] = at, why
            ended.append(claim["id"])
    return ended


def prune(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every live claim and the latest KEEP_ENDED ended ones, oldest first; within MAX_CLAIMS."""
    ended = sorted((c for c in items if c.get("ended_at") is not None), key=lambda c: (c["ended_at"], c["id"]))
    kept = live(items) + ended[-KEEP_ENDED:]
    kept.sort(key=lambda c: (c["at"], c["id"]))
    return kept[-MAX_CLAIMS:]


def merge(*versions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The union of several versions of one task's claims by id; a claim ended in any version is ended."""
    by_id: dict[str, dict[str, Any]] = {}
    for items in versions:
        for claim in items:
            seen = by_id.get(claim["id"])
            if seen is None or (seen.get("ended_at") is None and claim.get("ended_at") is not None):
                by_id[claim["id"]] = dict(claim)
    return prune(list(by_id.values()))


def merge_task_data(chosen: bytes, others: list[bytes]) -> bytes:
    """For sync: the chosen version of a task record (YAML) with the claims of every version merged in.

    Versions that are unreadable are ignored here: sync checks and refuses them on its own."""
    from majordomus.store import records

    def claims_of(data: bytes) -> list[dict[str, Any]]:
        try:
            items = records.parse_yaml(data.decode("utf-8")).get("claims") or []
            check(items)
            return items
        except (ValueError, UnicodeDecodeError):
            return []

    doc = records.parse_yaml(chosen.decode("utf-8"))
    merged = merge(claims_of(chosen), *(claims_of(d) for d in others))
    if merged == (doc.get("claims") or []):
        return chosen
    doc["claims"] = merged
    return records.emit_yaml(doc.items()).encode("utf-8")


def describe(claim: dict[str, Any]) -> str:
    """`ann@example.org on host1 in /src/app (branch main) since 2026-09-03T19:45:00Z` (unescaped)."""
    branch = f"branch {claim.get('branch')}" if claim.get("branch") else "a detached HEAD"
    return f"{claim['owner']} on {claim['host']} in {claim['worktree']} ({branch}) since {claim['at']}"


# This machine's own claims: machine-local, never synced, written under the state lock. Each machine is the
# authority on its own claims: what it holds and what it gave up is put back into any version of a task
# record that sync brings without it.
MAX_ENDED_REMEMBERED = 64


def _index_path(ws: Workspace) -> str:
    return ws.paths.claims


def _load(ws: Workspace) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """(task id -> live claim held here, claims given up here, oldest first). An unreadable index
    counts as empty: claims are evidence for people, never a lock; `doctor` reports a broken file."""
    try:
        data = safeio.read_optional(_index_path(ws), INDEX_MAX_BYTES)
        doc = jsonbound.loads(data.decode("utf-8")) if data else {}
    except (ValueError, UnicodeDecodeError, OSError, safeio.EnvironmentProblem):
        return {}, []
    if not isinstance(doc, dict):
        return {}, []
    held: dict[str, dict[str, Any]] = {}
    raw_held = doc.get("held")
    for task_id, claim in (raw_held.items() if isinstance(raw_held, dict) else ()):
        if names.is_task_id(task_id) and _valid(claim):
            held[task_id] = claim
    raw_ended = doc.get("ended")
    return held, [c for c in (raw_ended if isinstance(raw_ended, list) else ()) if _valid(c)]


def _valid(claim: Any) -> bool:
    try:
        check([claim])
    except ValueError:
        return False
    return True


def mine(ws: Workspace) -> dict[str, dict[str, Any]]:
    """Task id -> this machine's live claim on it."""
    return _load(ws)[0]


def held_here_unindexed(task: Any, mine: dict[str, dict[str, Any]]) -> bool:
    """Whether `task`, which the active index does not name where its record says it is active, is held
    there by this machine's own live claim (`mine`, from `claims.mine`): a `task start` or `resume` that
    failed after the task's record (design §10), which the same command run again completes."""
    ours = mine.get(task.id)
    if ours is None or (ours["worktree"], ours["branch"]) != (task.worktree, task.branch):
        return False
    return ours["id"] in {c["id"] for c in live(task.claims)}


def remember(ws: Workspace, task_id: str, claim: dict[str, Any] | None, *, ended: dict[str, Any] | None = None) -> None:
    """Set (or with None, forget) this machine's live claim on `task_id`, and remember a claim it gave
    up (`ended`) so that no merge brings it back to life. The caller holds the state lock."""
    from majordomus.store import files

    held, gone = _load(ws)
    if claim is None:
        held.pop(task_id, None)
    else:
        held[task_id] = claim
    if ended is not None:
        gone = [c for c in gone if c["id"] != ended["id"]] + [dict(ended)]
    doc = {"held": held, "ended": gone[-MAX_ENDED_REMEMBERED:]}
    files.replace(_index_path(ws), json.dumps(doc, indent=1, sort_keys=True).encode("utf-8") + b"\n")


def restore_mine(ws: Workspace, task_id: str, items: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """A version of a task's claims (from sync) with this machine's own claims put back as this machine
    knows them: its live claim if the version lost it, its ends if the version lost them. A claim of
    ours that another machine ended (a takeover) stays ended, and we stop holding it. Returns the claims
    and what was put back (`restored <id>`, `re-ended <id>`)."""
    held, gone = _load(ws)
    out = [dict(c) for c in items]
    by_id = {c["id"]: c for c in out}
    done = []
    for claim in gone:
        found = by_id.get(claim["id"])
        if found is not None and found.get("ended_at") is None:
            found["ended_at"], found["ended_by"] = claim.get("ended_at"), claim.get("ended_by")
            done.append(f"re-ended {claim['id']}")
    ours = held.get(task_id)
    if ours is not None:
        found = by_id.get(ours["id"])
        if found is None:
            out.append(dict(ours))
            done.append(f"restored {ours['id']}")
        elif found.get("ended_at") is not None:
            remember(ws, task_id, None)  # ended on another machine: a takeover; we no longer hold it
    return (prune(out) if done else out), done


def double_claim(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The live claims when there are two or more (a double claim), else []."""
    found = live(items)
    return found if len(found) > 1 else []


def brief_section(task_id: str, items: list[dict[str, Any]]) -> str:
    """The warning `brief` opens with when two workers hold the task; '' otherwise."""
    found = double_claim(items)
    if not found:
        return ""
    from majordomus.output import escape

    lines = [f"\n# Double claim: {len(found)} workers hold this task at once\n"]
    lines += [f"- {escape(describe(c))}\n" for c in found]
    lines.append(f"Agree who continues; the other runs `majordomus task release {task_id}` and syncs. "
                 "Work done on both sides since these times may overlap.\n")
    return "".join(lines)
