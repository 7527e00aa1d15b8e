"""`majordomus brief` (design §9): what a worker resumes from — records first, recollection never.

The briefing is the continuity render, the latest handoff's body, the checkpoints since that handoff
(newest first), the last recorded facts, and — when the work tree moved since the latest record — a
"Since the last record" section, so that nobody trusts a stale note. Over budget it drops the oldest
checkpoints first, then continuity in the order of design §8, then the handoff, and says so in its last line.
Pins are working memory: with `context/ID/` gone the briefing still stands on records and the ledger.
"""

from __future__ import annotations

from majordomus import budget, claims, continuity, continuity_doc, drift, tasks
from majordomus.drift import esc
from majordomus.git import status
from majordomus.store import ledger, listing, reading, recent
from majordomus.workspace import Workspace

TYPE_CHECKING = False  # on the session-start path: typing is not imported at run time
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any





class Briefing:
    """The briefing text, what was dropped, the drift, the records it could not read, and its parts by key
    (`pin:…`, `record:…`, `claims`, `runs`, `drift`) with the text each shows: what a session-start update
    compares with what it gave a conversation before (design §12)."""

    __slots__ = ("drift", "dropped", "missing", "parts", "task", "text", "unshared")

    def __init__(self, task: str, text: str, dropped: list[str], drift: list[str],
                 missing: list[reading.Gone] | None = None, parts: dict[str, tuple[str, str]] | None = None,
                 unshared: list[reading.Gone] | None = None) -> None:
        self.task, self.text, self.dropped, self.drift = task, text, dropped, drift
        self.missing = missing or []
        self.unshared = unshared or []  # named by another machine's records, never shared here
        self.parts = parts or {}


def quoted(body: str) -> str:
    """A record's body as the briefing shows it: every line quoted (`> `), as pins are bulleted and the
    objective quoted, so that no line a writer stored can start a line of the agent's context — not a
    heading, not a `MISSING RECORDS` line, not the closing line (design §2a)."""
    return "\n".join(f"> {line}" if line else ">" for line in body.split("\n"))


def build(ws: Workspace, task_id: str | None = None, budget_bytes: int | budget.Room | None = None) -> str:
    """The briefing text within `budget_bytes` (default `continuity.render_max_bytes`)."""
    return compose(ws, task_id, budget_bytes).text


LEDGER_LOOKBACK = reading.LEDGER_LOOKBACK  # ledger lines read backwards for the records it names
MISSING_LOOKBACK = 64  # the task's own events asked for a record kind its task record names none of
SESSION_EVENTS = reading.SESSION_EVENTS  # bookkeeping, never a "last event" of the work


def ledger_tail(ws: Workspace, needle: bytes | None = None) -> Iterator[dict[str, Any]]:
    """The ledger's events, newest first, from the last `LEDGER_LOOKBACK` lines only (`ledger.tail`)."""
    return ledger.tail(ws.paths.ledger, LEDGER_LOOKBACK, needle)


class Sources:
    """What a briefing stands on (design §9): the latest handoff, the checkpoints since (oldest first),
    how many older ones were only counted, the records named that it cannot stand on, the task's
    newest event of the ledger's tail that is not a session's (None: the walk did not meet one), and the
    latest run of each label that is intact (`runs.examined`)."""

    __slots__ = ("gone", "handoff", "latest", "runs", "since", "unread")

    def __init__(self, handoff: reading.Record | None, since: list[reading.Record], unread: int,
                 gone: list[reading.Gone], latest: dict[str, Any] | None = None,
                 runs: list[dict[str, Any]] | None = None) -> None:
        self.handoff, self.since, self.unread, self.gone = handoff, since, unread, gone
        self.latest = latest
        self.runs = runs or []


