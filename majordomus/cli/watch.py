"""`majordomus watch [--interval S] [--once] [--json] [--heartbeat]` (design §11): the command line of
majordomus.doctor.watch."""

from __future__ import annotations

import sys
from typing import Any

from majordomus.cli import params
from majordomus.cli.params import run
from majordomus.output import dumps, escape


def _printer(as_json: bool) -> Any:
    def emit(report: Any) -> None:
        if as_json:
            data = {"type": report.kind, "at": report.at}
            if report.kind == "event":
                data["event"] = report.event
            elif report.kind == "tick":
                data["tick"] = report.tick
            else:
                data.update(code=report.code, level=report.level, message=report.message, path=report.path,
                            hint=report.hint)
            line = dumps(data)
        elif report.kind == "event":  # every stored field escaped, its time too: no event can drive the terminal
            line = f"{escape(str(report.at))}  event   {escape(str(report.code)):<16} {escape(str(report.message))}"
        elif report.kind == "tick":
            line = f"{escape(str(report.at))}  tick    {report.tick}"
        else:
            line = f"{escape(str(report.at))}  {report.kind:<7} {escape(str(report.code))}: {escape(str(report.message))}"
            if report.kind == "begins" and report.hint:
                line += f"\n{'':22}next: {escape(str(report.hint))}"
        sys.stdout.write(line + "\n")
        sys.stdout.flush()  # a watcher is read as it goes, usually through a pipe

    return emit


@params.command("watch")
@params.option("--interval", type=params.FloatRange(min=0.1, max=86400.0),
              default=2.0, show_default=True, metavar="SECONDS",
              help="Seconds between rounds.")
@params.option("--once", is_flag=True, help="One round: report the conditions that hold now, then exit.")
@params.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
@params.option("--heartbeat", is_flag=True, help="Also print a line at the end of every round (liveness).")
def watch(interval: float, once: bool, as_json: bool, heartbeat: bool) -> int:
    """Report new ledger events, retention crossing its limit, and active tasks going stale, as they happen.

    Each condition is reported once when it begins and once when it clears. Ctrl-C ends it (exit 0)."""
    from majordomus.doctor import watch as core

    watcher = core.Watcher.open()
    return core.run(watcher, interval, once, _printer(as_json), heartbeat=heartbeat)


def main(argv: list[str]) -> int:
    return run(watch, argv, "majordomus watch")
