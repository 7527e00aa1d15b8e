"""One timeline of a task (design §22): its ledger events, its records and its branch's commits, newest first.

The ledger and the records are the truth; git adds the commits when it still has them. A shallow clone, a
branch that is gone or a detached task leaves a timeline of events alone, with a note that says why.
"""

from __future__ import annotations

import collections
import heapq
import os
from datetime import datetime
from typing import Any

from majordomus import clock, continuity, continuity_doc, tasks
from majordomus.errors import EnvironmentProblem, UsageError
from majordomus.git.status import git
from majordomus.lite import names, safeio
from majordomus.lite.statepaths import readable_dir
from majordomus.output import dumps, escape
from majordomus.store import ledger, reading
from majordomus.workspace import Workspace

DEFAULT_LIMIT = 20  # one screen
GRAPH_RECORDS_MAX = 1000  # records read to hang under the commits of a graph
JOURNAL_MAX_BYTES = 64 << 20  # the compaction journal's read bound (hooks.journal)
JOURNAL_FILES = ("compact-events.jsonl.1", "compact-events.jsonl")  # rotated first: oldest first
RECORD_EVENTS = {"task.checkpoint": "checkpoint", "task.handoff": "handoff", "task.run": "run"}
KINDS = {"task.start": "start", "task.pause": "pause", "task.resume": "resume", "task.reopen": "reopen",
         "task.claim": "claim", "task.release": "release", "task.done": "done", "context.pin": "pin",
         "context.unpin": "unpin", "sync.import": "import", "sync.conflict": "conflict", "sync.refused": "refused", "git.rewrite": "rewrite",
         "session.start": "session", "session.stop": "session-end", **RECORD_EVENTS}
_COMMON = frozenset(("v", "seq", "at", "event", "task", "worktree", "branch", "prev"))
NO_HEAD = "-------"


class Entry:
    """One line of the timeline. `order` breaks ties of one second: commits before the events after them."""

    __slots__ = ("at", "commit", "head", "kind", "order", "path", "summary", "task")

    def __init__(self, at: str, kind: str, head: str | None, summary: str, path: str | None = None,
                 task: str | None = None, order: int = 0, commit: str | None = None) -> None:
        self.at, self.kind, self.head, self.summary, self.path = at, kind, head, summary, path
        self.task, self.order, self.commit = task, order, commit

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"at": self.at, "kind": self.kind, "head": self.head, "summary": self.summary,
                               "path": self.path, "task": self.task}
        if self.commit is not None:
            out["commit"] = self.commit
        return out

    def key(self) -> tuple[str, int]:
        return (self.at, self.order)


class Timeline:
    __slots__ = ("entries", "notes", "tasks")

    def __init__(self, entries: list[Entry], notes: list[str], task_ids: list[str]) -> None:
        self.entries = entries  # newest first
        self.notes = notes  # what is missing and why (no git history, an unreadable record)
        self.tasks = task_ids


def select(ws: Workspace, task_id: str | None, every: bool) -> list[tasks.Task]:
    """The tasks to picture: TASK, every task (`--all`) or the active one here; refusals as `task show`."""
    if every:
        if task_id is not None:
            raise UsageError("give a TASK or --all, not both", "`majordomus log --all` pictures every task")
        return tasks.all_tasks(ws)
    return [tasks.named_or_active(ws, task_id)]


_SINCE_HINT = "try `yesterday`, `2 weeks ago`, 2026-11-30 or 2026-11-30T09:00:00Z"
_FUTURE_SLACK_S = 60  # a time a minute ahead is this machine's clock, not a mistyped date


