"""The one table: each row's median beside its floor, the ratio against the budget, memory, and how to rerun it."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from measure import Cmd


@dataclass
class Row:
    command: str
    at: str
    cmd: Cmd | None
    floor: Cmd | None  # None: the row is the base of its own scaling series
    floor_name: str
    budget: float | None  # the ratio; None where it sets none
    status: str = "ok"  # ok | error
    note: str = ""


@dataclass(frozen=True)
class Names:
    """How the reproduction lines spell the scratch directory, the interpreter and the console script."""

    base: str
    python: str
    majordomus: str

    def word(self, arg: str) -> str:
        if arg == self.python:
            return '"$PY"'
        if arg == self.majordomus:
            return "majordomus"
        if arg.startswith(self.base):
            return '"$B' + arg[len(self.base):] + '"'
        return shlex.quote(arg)

    def line(self, cmd: Cmd) -> str:
        text = f"cd {self.word(cmd.cwd)} && "
        text += cmd.script if cmd.script is not None else " ".join(map(self.word, cmd.argv))
        if cmd.stdin:
            text += f" < {self.word(cmd.stdin)}"
        return text if cmd.script is not None else text + " >/dev/null"


def _time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1000:.1f} ms" if seconds < 10 else f"{seconds:.1f} s"


def _mib(cmd: Cmd | None) -> str:
    if not cmd or not cmd.samples:
        return "-"
    peak, inherited = max(s.maxrss_kib for s in cmd.samples), max(s.inherited_kib for s in cmd.samples)
    # ru_maxrss is an upper bound; near what a trivial exec inherits, the command's own peak may be far less
    return f"<={peak / 1024:.1f}" if peak <= inherited + 512 else f"{peak / 1024:.1f}"


def _ratio(value: float | None, floor: float | None) -> float | None:
    return value / floor if value is not None and floor else None


def result(row: Row) -> dict[str, Any]:
    """Everything known about a row, as the table shows it and as --json writes it."""
    median = row.cmd.median() if row.cmd else None
    floor = row.floor.median() if row.floor else None
    ratio = _ratio(median, floor)
    cpu, cpu_floor = (row.cmd.cpu_median() if row.cmd else None), (row.floor.cpu_median() if row.floor else None)
    if row.status != "ok":
        verdict = row.status
    elif row.budget is None or ratio is None:
        verdict = ""
    elif ratio <= row.budget:
        verdict = "met"
    else:
        verdict = f"NOT met (+{ratio - row.budget:.2f}x)"
    return {"command": row.command, "at": row.at, "status": row.status, "note": row.note,
            "runs": len(row.cmd.samples) if row.cmd else 0, "median_s": median, "floor": row.floor_name,
            "floor_median_s": floor, "ratio": ratio, "budget": row.budget, "verdict": verdict,
            "cpu_s": cpu, "floor_cpu_s": cpu_floor, "cpu_ratio": _ratio(cpu, cpu_floor),
            "peak_mib": _mib(row.cmd), "floor_peak_mib": _mib(row.floor),
            "exits": sorted({s.exit for s in row.cmd.samples}) if row.cmd else [],
            "samples_s": [s.seconds for s in row.cmd.samples] if row.cmd else [],
            "floor_samples_s": [s.seconds for s in row.floor.samples] if row.floor else [],
            "run": _how(row.cmd), "floor_run": _how(row.floor)}


def _how(cmd: Cmd | None) -> dict[str, Any] | None:
    return None if cmd is None else {"argv": cmd.argv, "cwd": cmd.cwd, "stdin": cmd.stdin}


HEAD = ["#", "command", "at", "runs", "median", "floor", "floor median", "ratio", "budget", "verdict",
        "cpu ratio", "peak MiB", "floor MiB", "exit"]
RIGHT = {0, 3, 4, 6, 7, 10, 11, 12}


def render(rows: list[Row], names: Names, export: str) -> str:
    table = [HEAD]
    for i, row in enumerate(rows, 1):
        r = result(row)
        table.append([str(i), r["command"], r["at"], str(r["runs"]), _time(r["median_s"]), r["floor"],
                      _time(r["floor_median_s"]) if row.floor else "-",
                      f"{r['ratio']:.2f}x" if r["ratio"] is not None else "-",
                      f"<={r['budget']:.2f}x" if r["budget"] else "-", r["verdict"] or "-",
                      f"{r['cpu_ratio']:.2f}x" if r["cpu_ratio"] is not None else "-",
                      r["peak_mib"], r["floor_peak_mib"], ",".join(map(str, r["exits"])) or "-"])
    widths = [max(len(line[c]) for line in table) for c in range(len(HEAD))]
    lines = ["  ".join(cell.rjust(widths[c]) if c in RIGHT else cell.ljust(widths[c])
                       for c, cell in enumerate(line)).rstrip() for line in table]
    lines.insert(1, "-" * len(lines[0]))
    lines += ["", "Reproduce (paste the export line first; the scratch directory is removed unless --keep):",
              f"  {export}"]
    for i, row in enumerate(rows, 1):
        if row.cmd is not None:
            lines.append(f"  {i:>2}  {names.line(row.cmd)}")
        if row.floor is not None:
            lines.append(f"      floor: {names.line(row.floor)}")
        if row.note:
            lines.append(f"      note: {row.note}")
    lines.append("  (checkpoint rows: $B/body.txt is rewritten with a new note before every run, so that each run "
                 "stores a new record)")
    return "\n".join(lines)
