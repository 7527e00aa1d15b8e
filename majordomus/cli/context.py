"""`majordomus context pin|unpin|show|status|validate` (design §8)."""

from __future__ import annotations

import sys
from typing import Any

from majordomus.cli import params
from majordomus.cli.params import json_option, run, workspace

KIND_CHOICE = params.Choice(["decision", "constraint", "open-item", "next-action"])


@params.group("context")
def context() -> None:
    """The objective and the pins a task must not forget: decisions, constraints, open items, next actions."""


def _task_id(ws: Any, task_id: str | None) -> str:
    """The named task (which must exist), else the active task here; never a guess at "the latest"."""
    from majordomus import tasks

    if task_id is None:
        return str(tasks.active(ws).id)
    tasks.validate_id(task_id)
    if not tasks.exists(ws, task_id):
        from majordomus.errors import NotFound

        raise NotFound(f"no task `{task_id}`", "list tasks with `majordomus task list`")
    return task_id


def _default_source() -> str:
    # A person types at a terminal; an agent's tool call has no terminal on stdin.
    return "principal" if sys.stdin.isatty() else "agent"


@context.command("pin")
@params.argument("kind", type=KIND_CHOICE, metavar="KIND")
@params.argument("text", nargs=-1, required=True)
@params.option("--source", type=params.Choice(["principal", "agent", "execution"]),
              help="Who pins it (default: principal at a terminal, agent otherwise).")
@json_option
def pin(kind: str, text: tuple[str, ...], source: str | None, as_json: bool) -> None:
    """Pin one sentence to the active task.

    \b
      majordomus context pin KIND -- "TEXT"
      KIND: decision, constraint, open-item or next-action

    Prints the new pin's id (for `unpin`). Never pin secrets or file contents: secret-looking text is
    refused.
    """
    from majordomus import continuity
    from majordomus.output import emit, emit_json, note

    ws = workspace()
    new, completed = continuity.pin_landed(ws, kind, " ".join(text), source or _default_source())
    if as_json:
        emit_json(dict(new, kind=kind))
        return
    if completed:  # the same pin had landed before, its ledger event had not: only the event was written
        note(f"this {kind} was already pinned; its missing `context.pin` ledger event is now written")
    else:
        note(f"pinned {kind} ({new['source']})")
    emit(new["id"])


@context.command("unpin")
@params.argument("pin_id", metavar="PIN_ID")
@json_option
def unpin(pin_id: str, as_json: bool) -> None:
    """Remove a pin of the active task by its id.

    A unique prefix of the id, at least 4 characters long, will do.
    """
    from majordomus import continuity
    from majordomus.output import emit, emit_json, note

    kind, removed, completed = continuity.unpin_landed(workspace(), pin_id)
    if as_json:
        emit_json(dict(removed, kind=kind))
        return
    if completed:  # an earlier unpin removed it, and its ledger event did not land: only the event was written
        note("the pin was already gone from the continuity; its missing `context.unpin` ledger event is now written")
    emit(f"unpinned {kind} {removed['id']}")


@context.command("show")
@params.argument("task_id", metavar="[TASK]", required=False)
@json_option
def show(task_id: str | None, as_json: bool) -> None:
    """Print the rendered continuity of the active (or named) task."""
    from majordomus import continuity
    from majordomus.output import emit, emit_json

    ws = workspace()
    tid = _task_id(ws, task_id)
    limit = ws.config.get("continuity", "render_max_bytes")
    doc = continuity.effective(ws, tid)
    fitted = continuity.render_doc(doc, tid, limit)
    if as_json:
        emit_json({"task": tid, "rendered": fitted.text, "dropped": fitted.dropped,
                   "continuity": continuity.load(ws, tid)})
    else:
        emit(fitted.text)


_KIND_NAMES = (("decisions", "decisions"), ("constraints", "constraints"), ("openItems", "open items"),
               ("nextActions", "next actions"))


@context.command("status")
@params.argument("task_id", metavar="[TASK]", required=False)
@json_option
def status(task_id: str | None, as_json: bool) -> None:
    """Pins by kind, integrity and compactions of a task.

    Of the active task, or of TASK.
    """
    from majordomus.output import emit, emit_json

    ws = workspace()
    from majordomus.errors import MajordomusError
    from majordomus.hooks import journal  # the compaction journal's replay (design §12)

    tid = _task_id(ws, task_id)
    report = _status(ws, tid)
    try:
        report["compaction"] = journal.status(ws, tid)
    except (OSError, ValueError, MajordomusError) as exc:
        report["compaction"] = {"error": str(exc)}
    if as_json:
        emit_json(report)
        return
    lines = [f"task          {report['task']}", f"continuity    {report['path']}"]
    lines.append(f"integrity     {report['integrity']}")
    lines.extend(f"  finding: {f}" for f in report["findings"])
    if "counts" in report:
        lines.append(f"objective     {'set' if report['objective'] else 'none (interactive)'}")
        lines.append(f"updated       {report['updatedAt']}")
        for key, name in _KIND_NAMES:
            lines.append(f"{name:<13} {report['counts'][key]}")
            for p in report["pins"][key]:
                text = p["text"] if len(p["text"]) <= 72 else p["text"][:71] + "…"
                lines.append(f"  {p['id'][:8]}  {text}")
    if "compaction" in report:
        comp = report["compaction"]
        if isinstance(comp, dict) and "generation" in comp and "dropped_lines" in comp:
            detail = journal.summary(comp)
        else:
            detail = ", ".join(f"{k} {v}" for k, v in comp.items()) if isinstance(comp, dict) else str(comp)
        lines.append(f"compaction    {detail}")
    emit("\n".join(lines))


@context.command("validate")
@params.argument("task_id", metavar="[TASK]", required=False)
@json_option
def validate(task_id: str | None, as_json: bool) -> int:
    """Recompute the integrity hash; exit 1 on any finding."""
    from majordomus import continuity
    from majordomus.output import emit, emit_json

    ws = workspace()
    tid = _task_id(ws, task_id)
    findings = continuity.validate(ws, tid)
    if as_json:
        emit_json({"task": tid, "ok": not findings, "findings": findings})
    elif findings:
        emit("\n".join(f"finding: {f}" for f in findings))
    else:
        emit(f"ok: the continuity of task `{tid}` is intact (or absent)")
    return 1 if findings else 0


def main(argv: list[str]) -> int:
    return run(context, argv, "majordomus context")


def _status(ws: Any, task_id: str) -> dict[str, Any]:
    """Pins by kind and integrity, then the compaction state from the journal (added by the caller)."""
    import os

    from majordomus import continuity
    from majordomus.continuity_doc import PIN_KEYS

    path = continuity.path_of(ws, task_id)
    doc, found = continuity.examine(ws, task_id)
    out: dict[str, Any] = {"task": task_id, "path": ws.display(path), "exists": os.path.lexists(path)}
    if found:
        out["integrity"] = "broken"
    else:
        out["integrity"] = "ok" if doc is not None else "absent"
    out["findings"] = found
    if doc is not None:
        out["objective"] = bool(continuity.blocks(doc, 2)[0][0].entries)
        out["createdAt"], out["updatedAt"] = doc["createdAt"], doc["updatedAt"]
        out["pins"] = {key: [{k: p[k] for k in ("id", "text", "source", "createdAt")} for p in doc[key]]
                       for key in PIN_KEYS}
        out["counts"] = {key: len(doc[key]) for key in PIN_KEYS}
    return out