def since_iso(ws: Workspace, when: str) -> str:
    """WHEN as git reads it (`yesterday`, `2 weeks ago`, `2026-11-30`, an ISO time), as a UTC time. What git
    reads leniently as "now" (`not a date`), a calendar date that does not exist (`2026-13-45`) and a time
    in the future are usage errors (exit 2): each would show nothing and say nothing."""
    import re
    import time

    shown = escape(when if len(when) <= 80 else when[:60] + "…")
    if len(when) > 200 or any(ord(ch) < 32 or ord(ch) == 127 for ch in when):  # no time is that; NUL cannot reach git
        raise UsageError(f"`{shown}` is not a time git reads", _SINCE_HINT)
    dated = re.match(r"\s*(\d{4})-(\d{1,2})-(\d{1,2})(?!\d)", when)
    if dated is not None:
        try:
            year, month, day = (int(part) for part in dated.groups())
            datetime(year, month, day)
        except ValueError:
            raise UsageError(f"`{shown}` is not a date: {dated.group().strip()} does not exist", _SINCE_HINT) from None
    epoch_given = re.fullmatch(r"\s*@([0-9]{1,12})\s*", when)  # seconds since 1970: git reads `@0` as now
    if epoch_given is not None:
        out = epoch_given.group(1)
    else:
        # git's careful date reader (the one of gc.pruneExpire) refuses what `--since` would read as now.
        asked = time.time()
        out = git(ws.place, "-c", f"majordomus.since={when}", "config", "--type=expiry-date", "majordomus.since",
                  ok=(0, 1, 128)).decode("utf-8", "replace").strip()
        answered = time.time()
        if not out.isdigit():
            raise UsageError(f"git cannot read the time `{shown}`", _SINCE_HINT)
        # the moment git ran lies between the asking and the answer (a loaded machine takes seconds to start it)
        if asked - 1 <= int(out) <= answered + 1 or int(out) == (1 << 64) - 1:  # `0`, `999999999999`, `now`
            raise UsageError(f"git reads the time `{shown}` as this very moment: nothing would be shown", _SINCE_HINT)
    epoch = int(out)
    if epoch > time.time() + _FUTURE_SLACK_S:
        raise UsageError(f"the time `{shown}` is in the future ({clock.iso_of(int(out))}): nothing would be shown",
                         _SINCE_HINT)
    return clock.iso_of(epoch)


def build(ws: Workspace, selected: list[tasks.Task], *, limit: int | None = DEFAULT_LIMIT,
          since: str | None = None, every: bool = False, commits: bool = True) -> Timeline:
    """The newest `limit` entries (all with None) since `since` (a UTC time) of the selected tasks."""
    ids = {t.id for t in selected}
    notes: list[str] = []
    kept: collections.deque[dict[str, Any]] = collections.deque(maxlen=limit)
    dropped = [0]
    for _line, event in ledger.scan(ws.paths.ledger, dropped):
        if (event.get("task") in ids or (every and event.get("task") is None)) and (
                since is None or str(event.get("at")) >= since):
            kept.append(event)
    if dropped[0]:
        notes.append(f"{dropped[0]} torn or invalid ledger lines skipped (run `majordomus doctor`)")
    pins = _pins(ws, ids, notes)
    entries = [_from_event(ws, event, pins, notes) for event in kept]
    entries.reverse()  # the ledger's order, newest first: what happened, whatever the clocks said (design §13)
    timed = [e for task in selected for e in _compactions(ws, task.id, since)]
    if commits:
        timed.extend(_commits(ws, selected, limit, since, notes))
    timed.sort(key=Entry.key, reverse=True)
    # Commits and compactions (which have no ledger sequence) go in by time between the events; a record
    # written with a clock set back stays where the ledger put it, never below older events.
    merged = list(heapq.merge(entries, timed, key=Entry.key, reverse=True))
    return Timeline(merged[:limit] if limit is not None else merged, notes, sorted(ids))


def _pins(ws: Workspace, ids: set[str], notes: list[str]) -> dict[str, dict[str, Any]]:
    """pin id -> pin, of the tasks' continuity: the ledger never holds a pin's text (design §8)."""
    found: dict[str, dict[str, Any]] = {}
    for task_id in sorted(ids):
        try:
            doc = continuity.load(ws, task_id)
        except EnvironmentProblem as exc:
            notes.append(f"the pins of `{task_id}` are not shown: {exc.message}")
            continue
        for key in continuity_doc.PIN_KEYS:
            for pin in (doc or {}).get(key, []):
                found[pin["id"]] = pin
    return found


class Replaced:
    """A stored record whose bytes no longer match the digest in its name: nothing it says is shown."""

    __slots__ = ()


REPLACED = Replaced()
REPLACED_SUMMARY = "(replaced: not shown)"


def read_record(ws: Workspace, rel: str) -> tuple[dict[str, Any], str] | Replaced | None:
    """(front matter, body) of a stored record; `REPLACED` when its bytes are no longer the ones its name
    was made from (the digest check of every reader, `store.reading`); None when it is gone or not readable
    as one. The path comes from the ledger: only `DIRECTORY/<record name>` is ever read, never `../`."""
    if not any(names.is_record_pointer(rel, d) for d in ("checkpoints", "handoffs", "runs")):
        return None
    found = reading.examine(ws, rel)  # a link where a record directory belongs: refused, never read through
    if isinstance(found, reading.Record):
        return found.meta, found.body
    return REPLACED if found.why == "replaced" else None


def first_line(body: str) -> str:
    for line in body.split("\n"):
        if line.strip():
            return line.strip()
    return ""


