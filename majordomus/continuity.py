"""Continuity (design §8): the objective and four kinds of pin a task must not forget, with an integrity hash.

Exactly two writers touch `context/ID/continuity.json`: `task start` (through `seed`) and
`context pin|unpin`. Everything else only reads it, and a document whose hash does not match was changed
by someone else: that is a finding, and no writer re-hashes it (which would launder the edit).
"""

from __future__ import annotations

import json
import os

from majordomus import budget, clock, secretscan, tasks
from majordomus.continuity_doc import (
    CUT_ORDER,
    FILE,
    KINDS,
    LABELS,
    PIN_KEYS,
    RENDERED,
    SECTIONS,
    SOURCES,
    VERSION,
    field_findings,
    schema_findings,
)
from majordomus.errors import EnvironmentProblem, NotFound, Refused, UsageError, rerun
from majordomus.lite import jsonbound, names, safeio, statepaths, textrules
from majordomus.store import files, ledger
from majordomus.workspace import Workspace

TYPE_CHECKING = False  # on the session-start path: typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any



class Broken(EnvironmentProblem):
    """A continuity file that cannot be trusted: unreadable, malformed, or changed outside its writers."""

    def __init__(self, task_id: str, findings: list[str]) -> None:
        super().__init__(
            f"the continuity of task `{task_id}` cannot be trusted: {findings[0]}",
            f"see `majordomus context validate {task_id}`; if the change was yours, remove "
            f"context/{task_id}/{FILE} and pin again (records and the ledger keep the history)",
        )
        self.findings = findings


def canonical(doc: dict[str, Any]) -> bytes:
    """Keys sorted recursively, no insignificant whitespace, UTF-8: the same data gives the same bytes."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def digest(doc: dict[str, Any]) -> str:
    from majordomus.lite.sha import hexdigest

    return hexdigest(canonical({k: v for k, v in doc.items() if k != "integrity"}))


def config_hash(ws: Workspace) -> str:
    """Which limits governed the document: the canonical hash of the `continuity` configuration."""
    from majordomus.lite.sha import hexdigest

    return hexdigest(canonical({"continuity": ws.config.values["continuity"]}))


def clean_text(text: str) -> str:
    """One sentence: control characters (newlines included) collapse to a space, runs of space to one."""
    return textrules.collapse(text)


def pin_text(ws: Workspace, text: str) -> str:
    """The text of a new pin, or a refusal (exit 10) saying which rule it breaks."""
    cleaned = clean_text(text)
    if not cleaned:
        raise Refused("the pin is empty; nothing was written", 'give one sentence: `majordomus context pin decision -- "…"`')
    try:
        size = len(cleaned.encode("utf-8"))
    except UnicodeEncodeError:
        raise Refused("the pin is not valid UTF-8; nothing was written", "convert the text to UTF-8") from None
    limit = ws.config.get("continuity", "pin_max_bytes")
    if size > limit:
        raise Refused(
            f"the pin is {size} bytes; the limit is {limit} (continuity.pin_max_bytes); nothing was written",
            "a pin is one sentence, not a summary: shorten it, or write a handoff (`majordomus handoff`)",
        )
    what = secretscan.looks_secret(cleaned)
    if what is not None:
        raise Refused(
            f"the pin looks like it carries a secret ({what}); nothing was written",
            "never pin secrets or file contents: pins are re-injected into model context; say where it lives instead",
        )
    return cleaned


def new_doc(ws: Workspace, task: tasks.Task, at: str) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "version": VERSION, "task": task.id, "configHash": config_hash(ws), "runtime": None,
        "createdAt": at, "updatedAt": at, "objective": clean_text(task.objective),
    }
    doc.update({key: [] for key in PIN_KEYS})
    return doc


def path_of(ws: Workspace, task_id: str) -> str:
    return os.path.join(ws.paths.context_dir(task_id), FILE)


def examine(ws: Workspace, task_id: str) -> tuple[dict[str, Any] | None, list[str]]:
    """(document, findings): (None, []) when there is no file — pins are working memory, not authority."""
    path = path_of(ws, task_id)
    limit = int(ws.config.get("continuity", "max_bytes"))
    if not statepaths.readable_dir(ws.paths, ws.paths.context_dir(task_id)):  # a link on the way: refused
        return None, []
    try:
        # Over `continuity.max_bytes` its only writers never wrote it: untrusted whatever its hash says.
        raw = safeio.read(path, limit)
    except FileNotFoundError:
        return None, []
    except safeio.UnsafeFile as exc:
        return None, [f"{ws.display(path)} {exc.what}; it is not read"]
    except OSError as exc:
        return None, [f"{ws.display(path)} is unreadable: {exc.strerror}"]
    try:
        doc = jsonbound.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return None, [f"{ws.display(path)} is not valid JSON: {exc}"]
    found = [f"{ws.display(path)}: {f}" for f in schema_findings(doc, task_id)]
    if not found:
        found = [f"{ws.display(path)}: {f}" for f in field_findings(doc, int(ws.config.get("continuity", "pin_max_bytes")))]
    if not found:
        recorded, computed = doc["integrity"]["sha256"], digest(doc)
        if recorded != computed:
            found.append(
                f"{ws.display(path)}: integrity mismatch (recorded sha256 {recorded[:16]}…, computed {computed[:16]}…): "
                "the file was changed outside `task start` and `context pin|unpin`"
            )
    return (doc if not found else None), found


def task_ids(ws: Workspace) -> list[str]:
    """The tasks with a directory in `context/`, sorted; a link where `context/` or a `context/ID/` belongs
    is refused (exit 12, naming it), before anything below it is read."""
    if not statepaths.readable_dir(ws.paths, ws.paths.contexts):
        return []
    found = sorted(n for n in os.listdir(ws.paths.contexts) if names.is_task_id(n))
    return [task_id for task_id in found if statepaths.is_real_dir(ws.paths.context_dir(task_id))]


def validate(ws: Workspace, task_id: str) -> list[str]:
    """Every integrity finding of the task's continuity; empty when intact or absent."""
    return examine(ws, task_id)[1]


