#!/usr/bin/env python3
"""The majordomus performance benchmark (design §16): every command beside its floor, in one table, in one run.

    make bench                                  # full run: 10 / 1,000 / 100,000 records, 1,000,000 events
    .venv/bin/python benchmarks/run.py --quick  # 10 / 1,000 / 10,000 records, 100,000 events
    .venv/bin/python benchmarks/run.py --only 'show|check' --repeat 9 --keep

Each figure is the median wall time of several runs of a fresh process, measured round-robin with its floor
(or with its 10-record counterpart) so that noise on a shared machine hits both alike; the ratio is the
budget's unit. Peak memory is the child's ru_maxrss (its own children included), taken through a small
spawner process (spawner.py) so that the benchmark's own size does not leak into it. Standard library only; the
scratch stores are generated through the installed majordomus modules (benchmarks/stores.py).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from typing import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from measure import SLOW_GROUP_SECONDS, Cmd, measure  # noqa: E402 - the directory goes on sys.path first
from report import Names, Row, render, result  # noqa: E402
from scenarios import (  # noqa: E402
    COPILOT_SESSION_START,
    FULL,
    GEMINI_SESSION_START,
    GIT_FLOOR_NAME,
    PRE_COMPACT,
    QUICK,
    SCRIPT_FLOOR_NAME,
    SESSION_START,
    SMOKE,
    STOP,
    Bench,
)

# ---------------------------------------------------------------- the plan: groups of rows


def plan(bench: Bench) -> list[tuple[str, Callable[[], list[Row]]]]:
    s = bench.sizes
    small_n, mid_n, large_n = s.records
    fmt = "{:,}".format

    def checkpoint_rows() -> list[Row]:
        small, big, huge = bench.small(), bench.big(), bench.huge()
        return [
            Row("checkpoint", "small repo", bench.write(small), bench.git_floor(small, bench.body),
                GIT_FLOOR_NAME, 1.5),
            Row("checkpoint", f"{fmt(s.big_files)}-file repo, dirty", bench.write(big),
                bench.git_floor(big, bench.body), GIT_FLOOR_NAME, 1.3),
            Row("checkpoint", f"{fmt(s.huge_files)}-file repo, dirty, untracked cache", bench.write(huge),
                bench.git_floor(huge, bench.body), GIT_FLOOR_NAME, 1.3),
        ]

    def scaling(command: str, args: tuple[str, ...], stdin: str | None = None,
                floor: tuple[Callable[[str, str | None], Cmd], str, float] | None = None,
                ) -> Callable[[], list[Row]]:
        """The command at each store size against itself at the smallest; `floor` adds the smallest against
        a floor (made in the same repository, fed the same stdin), measured in the same rounds."""
        def rows() -> list[Row]:
            cmds = []
            for n in s.records:
                cwd = bench.store(n)
                cmds.append(bench.write(cwd) if args == ("checkpoint",) else
                            bench.majordomus(cwd, *args, stdin=stdin))
            base = f"same @{fmt(small_n)}"
            out = [Row(command, f"{fmt(small_n)} records", cmds[0], None, "(base)", None),
                   Row(command, f"{fmt(mid_n)} records", cmds[1], cmds[0], base, None),
                   Row(command, f"{fmt(large_n)} records", cmds[2], cmds[0], base, 1.15)]
            if floor is not None:
                make, name, budget = floor
                out.append(Row(command, f"{fmt(small_n)} records", cmds[0], make(bench.store(small_n), stdin),
                               name, budget))
            return out
        return rows

    def store_scan_rows() -> list[Row]:
        cwd = bench.store(large_n)
        records = os.path.join(cwd, ".ai", "local", "state", "checkpoints")
        floor = bench.shell(records, "find . -name '*.md' -print0 | xargs -0 sha256sum >/dev/null")
        return [Row("checkpoint --list", f"{fmt(large_n)} records", bench.majordomus(cwd, "checkpoint", "--list"),
                    floor, "sha256sum of the records", 2.0),
                Row("doctor", f"{fmt(large_n)} records", bench.majordomus(cwd, "doctor", ok=(0, 1)),
                    floor, "sha256sum of the records", 2.0)]

    def ledger_rows() -> list[Row]:
        cwd = bench.ledger()
        path = os.path.join(cwd, ".ai", "local", "state", "ledger.jsonl")
        # The cheapest bare loop: text mode decodes in bulk, a fifth cheaper than json.loads on each bytes line.
        floor = bench.python(cwd, "import collections, json, sys; collections.deque((json.loads(line) for line "
                                  'in open(sys.argv[1], encoding="utf-8")), maxlen=0)', path)
        at = f"{fmt(s.ledger_events)} events"
        return [Row("ledger --verify", at, bench.majordomus(cwd, "ledger", "--verify"), floor,
                    "json.loads loop", 1.5),
                Row("ledger --json", at, bench.majordomus(cwd, "ledger", "--json"), floor, "json.loads loop", 1.5)]

    def hook_rows() -> list[Row]:
        cwd = bench.store(small_n)
        pre, stop = bench.payload("pre-compact.json", PRE_COMPACT), bench.payload("stop.json", STOP)
        start = bench.payload("session-start.json", SESSION_START)
        compact = ("hook", "compact", "--phase", "pre", "--runtime", "claude")
        session_start = ("hook", "session-start", "--runtime", "claude")
        big = bench.big_store()
        return [Row("hook compact --phase pre --runtime claude", f"{fmt(small_n)} records",
                    bench.majordomus(cwd, *compact, stdin=pre), bench.script_floor(cwd, pre), SCRIPT_FLOOR_NAME,
                    1.25),
                Row("hook stop", f"{fmt(small_n)} records", bench.majordomus(cwd, "hook", "stop", stdin=stop),
                    bench.script_floor(cwd, stop), SCRIPT_FLOOR_NAME, None),
                Row("hook session-start --runtime claude", f"{fmt(small_n)} records, small repo",
                    bench.majordomus(cwd, *session_start, stdin=start), bench.git_floor(cwd, start),
                    GIT_FLOOR_NAME, 1.5),
                Row("hook session-start --runtime claude",
                    f"{fmt(s.big_files)}-file repo, {fmt(s.session_records)} records",
                    bench.majordomus(big, *session_start, stdin=start), bench.git_floor(big, start),
                    GIT_FLOOR_NAME, 1.5)] + [
                # Gemini CLI and Copilot CLI: the whole briefing at every start, in their own shapes (design §23).
                Row(f"hook session-start --runtime {runtime}", f"{fmt(small_n)} records, small repo",
                    bench.majordomus(cwd, "hook", "session-start", "--runtime", runtime, stdin=payload),
                    bench.git_floor(cwd, payload), GIT_FLOOR_NAME, 1.5)
                for runtime, payload in (("gemini", bench.payload("gemini-session-start.json", GEMINI_SESSION_START)),
                                         ("copilot", bench.payload("copilot-session-start.json",
                                                                   COPILOT_SESSION_START)))]

    def search_rows() -> list[Row]:
        # grep reads the files search reads, no more: every record directory and each task's continuity.json
        # (where the pins are), not the rest of context/ (continuity.md, the compaction journals).
        cwd = bench.store(large_n)
        state = os.path.join(cwd, ".ai", "local", "state")
        at = f"{fmt(large_n)} records"
        dirs = " ".join(d for d in ("checkpoints", "handoffs", "runs") if os.path.isdir(os.path.join(state, d)))
        if glob.glob(os.path.join(state, "context", "*", "continuity.json")):
            dirs += " context/*/continuity.json"

        def grep(word: str) -> Cmd:  # exit 1 (no match) is an answer, not a failure
            return bench.shell(state, f"grep -rli {word} {dirs} >/dev/null; test $? -le 1")

        return [Row("search (no match)", at, bench.majordomus(cwd, "search", "nowhere", ok=(1,)), grep("nowhere"),
                    "grep -rli", 2.0),
                Row("search (every record matches)", at, bench.majordomus(cwd, "search", "streaming"),
                    grep("streaming"), "grep -rli", 2.0)]

    start = bench.payload("session-start.json", SESSION_START)
    return [
        ("checkpoint vs floor", checkpoint_rows),
        ("checkpoint --show", scaling("checkpoint --show", ("checkpoint", "--show"))),
        ("check", scaling("check", ("check",))),
        ("checkpoint (write)", scaling("checkpoint (write)", ("checkpoint",))),
        ("post-commit hook", scaling("post-commit hook: check --checkpoint", ("check", "--checkpoint"),
                                     floor=(bench.script_floor, SCRIPT_FLOOR_NAME, 1.5))),
        ("--list and doctor", store_scan_rows),
        ("ledger", ledger_rows),
        ("hooks", hook_rows),
        ("session-start in store size", scaling("hook session-start --runtime claude",
                                                ("hook", "session-start", "--runtime", "claude"), stdin=start)),
        ("brief", scaling("brief", ("brief",))),
        ("search", search_rows),
    ]


def execute(bench: Bench) -> list[Row]:
    only = re.compile(bench.args.only, re.IGNORECASE) if bench.args.only else None
    rows: list[Row] = []
    for name, build in plan(bench):
        if only and not only.search(name):
            continue
        bench._log(f"{name}: preparing")
        try:
            group_rows = build()
        except Exception as exc:
            rows.append(Row(name, "-", None, None, "-", None, status="error", note=f"setup: {exc}"))
            continue
        wanted: list[Cmd] = []
        for row in group_rows:
            if row.status == "ok":
                wanted.extend(c for c in (row.cmd, row.floor) if c is not None and c not in wanted)
        if wanted:
            bench._log(f"{name}: measuring {len(wanted)} commands")
            measure(wanted, bench.spawner, bench.env, os.path.join(bench.base, "stderr.txt"), bench.args.repeat,
                    bench.sizes.warmup)
        for row in group_rows:
            broken = [c.error for c in (row.cmd, row.floor) if c is not None and c.error]
            if row.status == "ok" and broken:
                row.status, row.note = "error", broken[0]
        rows.extend(group_rows)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10 / 1,000 / 10,000 records, 100,000 events")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one run: proves the script works")
    parser.add_argument("--repeat", type=int, help="runs per figure (median); default 5, --quick 3")
    parser.add_argument("--only", metavar="REGEX",
                        help="only the groups whose name matches: 'checkpoint vs floor', 'checkpoint --show', "
                             "'check', 'checkpoint (write)', 'post-commit hook', '--list and doctor', 'ledger', "
                             "'hooks', 'session-start in store size', 'brief', 'search' (e.g. 'show|post-commit')")
    parser.add_argument("--no-init", action="store_true", help="scratch repos without `majordomus init`")
    parser.add_argument("--dir", metavar="DIR", help="make the scratch directory inside DIR")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory to reproduce rows")
    parser.add_argument("--json", metavar="FILE", help="also write every figure and sample to FILE")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = parser.parse_args(argv)
    sizes = SMOKE if args.smoke else QUICK if args.quick else FULL
    args.repeat = max(1, args.repeat or sizes.repeat)
    started = time.perf_counter()
    bench = Bench(args, sizes)
    try:
        load = os.getloadavg()[0]
        rows = execute(bench)
        elapsed = time.perf_counter() - started
        version = subprocess.run([bench.mj, "--version"], env=bench.env, capture_output=True, text=True, check=False).stdout
        print(f"majordomus benchmark ({sizes.name}): {version.strip() or bench.mj}; records "
              f"{'/'.join(f'{n:,}' for n in sizes.records)}, ledger {sizes.ledger_events:,} events, "
              f"{sizes.big_files:,}- and {sizes.huge_files:,}-file repos; `majordomus init` {'not run' if args.no_init else 'run'} in each repo")
        print(f"median wall time of {args.repeat} run(s) after {sizes.warmup} warm-up (groups slower than "
              f"{SLOW_GROUP_SECONDS:.0f} s a round: 3 runs); ratio = median / floor median, measured round-robin; "
              f"cpu ratio = the same with user+sys time; {os.cpu_count()} CPUs, load {load:.2f} -> "
              f"{os.getloadavg()[0]:.2f}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
        export = (f"export B={shlex.quote(bench.base)} PY={shlex.quote(bench.py)} "
                  f"PATH={shlex.quote(os.path.dirname(bench.mj))}:\"$PATH\" HOME=\"$B/home\" GIT_CONFIG_NOSYSTEM=1 "
                  "GIT_CONFIG_GLOBAL=\"$B/home/.gitconfig\" MAJORDOMUS_OWNER=bench@example.com")
        print(render(rows, Names(bench.base, bench.py, bench.mj), export))
        judged = [result(r) for r in rows if r.budget is not None]
        print(f"\nbudgets: {sum(r['verdict'] == 'met' for r in judged)} met, "
              f"{sum(r['verdict'].startswith('NOT') for r in judged)} not met, "
              f"{sum(r['status'] != 'ok' for r in judged)} not measured; building and measuring took {elapsed:.0f} s")
        if args.json:
            with open(args.json, "w", encoding="utf-8") as fh:
                json.dump({"sizes": sizes.name, "repeat": args.repeat, "seconds": elapsed, "scratch": bench.base,
                           "rows": [result(r) for r in rows]}, fh, indent=1)
    finally:
        bench.spawner.close()
        if args.keep:
            print(f"scratch directory kept: {bench.base}", file=sys.stderr)
        else:
            shutil.rmtree(bench.base, ignore_errors=True)
    print(f"total run time {time.perf_counter() - started:.0f} s"
          f"{'' if args.keep else ' (scratch directory removed)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