def _from_event(ws: Workspace, event: dict[str, Any], pins: dict[str, dict[str, Any]],
                notes: list[str]) -> Entry:
    name = str(event["event"])
    kind = KINDS.get(name, name)
    head = event.get("head") if isinstance(event.get("head"), str) else None
    rel = event.get("path") if isinstance(event.get("path"), str) else None
    summary = _detail(event)
    if name in RECORD_EVENTS or (name == "sync.import" and event.get("kind") in ("checkpoint", "handoff", "run")):
        found = read_record(ws, rel) if rel else None
        if found is None:
            notes.append(f"the record {rel} of {name} (seq {event['seq']}) is gone or unreadable")
            summary = "(record gone or unreadable)"
        elif isinstance(found, Replaced):
            notes.append(f"the record {rel} of {name} (seq {event['seq']}) was replaced after it was written "
                         "(its content no longer matches the digest in its name): not shown (run `majordomus doctor`)")
            summary = REPLACED_SUMMARY
        else:
            meta, body = found
            head = meta.get("head") if isinstance(meta.get("head"), str) else head
            summary = run_summary(meta) if meta.get("kind") == "run" else first_line(body)
            if name == "sync.import":
                summary = f"{meta.get('kind')} from {event.get('remote')}: {summary}"
    elif name == "task.start":
        summary = str(event.get("title") or "")
    elif name == "task.pause":
        summary = str(event.get("reason") or event.get("by") or "")
    elif name == "context.pin":
        pin = pins.get(str(event.get("pin")))
        summary = f"{event.get('kind')}: " + (pin["text"] if pin else "(no longer pinned)")
        rel = (ws.paths.relative(continuity.path_of(ws, event["task"])) if names.is_task_id(event.get("task"))
               else None)
    elif name == "context.unpin":
        summary = f"{event.get('kind')} {str(event.get('pin'))[:8]}"
    elif name == "git.rewrite":
        from majordomus import rewrites

        summary = rewrites.summary(event)  # never the mapping itself: up to 3,000 pairs
    elif name == "sync.refused":
        from majordomus.sync import pull_refused

        summary = pull_refused.summary(event)
    elif name == "task.claim" and isinstance(event.get("claim"), dict):
        claim = event["claim"]
        summary = f"{claim.get('owner')} on {claim.get('host')}"
    path = ws.display(ws.paths.absolute(rel)) if rel else None
    return Entry(str(event["at"]), kind, head[:7] if head else None, first_line(summary), path,
                 event.get("task"), order=1 + int(event["seq"]))


def run_summary(meta: dict[str, Any]) -> str:
    """`tests passed`, `tests failed (exit 1)`, `tests was interrupted (signal 2)`."""
    status = meta.get("exit_status")
    if status == 0:
        verdict = "passed"
    elif isinstance(meta.get("signal"), int):
        verdict = f"was interrupted (signal {meta['signal']})"
    else:
        verdict = f"failed (exit {status})"
    return f"{meta.get('label')} {verdict}"


def _detail(event: dict[str, Any]) -> str:
    extra = {k: v for k, v in event.items() if k not in _COMMON}
    return " ".join(f"{k}={v if isinstance(v, str) else dumps(v)}" for k, v in extra.items())


def _compactions(ws: Workspace, task_id: str, since: str | None) -> list[Entry]:
    """Each completed compaction (a `post` line) of the task's journal, read as `context status` reads it
    (hooks.journal): the bounded JSON loader, the trigger normalised to manual|auto|unknown, the runtime one
    of ours, and a line written twice (a hook registered twice, a retry) counted once."""
    from majordomus.hooks import journal

    if not readable_dir(ws.paths, ws.paths.context_dir(task_id)):  # a link on the way: refused
        return []
    out = []
    previous: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for name in JOURNAL_FILES:
        try:
            data = safeio.read_optional(os.path.join(ws.paths.context_dir(task_id), name), JOURNAL_MAX_BYTES)
        except EnvironmentProblem:
            continue  # `context status` and doctor say what is wrong with it
        for line in (data or b"").split(b"\n"):
            if not line.strip():
                continue
            event = journal._event(line)  # never a RecursionError: deeper than the bound is a bad line
            if event is None:
                continue
            stream, key = journal._stream(event), journal._dedupe_key(event)
            if previous.get(stream) == key:
                continue
            previous[stream] = key
            if event["phase"] != "post" or not clock.is_iso(event["at"]):
                continue
            if since is None or event["at"] >= since:
                out.append(Entry(event["at"], "compact", None, f"{event['trigger']} compaction "
                                 f"({event['runtime']})", None, task_id, order=1))
    return out


