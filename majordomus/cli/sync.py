"""`majordomus sync push|pull|status|compact`: the command line of majordomus.sync (design §13)."""

from __future__ import annotations

from typing import Any

from majordomus.cli import params
from majordomus.cli.params import json_option, run, workspace
from majordomus.output import emit, emit_json, escape, note

NOUNS = {"tasks": ("task", "tasks"), "handoffs": ("handoff", "handoffs"),
         "checkpoints": ("checkpoint", "checkpoints"), "runs": ("run", "runs")}
KINDS = {"task": "tasks", "handoff": "handoffs", "checkpoint": "checkpoints", "run": "runs"}
timeout_option = params.option("--timeout", type=params.FloatRange(0, 3600), default=20.0, show_default=True,
                              metavar="SECONDS", help="How long to keep retrying a lost race before exit 75 (busy).")


def _counts(by_dir: dict[str, int]) -> str:
    shown = [d for d in NOUNS if d != "runs" or by_dir.get(d)]
    return ", ".join(f"{by_dir.get(d, 0)} {NOUNS[d][0] if by_dir.get(d, 0) == 1 else NOUNS[d][1]}" for d in shown)


def _where(item: Any, remote: str) -> str:
    if item.side == "local":
        return "here"
    return escape(item.ref) if item.ref else remote


SHOWN_REFUSALS = 20  # a hostile remote may hold thousands of bad entries: the terminal gets the first few
EVERY_ONE = "`--json` lists every one"


def _refusal_lines(refused: list[Any], remote: str, prefix: str, rest: str) -> list[str]:
    """At most SHOWN_REFUSALS lines, then one that counts the rest and says where they are."""
    lines = [f"{prefix}{escape(r.path)} ({_where(r, remote)}): {escape(r.reason)}" for r in refused[:SHOWN_REFUSALS]]
    if len(refused) > SHOWN_REFUSALS:
        lines.append(f"{prefix}… and {len(refused) - SHOWN_REFUSALS} more; {rest}")
    return lines


def _refuse(refused: list[Any], remote: str, rest: str = EVERY_ONE) -> None:
    """Refused entries were neither imported nor shared; say which and exit 10 (after the rest was done)."""
    if not refused:
        return
    from majordomus.errors import Refused

    raise Refused(
        f"{len(refused)} entr{'y' if len(refused) == 1 else 'ies'} refused, not imported and not shared:",
        detail=_refusal_lines(refused, remote, "", rest),
        hint="an entry that breaks the rules of a local write never enters the store; ask whoever pushed it, and "
        "run `majordomus doctor` on the machine that holds it",
    )


def _status(ws: Any, task_id: str) -> str | None:
    from majordomus import tasks
    from majordomus.errors import MajordomusError

    try:
        return tasks.load(ws, task_id).status
    except MajordomusError:
        return None


def _report_pull(ws: Any, result: Any) -> None:
    if result.imported:
        by_dir: dict[str, int] = {}
        for item in result.imported:
            by_dir[KINDS[item.kind]] = by_dir.get(KINDS[item.kind], 0) + 1
        emit(f"imported from {escape(result.remote)}: {_counts(by_dir)}"
             + (f" ({result.restored} of them lost here since the last pull)" if result.restored else ""))
    for c in result.conflicts:
        emit(f"conflict: task {c.task} changed on two machines; kept the {c.kept} record "
             f"(updated_at local {c.local_updated_at}, remote {escape(str(c.remote_updated_at))}, "
             f"from {escape(str(c.machine))}); see `majordomus ledger`")
    for task_id in result.released:
        held = _status(ws, task_id) == "active"  # active elsewhere, or let go there (a release, a handoff)
        emit(f"task {task_id} is no longer active here: a newer record came from {escape(result.remote)} "
             + (f"(take it back with `majordomus task resume {task_id} --force`)" if held else
                f"saying it was let go there (resume it here with `majordomus task resume {task_id}`)"))


