"""`majordomus brief [TASK] [--max-bytes N] [--json]` (design §9): the command line of majordomus.brief."""

from __future__ import annotations

import sys

from majordomus.cli import params
from majordomus.cli.params import json_option, run, workspace
from majordomus.lite.limits import MIN_RENDER_BYTES, NUMBER_MAX


@params.command("brief")
@params.argument("task_id", metavar="[TASK]", required=False)
@params.option("--max-bytes", type=params.IntRange(min=MIN_RENDER_BYTES, max=NUMBER_MAX), metavar="N",
              help="Budget in bytes (default: continuity.render_max_bytes).")
@json_option
def brief(task_id: str | None, max_bytes: int | None, as_json: bool) -> None:
    """The briefing a worker resumes from: continuity, latest handoff, checkpoints since, and drift."""
    from majordomus import brief as core
    from majordomus.output import emit_json, escape

    ws = workspace()
    result = core.compose(ws, task_id, max_bytes)
    if as_json:
        emit_json({"task": result.task, "text": result.text, "bytes": len(result.text.encode("utf-8")),
                   "dropped": result.dropped, "drift": result.drift,
                   "missing": [{"path": gone.rel, "why": gone.why} for gone in result.missing],
                   "not_shared": [gone.rel for gone in result.unshared]})
    else:
        sys.stdout.write(escape(result.text, body=True))  # an old record's body may hold what ingest refuses now


def main(argv: list[str]) -> int:
    return run(brief, argv, "majordomus brief")
