"""`majordomus handoff` (design §7): the bundle from which another worker continues a task.

A handoff is written rarely and must carry every required section. It is stored by the one write
transaction (`store.commit`) with the same identity helper as a checkpoint, adds where the previous
handoff and the checkpoints since then are, and releases the task (`handed-off`) so that `task resume`
can take it anywhere.
"""

from __future__ import annotations

import os
import re

from majordomus import claims, errors, identity, taskend, tasks
from majordomus.errors import EnvironmentProblem, MajordomusError, NoActiveTask, Refused
from majordomus.lite import active as active_index
from majordomus.lite.stdin import read_bounded
from majordomus.store import commit, files, reading, recent, records
from majordomus.workspace import Workspace

STALE_TRIES = 5  # how often a handoff is made again when its task changed while it waited for the lock

TYPE_CHECKING = False  # on the session-start path: typing is not imported at run time
if TYPE_CHECKING:
    from typing import BinaryIO


_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _section_key(title: str) -> str:
    title = _CLOSING_HASHES.sub("", title.strip())
    return " ".join(title.split()).rstrip(":").strip().casefold()


def _outside_comments(line: str, inside: bool) -> tuple[str, bool]:
    """What of `line` a Markdown reader shows outside HTML comments, and whether a comment is still open
    after it (`inside`: one was open before it)."""
    shown = ""
    while True:
        if inside:
            end = line.find("-->")
            if end < 0:
                return shown, True
            line, inside = line[end + 3:], False
        start = line.find("<!--")
        if start < 0:
            return shown + line, False
        shown, line, inside = shown + line[:start], line[start + 4:], True


def sections(body: str) -> dict[str, bool]:
    """Each `## Heading` of the body (normalised) and whether any occurrence has non-blank content.
    Headings inside fenced code blocks are content, not headings; what sits inside an HTML comment
    (`<!-- … -->`) is neither: a reader of the rendered handoff never sees it."""
    found: dict[str, bool] = {}
    current: str | None = None
    fence: str | None = None
    comment = False
    for line in body.split("\n"):
        if fence is None:
            line, comment = _outside_comments(line, comment)
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
            if current is not None and line.strip():
                found[current] = True
            continue
        opening = _FENCE.match(line)
        if opening:
            fence = opening.group(1)[0] * 3
            if current is not None:
                found[current] = True
            continue
        heading = _HEADING.match(line)
        if heading and len(heading.group(1)) <= 2:
            current = _section_key(heading.group(2) or "") if len(heading.group(1)) == 2 else None
            if current is not None:
                found.setdefault(current, False)
            continue
        if current is not None and line.strip() and not heading:
            found[current] = True
    return found


def check_sections(body: str, required: list[str]) -> None:
    """Every required section present with content; all that are not are named in one refusal."""
    present = sections(body)
    missing = [name for name in required if _section_key(name) not in present]
    empty = [name for name in required if present.get(_section_key(name)) is False]
    if not missing and not empty:
        return
    problems = []
    if missing:
        problems.append("missing " + ", ".join(f"`## {name}`" for name in missing))
    if empty:
        problems.append("empty " + ", ".join(f"`## {name}`" for name in empty))
    raise Refused(
        f"the handoff is incomplete: {'; '.join(problems)}; nothing was written",
        "write each required section as a `## Heading` line with at least one non-blank line under it "
        f"(handoff.required_sections: {', '.join(required)})",
    )


def held_here(ws: Workspace) -> tasks.Task:
    """The task active here; or one that a handoff here stored but did not finish releasing (its retry
    completes it, design §10). Else exit 11."""
    task_id = tasks.read_index(ws).get(active_index.slot(ws.worktree, ws.branch))
    if task_id is None:
        raise NoActiveTask(ws.where())
    task = tasks.load(ws, task_id)
    if task.status not in ("active", "handed-off"):
        raise NoActiveTask(ws.where())
    return task