def sources(ws: Workspace, task: tasks.Task, enough: int, *, list_store: bool = True,
            units: int | None = None, measure: Callable[[reading.Record], tuple[int, int]] | None = None,
            ) -> Sources:
    """The latest handoff and the checkpoints that arrived here since it, every one read checked against the
    digest in its name, and every record that the task, its index or the ledger names since that handoff
    and that is deleted, unreadable or replaced — or, named by a record from another machine, never shared
    here (design §9). "Since" is the order the records arrived here: the task's index, else the ledger's
    events of the task back to the handoff's arrival; only what lies past the ledger's bounded tail comes
    from a listing of the store, and with `list_store` False (`check`: only `gone` is asked for, and the
    records are checked against their names without being parsed) not even that. Checkpoints are read
    newest first until they pass `enough` bytes or `units` characters (each as `measure` says, its body
    alone without it): older ones could not be shown."""
    gone: list[reading.Gone] = []
    latest: reading.Record | None = None
    indexed = listing.arrivals(ws, task)
    found_handoff: reading.Record | reading.Gone | None = reading.examine(ws, task.handoff) if task.handoff else None
    if isinstance(found_handoff, reading.Record):
        latest = found_handoff
    # Without a whole index the ledger is walked back to the arrival "since the handoff" counts from: what
    # arrived since is what is since, whatever the clocks wrote (design §9). With one, only for the last event.
    trail = reading.walk(ws, task, None if indexed is None else MISSING_LOOKBACK, reading.anchor_of(latest))
    found_names = reading.candidates(ws, task, latest, indexed, trail if indexed is None else None,
                                     list_store=list_store)
    if isinstance(found_handoff, reading.Gone):
        gone.append(reading.unshared(found_handoff, found_names))
    since, unread, lost = recent.recent_checkpoints(ws, task, found_names, enough, parse=list_store, units=units,
                                                     measure=measure)
    gone += [reading.unshared(g, found_names) for g in lost]
    covered = {r.rel for r in since} | {g.rel for g in gone} | found_names.listed
    covered.update("checkpoints/" + n for n in found_names.names)
    for named in (task.checkpoint, None if task.handoff else trail.handoff):
        if named and named not in covered:  # the pointers, and the ledger's latest handoff the task names none of
            pointed = reading.examine(ws, named)
            if isinstance(pointed, reading.Gone):
                gone.append(reading.unshared(pointed, found_names))
    ran: list[dict[str, Any]] = []
    if task.runs:  # the run records the task names, as evidence: each checked as a checkpoint is (design §17)
        from majordomus import runs

        ran, lost_runs = runs.examined(ws, task)
        gone += lost_runs
    return Sources(latest, since, unread, gone, trail.latest, ran)


def split_gone(gone: list[reading.Gone]) -> tuple[list[reading.Gone], list[reading.Gone]]:
    """The records missing here (deleted, unreadable, replaced), and those never shared here."""
    return [g for g in gone if g.why != reading.NOT_SHARED], [g for g in gone if g.why == reading.NOT_SHARED]


def missing_records(ws: Workspace, task: tasks.Task) -> list[reading.Gone]:
    """The records the task, its index or the ledger names that a briefing cannot stand on, as `check`
    and `doctor` ask: the same as `sources` finds, with no listing of the store. A record another machine
    never shared is not among them: here it is simply absent (`not_shared_records`)."""
    return split_gone(_gone(ws, task))[0]


def not_shared_records(ws: Workspace, task: tasks.Task) -> list[reading.Gone]:
    """The records the task names that another machine never shared here."""
    return split_gone(_gone(ws, task))[1]


def _gone(ws: Workspace, task: tasks.Task) -> list[reading.Gone]:
    enough = int(ws.config.get("continuity", "render_max_bytes"))
    return sources(ws, task, enough, list_store=False).gone


def missing_lines(missing: list[reading.Gone], task_id: str) -> str:
    """What heads a briefing with records missing: which, and why it matters."""
    if not missing:
        return ""
    named = ", ".join(f"{esc(g.rel)} ({g.why})" for g in missing)
    replaced = any(g.why == "replaced" for g in missing)
    ran = "; a run record is not evidence: run the command again (`majordomus run --label L -- CMD`)" \
        if any(g.rel.startswith("runs/") for g in missing) else ""
    return (f"\nMISSING RECORDS: {named} — named by the task or the ledger, but deleted, unreadable or "
            f"replaced{' (its content no longer matches the digest in its name, so it is not shown)' if replaced else ''}. "
            f"This briefing is not complete: work recorded there is not shown. Run `majordomus doctor`, and "
            f"write a new checkpoint of what holds now (`majordomus checkpoint`) before trusting a resume "
            f"of `{task_id}`{ran}.\n")