def load(ws: Workspace, task_id: str) -> dict[str, Any] | None:
    """The trusted document, None when absent; raises Broken when it cannot be trusted."""
    doc, found = examine(ws, task_id)
    if found:
        raise Broken(task_id, found)
    return doc


def effective(ws: Workspace, task_id: str) -> dict[str, Any]:
    """The document, or — when `context/ID/` is gone — one rebuilt from the task record (objective only)."""
    doc = load(ws, task_id)
    if doc is not None:
        return doc
    task = tasks.load(ws, task_id)
    return new_doc(ws, task, task.started_at)


def _write(ws: Workspace, task_id: str, doc: dict[str, Any]) -> str:
    """Hash, size-check and store the document and its render; refusals come before any byte is written."""
    doc = {k: v for k, v in doc.items() if k != "integrity"}
    doc["integrity"] = {"sha256": digest(doc)}
    data = json.dumps(doc, indent=2, ensure_ascii=False).encode("utf-8") + b"\n"
    limit = ws.config.get("continuity", "max_bytes")
    if len(data) > limit:
        pinned = any(doc.get(key) for key in KINDS.values())
        raise Refused(
            f"the continuity of task `{task_id}` would be {len(data)} bytes; the limit is {limit} "
            "(continuity.max_bytes); nothing was written",
            "unpin what no longer holds (`majordomus context unpin PIN_ID`), or write a handoff" if pinned
            else "give a shorter objective: it is kept in the continuity, within continuity.max_bytes",
        )
    rendered = render_doc(doc, task_id, ws.config.get("continuity", "render_max_bytes")).text
    ws.ensure_state("context", ws.paths.relative(ws.paths.context_dir(task_id)))
    files.replace(path_of(ws, task_id), data)
    try:
        files.replace(os.path.join(ws.paths.context_dir(task_id), RENDERED), rendered.encode("utf-8"))
    except EnvironmentProblem as exc:  # the document landed: say so (design §10), as a handoff does
        exc.message += (f"; the continuity of task `{task_id}` is stored ({ws.display(path_of(ws, task_id))}), "
                        "but its render and its ledger event are not")
        exc.hint = rerun(exc.hint)
        raise
    return str(doc["integrity"]["sha256"])


def seed(ws: Workspace, task: tasks.Task, from_task: str | None) -> None:
    """Writer one: `task start` seeds the objective and, with `--from`, the pins of another task.
    Called with the state lock held, before anything else of the start is written."""
    doc = new_doc(ws, task, task.started_at)
    if from_task is not None:
        source, found = examine(ws, from_task)
        if found:
            raise Refused(
                f"the continuity of task `{from_task}` cannot be trusted ({found[0]}); its pins were not copied; "
                "nothing was written",
                f"see `majordomus context validate {from_task}`, or start without --from",
            )
        if source is not None:
            for key in PIN_KEYS:
                doc[key] = [dict(p) for p in source[key]]
    _write(ws, task.id, doc)