def branches(ws: Workspace, selected: list[tasks.Task], notes: list[str]) -> list[str]:
    """The task branches git still has; a note for each one it has not."""
    # split on LF alone: `splitlines` also splits on U+2028/U+2029/NEL, which git allows in a branch name
    have = set(git(ws.place, "for-each-ref", "--format=%(refname:short)", "refs/heads/").decode(
        "utf-8", "replace").split("\n"))
    out = []
    for task in selected:
        if task.branch is None:
            notes.append(f"task `{task.id}` is on a detached HEAD: its commits are not shown")
        elif task.branch not in have:
            notes.append(f"branch `{task.branch}` of task `{task.id}` is not in this clone: its commits are "
                         "not shown")
        elif task.branch not in out:
            out.append(task.branch)
    return out


def _log_args(ws: Workspace, selected: list[tasks.Task], since: str | None, notes: list[str],
              from_start: bool = True) -> list[str]:
    """The branches and the time floor: since the task started (and since WHEN, when given)."""
    refs = branches(ws, selected, notes)
    if not refs:
        return []
    floor = min(t.started_at for t in selected) if from_start else None
    floor = max(floor, since) if floor and since else floor or since
    return [*([f"--since={floor}"] if floor else []), *(f"refs/heads/{b}" for b in refs), "--"]


def _commits(ws: Workspace, selected: list[tasks.Task], limit: int | None, since: str | None,
             notes: list[str]) -> list[Entry]:
    args = _log_args(ws, selected, since, notes)
    if not args:
        return []
    count = ["-n", str(limit)] if limit is not None else []
    out = git(ws.place, "log", "--format=%H%x00%h%x00%ct%x00%s", *count, *args, ok=(0, 128))
    task = selected[0].id if len(selected) == 1 else None
    entries = []
    for line in out.decode("utf-8", "replace").split("\n"):
        full, short, epoch, subject = (line.split("\0", 3) + ["", "", ""])[:4]
        if epoch.isdigit():
            entries.append(Entry(clock.iso_of(int(epoch)), "commit", short[:7], subject, None, task, order=0,
                                 commit=full))
    return entries


# ---------------------------------------------------------------- --graph


def graph(ws: Workspace, selected: list[tasks.Task], *, limit: int | None = DEFAULT_LIMIT,
          since: str | None = None) -> tuple[list[str], list[Entry], Timeline]:
    """(graph lines with the records hung under the commits they were written at, the records at no commit
    drawn, the timeline they came from). The lines are escaped already."""
    notes: list[str] = []
    # The shape of the branch, the task's first commit included: the newest N, since WHEN when given.
    args = _log_args(ws, selected, since, notes, from_start=False)
    raw = b""
    if args:
        count = ["-n", str(limit)] if limit is not None else []
        raw = git(ws.place, "log", "--graph", "--format=%x01%H%x00%h%x00%ct%x00%s", *count, *args, ok=(0, 128))
    lines = [line for line in raw.decode("utf-8", "replace").split("\n") if line]
    shown = build(ws, selected, limit=GRAPH_RECORDS_MAX, since=since, commits=False)
    shown.notes[:0] = notes
    recs = [e for e in shown.entries if e.kind in ("checkpoint", "handoff", "run") and e.head]
    by_head: dict[str, list[Entry]] = {}
    for entry in recs:
        by_head.setdefault(str(entry.head), []).append(entry)
    out: list[str] = []
    placed: set[int] = set()
    for line in lines:
        prefix, sep, rest = line.partition("\x01")
        if not sep:
            out.append(escape(prefix))
            continue
        _full, short, epoch, subject = (rest.split("\0", 3) + ["", "", ""])[:4]
        at = clock.iso_of(int(epoch)) if epoch.isdigit() else "?"
        out.append(escape(f"{prefix}{short[:7]} {at} {subject}"))
        under = escape(prefix.replace("*", "|"))
        for entry in by_head.get(short[:7], []):
            placed.add(id(entry))
            out.append(f"{under}    \u21b3 {escape(entry.at)}  {entry.kind}  {escape(entry.summary)}")
    loose = [e for e in recs if id(e) not in placed]
    return out, loose, shown


TOOL_DESCRIPTION = ("The timeline of a task (default: the active task; all=true: every task), newest first: its "
                    "events, records (checkpoints, handoffs, runs with their verdict), pins and its branch's "
                    "commits, as {\"entries\": [{at, kind, head, summary, path, task}], \"notes\": [...]}. "
                    "limit: at most 200; since: a time as git reads it (yesterday, 2026-11-30).")


def tool(ws: Workspace, task: str | None = None, limit: int = DEFAULT_LIMIT, since: str | None = None,
         every: bool = False) -> dict[str, Any]:
    """The MCP `log` tool: the same timeline as `majordomus log --json`, at most 200 entries."""
    limit = max(1, min(int(limit), 200))
    timeline = build(ws, select(ws, task, every), limit=limit, since=since_iso(ws, since) if since else None,
                     every=every)
    return {"entries": [e.to_dict() for e in timeline.entries], "notes": timeline.notes}
