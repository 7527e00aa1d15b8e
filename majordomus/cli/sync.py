"""`majordomus sync push|pull|status`: the click layer over majordomus.sync (SPEC §13)."""

from __future__ import annotations

from typing import Any, Optional

import click

from majordomus.cli.common import Group, json_option, run, workspace
from majordomus.output import emit, emit_json, note

NOUNS = {"tasks": ("task", "tasks"), "handoffs": ("handoff", "handoffs"), "checkpoints": ("checkpoint", "checkpoints")}
KINDS = {"task": "tasks", "handoff": "handoffs", "checkpoint": "checkpoints"}


def _count(n: int, directory: str) -> str:
    singular, plural = NOUNS[directory]
    return f"{n} {singular if n == 1 else plural}"


def _counts(by_dir: dict[str, int]) -> str:
    return ", ".join(_count(by_dir.get(d, 0), d) for d in NOUNS)


def _result_dict(result: Any) -> dict[str, Any]:
    return {
        "remote": result.remote,
        "ref": "refs/majordomus/state",
        "commit": result.commit,
        "pushed": result.pushed,
        "attempts": result.attempts,
        "held": result.held,
        "imported": [vars(i) for i in result.imported],
        "conflicts": [vars(c) for c in result.conflicts],
        "refused": [vars(r) for r in result.refused],
        "released": result.released,
    }


def _report_merge(result: Any) -> None:
    if result.imported:
        by_dir: dict[str, int] = {}
        for item in result.imported:
            by_dir[KINDS[item.kind]] = by_dir.get(KINDS[item.kind], 0) + 1
        emit(f"imported from {result.remote}: {_counts(by_dir)}")
    for c in result.conflicts:
        emit(f"conflict: task {c.task} changed on both sides; kept the {c.kept} record "
             f"(updated_at local {c.local_updated_at}, remote {c.remote_updated_at}); see `majordomus ledger`")
    for task_id in result.released:
        emit(f"task {task_id} is no longer active here: a newer record came from {result.remote} "
             f"(take it back with `majordomus task resume {task_id} --force`)")


def _refuse(result: Any) -> None:
    """Refused entries were neither imported nor shared; say which and exit 10 (after the rest was done)."""
    if not result.refused:
        return
    from majordomus.errors import Refused

    lines = [f"  {r.path} ({'here' if r.side == 'local' else result.remote}): {r.reason}" for r in result.refused]
    raise Refused(
        f"{len(result.refused)} record(s) refused, not imported and not shared:\n" + "\n".join(lines),
        "a record whose content does not match its name was changed after it was written; "
        "ask whoever pushed it, and run `majordomus doctor` on the machine that holds it",
    )


@click.group("sync", cls=Group)
def sync() -> None:
    """Share task records and handoffs (and checkpoints) through a git remote."""


@sync.command("push")
@click.argument("remote", metavar="[REMOTE]", required=False)
@click.option("--checkpoints", is_flag=True, help="Share the checkpoint records too.")
@json_option
def push_cmd(remote: Optional[str], checkpoints: bool, as_json: bool) -> None:
    """Push this machine's records to a git remote.

    They are committed on refs/majordomus/state, and only that ref is pushed.
    """
    from majordomus.sync import push_pull as core

    result = core.push(workspace(), remote, checkpoints=checkpoints)
    if as_json:
        emit_json(_result_dict(result))
    elif result.commit is None:
        note("majordomus: nothing to push: no task records here yet (start one with `majordomus task start ID`)")
    else:
        _report_merge(result)
        what = "pushed" if result.pushed else "already up to date:"
        emit(f"{what} refs/majordomus/state on {result.remote} ({result.commit[:7]}): {_counts(result.held)}"
             + (f" after {result.attempts} attempts" if result.attempts > 1 else ""))
    _refuse(result)


@sync.command("pull")
@click.argument("remote", metavar="[REMOTE]", required=False)
@json_option
def pull_cmd(remote: Optional[str], as_json: bool) -> None:
    """Fetch refs/majordomus/state and import what this machine lacks."""
    from majordomus.sync import push_pull as core

    result = core.pull(workspace(), remote)
    if as_json:
        emit_json(_result_dict(result))
    else:
        _report_merge(result)
        if not result.imported:
            emit(f"nothing new from {result.remote}")
    _refuse(result)


@sync.command("status")
@click.argument("remote", metavar="[REMOTE]", required=False)
@click.option("--no-fetch", is_flag=True, help="Compare with the remote state fetched last, without asking the remote.")
@json_option
def status_cmd(remote: Optional[str], no_fetch: bool, as_json: bool) -> None:
    """What a push would send and a pull would import."""
    from majordomus.sync import status as syncstatus

    found = syncstatus.status(workspace(), remote, fetch=not no_fetch)
    if as_json:
        emit_json(found.to_dict())
        return
    where = found.remote_commit[:7] if found.remote_commit else "none yet"
    emit(f"remote: {found.remote} (refs/majordomus/state: {where}{'' if found.fetched else ', as fetched last'})")
    _status_lines("ahead (sync push sends)", found.ahead)
    _status_lines("behind (sync pull imports)", found.behind)
    for c in found.conflicts:
        emit(f"diverged: task {c.task} changed on both sides; the {c.kept} record is newer and will be kept")
    for r in found.refused:
        emit(f"refused: {r.path} ({'here' if r.side == 'local' else found.remote}): {r.reason}")


def _status_lines(label: str, by_dir: dict[str, list[str]]) -> None:
    total = sum(len(v) for v in by_dir.values())
    if not total:
        emit(f"{label}: nothing")
        return
    counts = _counts({d: len(v) for d, v in by_dir.items()})
    emit(f"{label}: {counts}")
    for path in by_dir.get("tasks", []):
        emit(f"  {path}")
    if label.startswith("ahead") and by_dir.get("checkpoints"):
        emit("  (checkpoints go only with `sync push --checkpoints`)")


def main(argv: list[str]) -> int:
    return run(sync, argv, "majordomus sync")