def write(ws: Workspace, stdin: BinaryIO, left_out: list[reading.Gone] | None = None) -> commit.Committed:
    """Refusals first (nothing written); then the record, the task's release and the ledger event. The
    task's checkpoints since the previous handoff that it cannot stand on (deleted, unreadable, replaced,
    never shared here) are not listed in it: they are added to `left_out`, for the caller to say so."""
    from majordomus import clock

    task = held_here(ws)
    limit = ws.config.get("handoff", "max_bytes")
    raw = read_bounded(stdin, limit)
    body = records.normalise(raw, what="handoff", max_lines=None, max_bytes=limit, more=stdin)
    check_sections(body.text, ws.config.get("handoff", "required_sections"))
    with files.held_back():  # a stop signal waits for both steps: the record, then the slot left
        for attempt in range(1, STALE_TRIES + 1):
            try:
                done = commit.commit(_record(ws, task, clock.now_iso(), body.text, left_out))
                break
            except commit.Stale:  # a checkpoint landed while this one waited for the lock: list it too
                if attempt == STALE_TRIES:
                    raise MajordomusError(
                        f"task `{task.id}` kept changing while the handoff was being written ({STALE_TRIES} "
                        "times); nothing was written", "run the same command again", code=errors.BUSY) from None
                task = held_here(ws)
                if left_out is not None:
                    left_out.clear()
        if done.created or done.completed:  # after its event: this machine's claim and the slot here (§10)
            try:
                taskend.release_after_handoff(ws, done.record)
            except taskend.Landed:
                raise  # it says that everything landed: no rerun to ask for
            except EnvironmentProblem as exc:
                raise commit.incomplete(ws, "handoff", done.path, exc,
                                        " and logged, but releasing the task here failed") from exc
    if done.completed and _body_of(done.path) != body.text:
        raise MajordomusError(
            f"an earlier handoff of task `{done.task}` had not fully landed; it is complete now "
            f"({ws.display(done.path)}), and the task is handed off: this handoff was not written",
            f"read it with `majordomus handoff --show {done.task}`; to write another, "
            f"`majordomus task resume {done.task}` first", code=NoActiveTask.code)
    return done


def _record(ws: Workspace, task: tasks.Task, at: str, body: str,
            left_out: list[reading.Gone] | None = None) -> commit.Write:
    """The handoff as the store takes it: where the previous handoff and the checkpoints since are, and the
    task handed off by the same write (its status, and this machine's claim ended in it). Only checkpoints
    that are intact are listed: a handoff never names what it could not read as written."""
    since = recent.checkpoints_since(ws, task, reading.previous_handoff(ws, task), left_out)
    fields, cache = identity.taken(ws, "handoff", task, at)
    fields += [("previous_handoff", task.handoff), ("checkpoints", [r.rel for r in since])]
    held = claims.mine(ws).get(task.id)
    return commit.Write(ws, task, at, body, fields, kind="handoff", what="handoff", subdir="handoffs",
                        event="task.handoff", pointer="handoff", statuses=("active", "handed-off"),
                        status="handed-off", ends_claim=None if held is None else held["id"],
                        event_keys=("previous_handoff", "checkpoints"),
                        caches=(cache, ws.config.cache_entry(ws.paths.config_cache)), of_the_task=True)


def left_out_note(ws: Workspace, left_out: list[reading.Gone]) -> str | None:
    """What a handoff says on stderr of the checkpoints it left out of its `checkpoints:`, and why."""
    if not left_out:
        return None
    named = ", ".join(f"{g.rel} ({g.why})" for g in left_out)
    return (f"note: the handoff's `checkpoints:` leaves out {named}: since the previous handoff, but not "
            "readable here as written, so not listed (their work is only in what this handoff says; "
            "`majordomus doctor` says more)")


def _body_of(path: str) -> str | None:
    from majordomus.lite import safeio

    try:
        body = records.split(safeio.read(path, records.MAX_RECORD_BYTES))[1]
    except (OSError, ValueError, UnicodeDecodeError, EnvironmentProblem):
        return None
    return body[:-1] if body.endswith("\n") else body


def latest(ws: Workspace, task_id: str | None) -> str | None:
    """Path of the newest handoff of the named task, or of the active task here; None when it has none."""
    if task_id is None:
        try:
            task = tasks.active(ws)
        except NoActiveTask as exc:
            exc.hint = "after a handoff the task is no longer active here: name it, `majordomus handoff --show TASK`"
            raise
    else:
        task = tasks.load(ws, tasks.validate_id(task_id))
    if not task.handoff:
        return None
    path = ws.paths.absolute(task.handoff)
    if not os.path.lexists(path):
        raise EnvironmentProblem(
            f"the handoff record {ws.display(path)} of task `{task.id}` is missing",
            "run `majordomus doctor`; records are never deleted by majordomus",
        )
    return path