def not_shared_lines(unshared: list[reading.Gone], task_id: str) -> str:
    """What heads a briefing whose task names records that another machine never shared here."""
    if not unshared:
        return ""
    named = ", ".join(esc(g.rel) for g in unshared)
    them = "them" if len(unshared) > 1 else "it"
    # Not which of the two: a push without `--checkpoints` and a pull that refused the record look alike here.
    return (f"\nNOT SHARED HERE: {named} — named by `{task_id}`'s records from another machine, but not here: "
            f"that machine has not pushed {them} (`majordomus sync push` without `--checkpoints`), or a pull here "
            f"refused {them} (`majordomus ledger` shows a `sync.refused` event, and why). Nothing here was lost, "
            f"but work recorded there is not shown: run `majordomus sync push --checkpoints` on that machine and "
            f"`majordomus sync pull` here for the whole briefing.\n")


def _where(meta: dict[str, Any]) -> str:
    branch = meta.get("branch") or "(detached)"
    head = (meta.get("head") or "0000000")[:7]
    return f"{esc(branch)}@{esc(head)}"


def _state(meta: dict[str, Any]) -> str:
    changed = len(meta.get("changed_files") or []) + int(meta.get("changed_files_omitted") or 0)
    if meta.get("worktree_state") == "dirty":
        return f"dirty ({changed} changed file{'s' if changed != 1 else ''})"
    return esc(meta.get("worktree_state") or "unknown")


def _facts(ws: Workspace, task: tasks.Task, last: reading.Record | None,
           event: dict[str, Any] | None = None) -> list[str]:
    """The last record and the task's last event (`event` when the ledger's tail already gave it)."""
    out = []
    if last is not None:
        m = last.meta
        out.append(f"- last record: {esc(m.get('kind'))} at {esc(m.get('timestamp'))} in {esc(m.get('worktree'))} "
                   f"on {_where(m)}, {_state(m)}; {esc(last.rel)}")
    else:
        out.append("- last record: none yet (no checkpoint or handoff)")
    if event is None:
        event = ledger.last_event(ws.paths.ledger, task.id, exclude=SESSION_EVENTS)
    if event is not None:
        by = f" by {esc(event['by'])}" if event.get("by") else ""
        where = f" in {esc(event.get('worktree'))} on {esc(event.get('branch') or '(detached)')}"
        out.append(f"- last event: {esc(event['event'])} at {esc(event.get('at'))}{by}{where}")
    return out


def _title(ws: Workspace, task: tasks.Task) -> str:
    title = f" ({esc(task.title)})" if task.title and task.title != task.id else ""
    line = f"Briefing for task `{task.id}`{title}: {esc(task.status)}, profile {esc(task.profile)}, owner {esc(task.owner)}.\n"
    where, branch = esc(task.worktree), esc(task.branch or "(detached)")
    held = tasks.where_active(ws, task)
    if held == "orphaned":
        line += (f"It was active in {where}, which no longer exists (the worktree is gone): continue it "
                 f"here with `majordomus task resume {task.id}`.\n")
    elif held == "remote":
        line += f"It is active on another machine, in {where} on {branch}.\n"
    elif held == "elsewhere":
        line += f"It is active in {where} on {branch}.\n"
    elif task.status in ("paused", "handed-off"):
        line += f"Continue it here with `majordomus task resume {task.id}`.\n"
    return line


def _continuity(ws: Workspace, task: tasks.Task) -> tuple[dict[str, Any], str | None]:
    doc, found = continuity.examine(ws, task.id)
    if doc is not None:
        return doc, None
    rebuilt = continuity.new_doc(ws, task, task.started_at)
    if found:
        return rebuilt, (f"Continuity not shown: {found[0]}. Run `majordomus context validate {task.id}`; "
                         "the objective below comes from the task record.")
    return rebuilt, "No continuity file (no pins): the objective below comes from the task record."


