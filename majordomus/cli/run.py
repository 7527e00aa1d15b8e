"""`majordomus run [--label L] -- CMD [ARGS…]` and `run --list` (design §17)."""

from __future__ import annotations

import sys

from majordomus.cli import params
from majordomus.cli.params import json_option, workspace
from majordomus.errors import UsageError
from majordomus.output import escape, print_records


def main(argv: list[str]) -> int:
    return params.run(run_command, argv, "majordomus run")


@params.command("run", ignore_unknown_options=True, allow_interspersed_args=False)
@params.option("--label", metavar="L", help="What the run is evidence of (default: the command's name).")
@params.option("--list", "listing", is_flag=True, help="List run records, newest first.")
@params.option("--task", "task_id", metavar="T", help="With --list: only the runs of task T.")
@json_option
@params.argument("command", nargs=-1, type=params.UNPROCESSED, metavar="-- CMD [ARGS]...")
def run_command(label: str | None, listing: bool, task_id: str | None, as_json: bool,
                command: tuple[str, ...]) -> int:
    """Run CMD for the active task, passing its input and output through, and record the result.

    Exits with CMD's exit status (128+N when a signal N ended it)."""
    from majordomus import runs

    if listing:
        if command or label is not None:
            raise UsageError("--list takes no command and no --label", "majordomus run --list [--json] [--task T]")
        ws = workspace()
        if task_id is not None:
            from majordomus import tasks

            tasks.must_exist(ws, task_id)
        _print(runs.summaries(ws, task_id), as_json)
        return 0
    if task_id is not None or as_json:
        raise UsageError("--task and --json go with --list", "majordomus run [--label L] -- CMD [ARGS...]")
    ws = workspace()
    try:
        outcome, _path = runs.run(ws, list(command), label)
    except runs.RecordFailed as exc:
        from majordomus.lite.textrules import render_error

        sys.stderr.write(render_error(exc.error) + "\n")
        return exc.status or exc.error.code
    if outcome.output_error is not None:  # stored whole, but what CMD printed did not all reach its reader
        from majordomus.errors import EnvironmentProblem
        from majordomus.lite.textrules import render_error

        problem = EnvironmentProblem(
            f"the command ran (exit status {outcome.status}) and its run record is stored, but its output could "
            f"not all be passed on: {outcome.output_error.strerror or outcome.output_error}; the command's pipe "
            "was closed then, as a pipeline's is", "free space where the output goes (or see where it went); "
            "`majordomus run --list` shows the record, its output's tail included")
        sys.stderr.write(render_error(problem) + "\n")
        return outcome.status or problem.code
    if outcome.stopped_by is not None:  # recorded with CMD's own status; `run` ends as the signal ends a command
        return 128 + outcome.stopped_by
    return outcome.status


def _print(found: object, as_json: bool) -> None:
    if as_json:
        print_records(found, True)
        return
    from majordomus import runs

    out = sys.stdout
    for d in found:  # type: ignore[attr-defined]
        if "error" in d:
            out.write(escape(f"{d['path']}  ({d['error']})") + "\n")
            continue
        head = (d.get("head") or "0000000")[:7]
        out.write(escape(f"{d.get('timestamp')}  {d.get('task')}  {d.get('label')}  {runs.verdict(d)}  "
                         f"{d.get('branch') or '(detached)'}@{head}  {d['path']}") + "\n")
