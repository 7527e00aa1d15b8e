#!/usr/bin/env python3
"""The majordomus performance benchmark (SPEC §16): every command beside its floor, in one table, in one run.

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
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Callable, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from measure import SLOW_GROUP_SECONDS, Cmd, Spawner, measure  # noqa: E402 - the directory goes on sys.path first
from report import Names, Row, render, result  # noqa: E402


@dataclass(frozen=True)
class Sizes:
    name: str
    records: tuple[int, int, int]
    ledger_events: int
    big_files: int
    repeat: int
    warmup: int


FULL = Sizes("full", (10, 1_000, 100_000), 1_000_000, 20_000, repeat=5, warmup=1)
QUICK = Sizes("quick", (10, 1_000, 10_000), 100_000, 20_000, repeat=3, warmup=1)
SMOKE = Sizes("smoke", (10, 20, 50), 500, 100, repeat=1, warmup=0)

# Payloads as Claude Code sends them (shapes from its hook documentation; values invented).
PRE_COMPACT = {"session_id": "0b9a3c2e-5f1d-4a7e-9c61-2d8f4b7e1a90", "transcript_path": "/tmp/t.jsonl",
               "cwd": ".", "permission_mode": "default", "hook_event_name": "PreCompact", "trigger": "auto",
               "custom_instructions": None}
SESSION_START = {"session_id": "0b9a3c2e-5f1d-4a7e-9c61-2d8f4b7e1a90", "transcript_path": "/tmp/t.jsonl",
                 "cwd": ".", "permission_mode": "default", "hook_event_name": "SessionStart", "source": "compact",
                 "model": "claude-sonnet-4-5"}


class Bench:
    """The scratch directory, the environment, the scenarios (built on demand) and the commands run in them."""

    def __init__(self, args: argparse.Namespace, sizes: Sizes) -> None:
        self.args, self.sizes = args, sizes
        self.mj = _find_majordomus()
        self.py = _interpreter_of(self.mj)
        self.base = os.path.realpath(tempfile.mkdtemp(prefix="majordomus-bench.", dir=args.dir))
        from stores import hermetic_env

        self.env = hermetic_env(self.base, os.path.dirname(self.mj))
        os.environ.update(self.env)  # the generators in this process read git config too
        self._scenarios: dict[str, str] = {}
        self.body = self._file("body.txt", b"")
        self.bodies = 0
        self.spawner = Spawner()

    def _file(self, name: str, data: bytes) -> str:
        path = os.path.join(self.base, name)
        with open(path, "wb") as fh:
            fh.write(data)
        return path

    # ---------------------------------------------------------------- scenarios

    def scenario(self, key: str, build: Callable[[str], None]) -> str:
        if key not in self._scenarios:
            path = os.path.join(self.base, key)
            started = time.perf_counter()
            build(path)
            self._log(f"built {key} in {time.perf_counter() - started:.1f} s")
            self._scenarios[key] = path
        return self._scenarios[key]

    def small(self) -> str:
        return self.scenario("small", lambda p: self._task_repo(p, files=1))

    def big(self) -> str:
        def build(path: str) -> None:
            import stores

            self._task_repo(path, files=self.sizes.big_files)
            stores.dirty(path, self.env)

        return self.scenario(f"files-{self.sizes.big_files}", build)

    def store(self, records: int) -> str:
        def build(path: str) -> None:
            import stores

            stores.new_repo(path, self.env, init=not self.args.no_init, settle=not self.args.smoke)
            stores.populate(path, records)

        return self.scenario(f"store-{records}", build)

    def ledger(self) -> str:
        def build(path: str) -> None:
            import stores

            stores.new_repo(path, self.env, init=not self.args.no_init, settle=not self.args.smoke)
            stores.big_ledger(path, self.sizes.ledger_events)

        return self.scenario(f"ledger-{self.sizes.ledger_events}", build)

    def _task_repo(self, path: str, files: int) -> None:
        import stores

        stores.new_repo(path, self.env, init=not self.args.no_init, files=files, settle=not self.args.smoke)
        stores.sh(path, self.env, self.mj, "task", "start", stores.TASK, "--objective", "Benchmark the checkpoint")
        stores.sh(path, self.env, self.mj, "checkpoint", stdin=b"The first note of the benchmark task.\n")

    def _log(self, text: str) -> None:
        if not self.args.quiet:
            print(f"  [{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)

    # ---------------------------------------------------------------- commands

    def majordomus(self, cwd: str, *args: str, stdin: Optional[str] = None, ok: tuple[int, ...] = (0,),
                   prepare: Optional[Callable[[], None]] = None) -> Cmd:
        return Cmd([self.mj, *args], cwd, stdin=stdin, ok_exits=ok, prepare=prepare)

    def python(self, cwd: str, code: str, *args: str) -> Cmd:
        return Cmd([self.py, "-c", code, *args], cwd)

    def shell(self, cwd: str, script: str) -> Cmd:
        return Cmd([shutil.which("sh") or "/bin/sh", "-c", script], cwd, script=script)

    def new_body(self) -> None:
        """A different note before each write, so that every run stores a new record."""
        self.bodies += 1
        with open(self.body, "wb") as fh:
            fh.write(f"Benchmark note {self.bodies} at {time.time_ns()}.\nNext: measure again.\n".encode())

    def write(self, cwd: str) -> Cmd:
        return self.majordomus(cwd, "checkpoint", stdin=self.body, prepare=self.new_body)


def _find_majordomus() -> str:
    found = shutil.which("majordomus") or shutil.which("majordomus", path=os.path.dirname(sys.executable))
    if not found:
        sys.exit("majordomus: the `majordomus` console script is not on PATH\n"
                 "hint: run `make bench`, or put the virtual environment's bin directory on PATH")
    return os.path.abspath(found)


def _interpreter_of(script: str) -> str:
    """The floors run on the interpreter the console script runs on, whatever started this benchmark."""
    try:
        with open(script, "rb") as fh:
            first = fh.readline().decode(errors="replace").strip()
    except OSError:
        return sys.executable
    if first.startswith("#!") and "python" in first and " " not in first[2:].strip():
        return first[2:].strip()
    return sys.executable


# ---------------------------------------------------------------- the plan: groups of rows


def plan(bench: Bench) -> list[tuple[str, Callable[[], list[Row]]]]:
    s = bench.sizes
    small_n, mid_n, large_n = s.records
    fmt = "{:,}".format
    floor_status = 'import pygit2; pygit2.Repository(".").status()'

    def checkpoint_rows() -> list[Row]:
        small, big = bench.small(), bench.big()
        return [
            Row("checkpoint", "small repo", bench.write(small), bench.python(small, floor_status),
                "python+pygit2+status", 1.3),
            Row("checkpoint", f"{fmt(s.big_files)}-file repo, dirty", bench.write(big),
                bench.python(big, floor_status), "python+pygit2+status", 1.15),
        ]

    def scaling(command: str, args: tuple[str, ...]) -> Callable[[], list[Row]]:
        def rows() -> list[Row]:
            cmds = []
            for n in s.records:
                cwd = bench.store(n)
                cmds.append(bench.write(cwd) if args == ("checkpoint",) else bench.majordomus(cwd, *args))
            base = f"same @{fmt(small_n)}"
            return [Row(command, f"{fmt(small_n)} records", cmds[0], None, "(base)", None),
                    Row(command, f"{fmt(mid_n)} records", cmds[1], cmds[0], base, None),
                    Row(command, f"{fmt(large_n)} records", cmds[2], cmds[0], base, 1.15)]
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
        pre = bench._file("pre-compact.json", json.dumps(PRE_COMPACT).encode())
        start = bench._file("session-start.json", json.dumps(SESSION_START).encode())
        session_start = bench.majordomus(cwd, "hook", "session-start", stdin=start)
        return [Row("hook compact --phase pre --runtime claude", f"{fmt(small_n)} records",
                    bench.majordomus(cwd, "hook", "compact", "--phase", "pre", "--runtime", "claude", stdin=pre),
                    bench.python(cwd, "pass"), "python -c pass", 1.6),
                Row("hook session-start", f"{fmt(small_n)} records", session_start,
                    bench.python(cwd, "import pygit2, yaml"), "python+import pygit2, yaml", 1.2),
                Row("hook session-start", f"{fmt(large_n)} records",
                    bench.majordomus(bench.store(large_n), "hook", "session-start", stdin=start),
                    session_start, f"same @{fmt(small_n)}", None)]

    return [
        ("checkpoint vs floor", checkpoint_rows),
        ("checkpoint --show", scaling("checkpoint --show", ("checkpoint", "--show"))),
        ("check", scaling("check", ("check",))),
        ("checkpoint (write)", scaling("checkpoint (write)", ("checkpoint",))),
        ("post-commit hook", scaling("post-commit hook: check --checkpoint", ("check", "--checkpoint"))),
        ("--list and doctor", store_scan_rows),
        ("ledger", ledger_rows),
        ("hooks", hook_rows),
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
        except Exception as exc:  # noqa: BLE001 - a broken scenario is one row's error, not the run's
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


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10 / 1,000 / 10,000 records, 100,000 events")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one run: proves the script works")
    parser.add_argument("--repeat", type=int, help="runs per figure (median); default 5, --quick 3")
    parser.add_argument("--only", metavar="REGEX",
                        help="only the groups whose name matches: 'checkpoint vs floor', 'checkpoint --show', "
                             "'check', 'checkpoint (write)', 'post-commit hook', '--list and doctor', 'ledger', "
                             "'hooks' (e.g. 'show|post-commit')")
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
        version = subprocess.run([bench.mj, "--version"], env=bench.env, capture_output=True, text=True).stdout
        print(f"majordomus benchmark ({sizes.name}): {version.strip() or bench.mj}; records "
              f"{'/'.join(f'{n:,}' for n in sizes.records)}, ledger {sizes.ledger_events:,} events, "
              f"{sizes.big_files:,}-file repo; `majordomus init` {'not run' if args.no_init else 'run'} in each repo")
        print(f"median wall time of {args.repeat} run(s) after {sizes.warmup} warm-up (groups slower than "
              f"{SLOW_GROUP_SECONDS:.0f} s a round: 3 runs); ratio = median / floor median, measured round-robin; "
              f"cpu ratio = the same with user+sys time; {os.cpu_count()} CPUs, load {load:.2f} -> "
              f"{os.getloadavg()[0]:.2f}")
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