@params.group("sync")
def sync() -> None:
    """Share task records and records through a git remote: one ref per machine."""


@sync.command("push")
@params.argument("remote", metavar="[REMOTE]", required=False)
@params.option("--checkpoints", is_flag=True, help="Share the checkpoint and run records too.")
@timeout_option
@json_option
def push_cmd(remote: str | None, checkpoints: bool, timeout: float, as_json: bool) -> None:
    """Push this machine's records to a git remote, on a ref of its own.

    They are committed on refs/majordomus/machines/ID, and only that ref is pushed.
    """
    from majordomus.sync import push as core

    result = core.push(workspace(), remote, checkpoints=checkpoints, timeout=timeout)
    if as_json:
        emit_json({"remote": result.remote, "machine": result.machine, "ref": result.ref, "commit": result.commit,
                   "pushed": result.pushed, "attempts": result.attempts, "migrated": result.migrated,
                   "completed": result.completed,
                   "sent": result.sent, "refused": [vars(r) for r in result.refused]})
    elif result.commit is None:
        note("majordomus: nothing to push: no task records here yet (start one with `majordomus task start ID`)")
    else:
        what = "pushed" if result.pushed else "already up to date:"
        if result.completed:
            note(f"majordomus: {escape(result.remote)} already had {result.commit[:7]}, pushed by an earlier `sync push` "
                 "that stopped before writing its ledger event; the event is written now")
        sent = f": sent {_counts(result.sent)}" if result.pushed else ""
        emit(f"{what} {result.ref} to {escape(result.remote)} ({result.commit[:7]}){sent}"
             + (f" after {result.attempts} attempts" if result.attempts > 1 else ""))
        if result.migrated:
            emit(f"migrated refs/majordomus/state on {escape(result.remote)} to format 2 (one ref per machine); "
                 "majordomus before this version will ask to be upgraded")
    _refuse(result.refused, escape(result.remote))


@sync.command("pull")
@params.argument("remote", metavar="[REMOTE]", required=False)
@params.option("--full", is_flag=True, help="Read every entry of every ref and import whatever is missing here, "
              "not only what changed since the last pull.")
@json_option
def pull_cmd(remote: str | None, full: bool, as_json: bool) -> None:
    """Import what this machine lacks, from every machine at once.

    One fetch of refs/majordomus/*; every entry checked as a local write is.
    """
    from majordomus.sync import pull as core

    ws = workspace()
    result = core.pull(ws, remote, full=full)
    if as_json:
        emit_json({"remote": result.remote, "refs": result.machines, "settled": result.settled,
                   "restored": result.restored, "missing": result.missing,
                   "imported": [vars(i) for i in result.imported], "conflicts": [vars(c) for c in result.conflicts],
                   "refused": [vars(r) for r in result.refused], "released": result.released,
                   "broken": "\n  ".join([result.problem.message, *result.problem.detail]) if result.problem else None})
    else:
        _report_pull(ws, result)
        if not result.imported:
            emit(f"nothing new from {escape(result.remote)}")
        if result.missing:
            shown = ", ".join(escape(p) for p in result.missing[:SHOWN_REFUSALS])
            more = f" and {len(result.missing) - SHOWN_REFUSALS} more" if len(result.missing) > SHOWN_REFUSALS else ""
            note(f"majordomus: {len(result.missing)} entr{'y' if len(result.missing) == 1 else 'ies'} this machine "
                 f"settled on {'is' if len(result.missing) == 1 else 'are'} missing here and no ref of "
                 f"{escape(result.remote)} holds {'it' if len(result.missing) == 1 else 'them'} any more: {shown}{more} "
                 "(restore them from a backup, or pull from a remote that still has them)")
    if result.problem is not None:
        if result.refused and not as_json:
            note("\n".join(_refusal_lines(result.refused, escape(result.remote), "refused: ", EVERY_ONE)))
        raise result.problem
    _refuse(result.refused, escape(result.remote))