def _modify(ws: Workspace, change: Any) -> tuple[tasks.Task, Any, str, str, bool]:
    """Writer two, under the state lock: load (or rebuild) the active task's document, change, store.

    `change(task, doc)` returns (result, completed): completed when the change had already landed in the
    document and only its ledger event is missing (design §10: the retry completes what is missing). The
    document is then stored again unchanged (its render may be the step that failed)."""
    tasks.active(ws)  # refuse before anything is created
    at = clock.now_iso()
    ws.ensure_state("context")
    with files.locked(ws.paths.lock):
        task = tasks.active(ws)  # lock, then check again: a handoff or takeover may have come first
        doc = load(ws, task.id)
        if doc is None:  # context/ID/ was removed: the task record still knows the objective
            doc = new_doc(ws, task, at)
        result, completed = change(task, doc)
        if not completed:
            doc["updatedAt"] = at
            doc["configHash"] = config_hash(ws)
        integrity = _write(ws, task.id, doc)
    return task, result, at, integrity, completed


def _unlogged(ws: Workspace, task_id: str, candidates: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The newest of `candidates` (pins in the document) whose `context.pin` event is missing, when the
    ledger shows that for certain."""
    if not candidates:
        return None
    events, covered = ledger.pin_events(ws.paths.ledger, min(p["createdAt"] for p in candidates))
    if not covered:
        return None
    for p in reversed(candidates):
        if not any(e["event"] == "context.pin" for e in events.get(p["id"], [])):
            return dict(p)
    return None


def unlogged_pins(ws: Workspace, task_ids: list[str]) -> list[tuple[str, str, dict[str, Any]]]:
    """(task, kind, pin) for every pin of these tasks' trusted documents that has no `context.pin` event:
    a pin whose event failed to land (doctor reports it; the same pin again writes the event). One
    backward pass over the ledger for all of them; a ledger that does not cover their time reports none."""
    held = []
    for task_id in task_ids:
        doc, found = examine(ws, task_id)
        if doc is not None and not found:
            held += [(task_id, kind, p) for kind, key in KINDS.items() for p in doc[key]]
    if not held:
        return []
    events, covered = ledger.pin_events(ws.paths.ledger, min(p["createdAt"] for _t, _k, p in held))
    if not covered:
        return []
    return [(t, k, p) for t, k, p in held if not any(e["event"] == "context.pin" for e in events.get(p["id"], []))]


def pin(ws: Workspace, kind: str, text: str, source: str) -> dict[str, Any]:
    """Add one pin to the active task's continuity; returns the pin."""
    return pin_landed(ws, kind, text, source)[0]


def pin_landed(ws: Workspace, kind: str, text: str, source: str) -> tuple[dict[str, Any], bool]:
    """(the pin, completed): completed when the same pin (kind, text, source) was already in the document
    without its `context.pin` event — a pin whose event failed to land — and only the event was written now."""
    if kind not in KINDS:
        raise UsageError(f"`{textrules.escape(kind)}` is not a pin kind", f"use one of: {', '.join(KINDS)}")
    if source not in SOURCES:
        raise UsageError(f"`{textrules.escape(source)}` is not a pin source", f"use one of: {', '.join(SOURCES)}")
    cleaned = pin_text(ws, text)
    import uuid

    new = {"id": str(uuid.uuid4()), "text": cleaned, "source": source, "createdAt": clock.now_iso()}

    def change(task: tasks.Task, doc: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        same = [p for p in doc[KINDS[kind]] if p["text"] == cleaned and p["source"] == source]
        missing = _unlogged(ws, task.id, same)
        if missing is not None:
            return missing, True
        doc[KINDS[kind]].append(new)
        return new, False

    with files.held_back():  # a stop signal waits for the document and its event alike
        task, pinned, at, integrity, completed = _modify(ws, change)
        # The ledger never holds the text: an unpinned sentence must not live on in an append-only log.
        ws.event("context.pin", task.id, at, pin=pinned["id"], kind=kind, source=source,
                 bytes=len(cleaned.encode("utf-8")), integrity=integrity)
    return pinned, completed


def unpin(ws: Workspace, pin_id: str) -> tuple[str, dict[str, Any]]:
    """Remove a pin (full id, or a unique prefix of at least 4 characters); returns (kind, pin)."""
    kind, removed, _completed = unpin_landed(ws, pin_id)
    return kind, removed


def _gone_unlogged(ws: Workspace, task_id: str, pin_id: str) -> list[tuple[str, dict[str, Any]]]:
    """Pins of this task named by `pin_id` that the ledger shows pinned and never unpinned, though the
    document no longer holds them: an unpin whose continuity landed and whose event did not."""
    events, _covered = ledger.pin_events(ws.paths.ledger, "")
    hits = []
    for full, named in events.items():
        if not full.startswith(pin_id) or any(e["event"] == "context.unpin" for e in named):
            continue
        pinned = [e for e in named if e["event"] == "context.pin" and e.get("task") == task_id
                  and isinstance(e.get("kind"), str) and e["kind"] in KINDS]
        if pinned:
            hits.append((str(pinned[0]["kind"]), {"id": full}))
    exact = [h for h in hits if h[1]["id"] == pin_id]
    return exact or hits


def unpin_landed(ws: Workspace, pin_id: str) -> tuple[str, dict[str, Any], bool]:
    """(kind, pin, completed): completed when the pin was already gone from the document without its
    `context.unpin` event, and only the event was written now (then the pin holds only its id)."""
    if len(pin_id) < 4:
        raise UsageError(f"`{textrules.escape(pin_id)}` is too short to name a pin", "give at least 4 characters of the pin id")

    def change(task: tasks.Task, doc: dict[str, Any]) -> tuple[tuple[str, dict[str, Any]], bool]:
        hits = [(kind, p) for kind, key in KINDS.items() for p in doc[key] if p["id"].startswith(pin_id)]
        exact = [h for h in hits if h[1]["id"] == pin_id]
        hits = exact or hits
        completed = False
        if not hits:
            hits, completed = _gone_unlogged(ws, task.id, pin_id), True
        if not hits:
            raise NotFound(f"no pin `{textrules.escape(pin_id)}` in task `{doc['task']}`; nothing was written",
                           "see the pins and their ids with `majordomus context status`")
        if len(hits) > 1:
            raise UsageError(f"`{textrules.escape(pin_id)}` names {len(hits)} pins; nothing was written", "give more of the id")
        kind, found = hits[0]
        if not completed:
            doc[KINDS[kind]].remove(found)
        return (kind, found), completed

    with files.held_back():  # a stop signal waits for the document and its event alike
        task, (kind, removed), at, integrity, completed = _modify(ws, change)
        ws.event("context.unpin", task.id, at, pin=removed["id"], kind=kind, integrity=integrity)
    return kind, removed, completed


def entry_line(key: str, text: str) -> str | None:
    """How one pin, or the objective, is rendered (None: not at all). Every stored text is framed, a pin as
    a bullet and the objective as a quote, so that none starts a line of the agent's context (design §2a);
    the objective is collapsed as at ingest (one stored before that rule may hold line breaks), and the
    interactive sentinel renders nothing."""
    if not text:
        return None
    if key == "objective":
        if text == clean_text(tasks.INTERACTIVE_OBJECTIVE):
            return None
        return f"> {textrules.escape(textrules.collapse(text))}\n"
    return f"- {textrules.escape(text)}\n"


def blocks(doc: dict[str, Any], level: int) -> tuple[list[budget.Block], list[tuple[int, int]]]:
    """The render's sections as blocks (headings at `level`) and the cut order over their entries."""
    mark = "#" * level
    out: list[budget.Block] = []
    index: dict[str, int] = {}
    for key, title in SECTIONS:
        block = budget.Block(heading=f"\n{mark} {title}\n")
        if key == "objective":
            line = entry_line(key, doc.get("objective") or "")
            if line is not None:
                block.entries.append(budget.Entry(line, "the objective", whole=True))
        else:
            block.entries.extend(budget.Entry(line, LABELS[key]) for p in doc.get(key, [])
                                 if (line := entry_line(key, p["text"])) is not None)
        index[key] = len(out)
        out.append(block)
    # Within a section the oldest entry goes first: pins are kept in the order they were made.
    order = [(index[key], j) for key in CUT_ORDER for j in range(len(out[index[key]].entries))]
    return out, order


def render_doc(doc: dict[str, Any], task_id: str, budget_bytes: int) -> budget.Fitted:
    parts: list[budget.Part] = [f"# Continuity: {task_id}\n"]
    section_blocks, order = blocks(doc, 2)
    parts.extend(section_blocks)
    shifted = [(i + 1, j) for i, j in order]
    return budget.fit(parts, shifted, budget_bytes, budget.render_closing(budget.Room(budget_bytes)))