def compose(ws: Workspace, task_id: str | None = None, budget_bytes: int | budget.Room | None = None,
            task: tasks.Task | None = None) -> Briefing:
    """The briefing of `task_id` (the active task without one; `task`: that task, already loaded)."""
    if task is None:
        task = tasks.named_or_active(ws, task_id)
    if budget_bytes is None:
        room = budget.Room(ws.config.get("continuity", "render_max_bytes"))
    else:
        room = budget_bytes if isinstance(budget_bytes, budget.Room) else budget.Room(budget_bytes)
    doc, note = _continuity(ws, task)
    shown: dict[str, str] = {}  # each checkpoint's entry, rendered once: measured while reading, then shown

    def entry(r: reading.Record) -> str:
        text = shown.get(r.rel)
        if text is None:
            text = shown[r.rel] = (f"\n## {esc(r.meta.get('timestamp'))} · {_where(r.meta)} · {_state(r.meta)}\n"
                                   f"{quoted(r.body)}\n")
        return text

    found = sources(ws, task, room.max_bytes, units=room.max_units, measure=lambda r: room.measure(entry(r)))
    latest_handoff, since, unread = found.handoff, found.since, found.unread
    missing, unshared = split_gone(found.gone)
    last = since[-1] if since else latest_handoff
    keyed: dict[str, tuple[str, str]] = {}  # key -> (the heading an update shows it under, its text)

    parts: list[budget.Part] = [_title(ws, task)]
    if missing:
        parts.append(missing_lines(missing, task.id))
    if unshared:
        parts.append(not_shared_lines(unshared, task.id))
    double = claims.brief_section(task.id, task.claims)  # a double claim comes first
    if double:
        parts.append(double)
        keyed["claims"] = ("", double)
    if note:
        parts.append(f"\n{note}\n")
    blocks, cont_order = continuity.blocks(doc, 1)
    first = len(parts)
    parts.extend(blocks)
    order = [(first + i, j) for i, j in cont_order]
    for key, title in continuity_doc.SECTIONS:
        pins = doc.get(key) if key != "objective" else [{"id": "objective", "text": doc.get("objective") or ""}]
        for pin in pins or []:
            line = continuity.entry_line(key, pin.get("text") or "")
            if line is not None:  # as the render shows it: the update repeats exactly that
                keyed[f"pin:{pin.get('id')}"] = (f"\n# {title}\n", line)

    if latest_handoff is not None:
        m = latest_handoff.meta
        text = (f"\n# Latest handoff: {esc(m.get('timestamp'))} · {_where(m)} · {esc(m.get('owner'))}\n"
                f"{quoted(latest_handoff.body)}\n")
        cut = f"> … (cut here to fit: `majordomus handoff --show {task.id}` prints the whole handoff)\n"
        parts.append(budget.Block("", [budget.Entry(text, "the latest handoff", whole=True, cut_note=cut)]))
        handoff_unit = [(len(parts) - 1, 0)]
        keyed[f"record:{latest_handoff.rel}"] = ("", text)
    else:
        handoff_unit = []

    checkpoint_label = ("oldest checkpoint", "oldest checkpoints")
    if since:
        heading = "Checkpoints since the latest handoff" if latest_handoff else "Checkpoints"
        entries = []
        for r in reversed(since):
            text = entry(r)
            entries.append(budget.Entry(text, *checkpoint_label))
            keyed[f"record:{r.rel}"] = ("\n# New checkpoints, newest first\n", text)
        parts.append(budget.Block(f"\n# {heading}, newest first\n", entries))
        # Entries are shown newest first, dropped oldest first, before anything else goes.
        order = [(len(parts) - 1, j) for j in reversed(range(len(entries)))] + order
    order += handoff_unit

    parts.append("\n# Last recorded facts\n" + "\n".join(_facts(ws, task, last, found.latest)) + "\n")
    here = status.status(ws.place) if last is not None else None  # the one `git status`, for drift and runs
    moved = drift.drift(ws, last.meta, here) if last is not None else []
    if moved:
        section = "\n# Since the last record\n" + "\n".join(moved) + "\n"
        parts.append(section)
        keyed["drift"] = ("", section)
    elif last is not None:
        parts.append("- work tree here: unchanged since the last record\n")
        keyed["drift"] = ("", "\n- work tree here: unchanged since the last record\n")
    ran: list[str] = []
    if found.runs:  # the latest run per label that is intact, and what moved since
        from majordomus import runs

        ran = runs.brief_lines(ws, task, here, found.runs)
    if ran:
        section = "\n# Latest runs\n" + "\n".join(ran) + "\n"
        parts.append(section)
        keyed["runs"] = ("", section)

    def closing(labels: list[str]) -> str:
        if unshared and not missing and not labels:
            return (f"\n(incomplete: a record was not shared here (named at the top); nothing else was dropped "
                    f"to fit {room.describe()})\n")
        return budget.closing_line(room, labels, complete=not (missing or unshared))

    # Checkpoints too old to matter were only counted (see recent.recent_checkpoints): dropped first.
    fitted = budget.fit(parts, order, room, closing, already=(budget.Entry("", *checkpoint_label), unread))
    return Briefing(task=task.id, text=fitted.text, dropped=fitted.dropped, drift=moved, missing=missing,
                    parts=keyed, unshared=unshared)