@sync.command("status")
@params.argument("remote", metavar="[REMOTE]", required=False)
@params.option("--no-fetch", is_flag=True, help="Compare with the refs fetched last, without asking the remote.")
@json_option
def status_cmd(remote: str | None, no_fetch: bool, as_json: bool) -> None:
    """Machines seen, what a push sends, what a pull imports."""
    from majordomus.sync import status as syncstatus

    found = syncstatus.status(workspace(), remote, fetch=not no_fetch)
    if as_json:
        emit_json(found.to_dict())
        return
    emit(f"remote: {escape(found.remote)}{'' if found.fetched else ' (as fetched last)'}")
    emit(f"this machine: {found.machine or '(no id yet: made at its first push)'}")
    if not found.machines:
        emit("machines seen: none yet")
    for m in found.machines:
        who = "folded state" if m.id is None else escape(m.id)
        emit(f"  {who}: last pushed {m.pushed_at} ({m.commit[:7]})" + ("  <- this machine" if m.this else "")
             + (" (format 1: migrated at the next push)" if m.format == 1 else ""))
    _status_lines("not delivered (sync push sends)", found.ahead)
    _status_lines("behind (sync pull imports)", found.behind)
    for c in found.conflicts:
        emit(f"diverged: task {c.task} changed on two machines; the {c.kept} record is newer and will be kept")
    for line in _refusal_lines(found.refused, escape(found.remote), "refused: ", EVERY_ONE):
        emit(line)
    for r in found.broken:
        emit(f"unreadable: {escape(r.path)}: {escape(r.reason)}")


def _status_lines(label: str, by_dir: dict[str, list[str]]) -> None:
    total = sum(len(v) for v in by_dir.values())
    if not total:
        emit(f"{label}: nothing")
        return
    emit(f"{label}: {_counts({d: len(v) for d, v in by_dir.items()})}")
    for path in by_dir.get("tasks", []):
        emit(f"  {escape(path)}")
    if label.startswith("not delivered") and (by_dir.get("checkpoints") or by_dir.get("runs")):
        emit("  (checkpoints and runs go only with `sync push --checkpoints`)")


@sync.command("compact")
@params.argument("remote", metavar="[REMOTE]", required=False)
@params.option("--machine", "machines", multiple=True, metavar="ID", help="A retired machine to fold (repeatable).")
@params.option("--idle-days", type=params.FloatRange(0, None), default=None, metavar="N",
              help="Fold every other machine that has not pushed for N days.")
@timeout_option
@json_option
def compact_cmd(remote: str | None, machines: tuple[str, ...], idle_days: float | None, timeout: float,
                as_json: bool) -> None:
    """Fold retired machines' refs into refs/majordomus/state.

    One commit, the union; their refs are deleted on the remote in the same atomic push.
    """
    from majordomus.sync import compact as core

    result = core.compact(workspace(), remote, list(machines), idle_days, timeout)
    if as_json:
        emit_json({"remote": result.remote, "folded": result.folded, "commit": result.commit,
                   "attempts": result.attempts, "completed": result.completed,
                   "refused": [vars(r) for r in result.refused]})
    elif not result.folded:
        emit(f"nothing to fold on {escape(result.remote)}")
    else:
        if result.completed:
            note(f"majordomus: {escape(result.remote)} already had this fold, pushed by an earlier `sync compact` that "
                 "stopped before writing its ledger event; the event is written now")
        emit(f"folded {len(result.folded)} machine{'s' if len(result.folded) != 1 else ''} into refs/majordomus/state "
             f"on {escape(result.remote)} ({result.commit[:7] if result.commit else ''}): {', '.join(result.folded)}")
    _refuse(result.refused, escape(result.remote))


def main(argv: list[str]) -> int:
    return run(sync, argv, "majordomus sync")
