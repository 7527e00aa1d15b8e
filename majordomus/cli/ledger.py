"""`majordomus ledger [--json] [--task T] [--verify]` (design §10)."""

from __future__ import annotations

import sys

from majordomus.cli import params
from majordomus.cli.params import json_option, run, workspace
from majordomus.output import BlockWriter, dumps, emit, emit_json, escape, json_text, note

_LEDGER_COMMON = frozenset(("v", "seq", "at", "event", "task", "worktree", "branch", "prev"))


@params.command("ledger")
@json_option
@params.option("--task", "task_id", metavar="T", help="Only the events of task T.")
@params.option("--verify", is_flag=True, help="Check the hash chain; exit 1 when it is broken.")
def ledger_cmd(as_json: bool, task_id: str | None, verify: bool) -> int:
    """Print the ledger's events, or verify its hash chain."""

    from majordomus.store import ledger

    ws = workspace()
    if task_id is not None:  # one grammar for an id wherever it is given, and a task that is there: exit 2
        from majordomus import tasks

        tasks.must_exist(ws, task_id)
    if verify:
        result = ledger.verify(ws.paths.ledger)
        if as_json:
            emit_json({"ok": result.ok, "events": result.events, "dropped_lines": result.dropped_lines,
                       "breaks": result.breaks})
        else:
            for brk in result.breaks:
                emit(f"broken: {brk}")
            emit(f"{'ok' if result.ok else 'BROKEN'}: {result.events} events, "
                 f"{result.dropped_lines} dropped lines")
        return 0 if result.ok else 1
    # Streamed: a ledger of a million events is printed without holding it, and --json passes each
    # validated line through as it stands instead of decoding and re-encoding it.
    dropped = [0]
    out = BlockWriter(sys.stdout)
    shown = 0
    if as_json:
        out.write('{"events": [')
    for line, ev in ledger.scan(ws.paths.ledger, dropped):
        if task_id is not None and ev.get("task") != task_id:
            continue
        if as_json:
            out.write(("," if shown else "") + "\n  " + json_text(line.decode("utf-8").strip()))
        else:
            extra = {k: v for k, v in ev.items() if k not in _LEDGER_COMMON}
            detail = " ".join(f"{k}={v if isinstance(v, str) else dumps(v)}" for k, v in extra.items())
            if ev["event"] == "git.rewrite":  # its mapping (up to 3,000 pairs) is for --json
                from majordomus import rewrites

                detail = rewrites.summary(ev)
            elif ev["event"] == "sync.refused":  # its entries are for --json
                from majordomus.sync import pull_refused

                detail = pull_refused.summary(ev)
            out.write(escape(f"{ev['seq']:>6}  {ev['at']}  {ev['event']:<16} {ev.get('task') or '-'}  {detail}"
                             .rstrip()) + "\n")
        shown += 1
    if as_json:
        out.write(("\n" if shown else "") + f'], "dropped_lines": {dropped[0]}}}\n')
    out.flush()
    if dropped[0] and not as_json:
        note(f"majordomus: {dropped[0]} torn or invalid ledger lines skipped "
             "(run `majordomus doctor` for details)")
    return 0


def main(argv: list[str]) -> int:
    return run(ledger_cmd, argv, "majordomus ledger")
