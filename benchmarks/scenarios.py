"""The benchmark's sizes, its floors (design §16), and `Bench`: the scratch directory, the hermetic environment,
the scenarios (built on demand, once per run) and the commands run in them."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Callable

from measure import Cmd, Spawner


@dataclass(frozen=True)
class Sizes:
    name: str
    records: tuple[int, int, int]  # the scaling series: base, middle, large
    ledger_events: int
    big_files: int  # the checkpoint's 20,000-file repository
    huge_files: int  # the checkpoint's 100,000-file repository, with core.untrackedCache
    session_records: int  # session-start in the big repository, with this many records
    repeat: int
    warmup: int


FULL = Sizes("full", (10, 1_000, 100_000), 1_000_000, 20_000, 100_000, 10_000, repeat=5, warmup=1)
QUICK = Sizes("quick", (10, 1_000, 10_000), 100_000, 20_000, 100_000, 10_000, repeat=3, warmup=1)
SMOKE = Sizes("smoke", (10, 20, 50), 500, 100, 200, 20, repeat=1, warmup=0)

# design §16's floors, each fed the same stdin as the command it judges. The interpreter plus the one
# `git status` that identity needs (§4), run in the same repository: checkpoint and session-start.
GIT_STATUS = ["git", "status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all"]
GIT_FLOOR = (f"import subprocess, sys; sys.stdin.buffer.read(); "
             f"subprocess.run({json.dumps(GIT_STATUS)}, stdout=subprocess.DEVNULL, check=True)")
GIT_FLOOR_NAME = "python+git status"
# A console script's own floor: what pip's generated wrapper does before any of our code runs (`import re,
# sys`), reading the same stdin: hook compact, hook stop, the post-commit `check --checkpoint`.
SCRIPT_FLOOR = "import re, sys; sys.stdin.buffer.read()"
SCRIPT_FLOOR_NAME = "python -c 'import re, sys'"

# Payloads as Claude Code sends them (shapes from its hook documentation; values invented).
PRE_COMPACT = {"session_id": "0b9a3c2e-5f1d-4a7e-9c61-2d8f4b7e1a90", "transcript_path": "/tmp/t.jsonl",
               "cwd": ".", "permission_mode": "default", "hook_event_name": "PreCompact", "trigger": "auto",
               "custom_instructions": None}
SESSION_START = {"session_id": "0b9a3c2e-5f1d-4a7e-9c61-2d8f4b7e1a90", "transcript_path": "/tmp/t.jsonl",
                 "cwd": ".", "permission_mode": "default", "hook_event_name": "SessionStart", "source": "compact",
                 "model": "claude-sonnet-4-5"}
GEMINI_SESSION_START = {"session_id": "0b9a3c2e-5f1d-4a7e-9c61-2d8f4b7e1a91", "transcript_path": "/tmp/g.json",
                        "cwd": ".", "hook_event_name": "SessionStart", "timestamp": "2026-12-01T09:00:00.000Z",
                        "source": "startup"}
COPILOT_SESSION_START = {"sessionId": "0b9a3c2e-5f1d-4a7e-9c61-2d8f4b7e1a92", "timestamp": 1796115600000,
                         "cwd": ".", "source": "new", "initialPrompt": "carry on"}
STOP = {"session_id": "0b9a3c2e-5f1d-4a7e-9c61-2d8f4b7e1a90", "transcript_path": "/tmp/t.jsonl", "cwd": ".",
        "permission_mode": "default", "hook_event_name": "Stop", "stop_hook_active": False,
        "last_assistant_message": "Done: the parser streams now, and the tests pass."}


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

    def payload(self, name: str, value: dict[str, object]) -> str:
        return self._file(name, json.dumps(value).encode())

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

    def huge(self) -> str:
        """The 100,000-file repository, dirty, with `core.untrackedCache=true` and the cache warm."""
        def build(path: str) -> None:
            import stores

            self._task_repo(path, files=self.sizes.huge_files)
            stores.dirty(path, self.env)
            stores.untracked_cache(path, self.env, settle=not self.args.smoke)

        return self.scenario(f"files-{self.sizes.huge_files}-untracked-cache", build)

    def big_store(self) -> str:
        """The 20,000-file repository again, holding a store of `session_records` records."""
        def build(path: str) -> None:
            import stores

            stores.new_repo(path, self.env, init=not self.args.no_init, files=self.sizes.big_files,
                            settle=not self.args.smoke)
            stores.populate(path, self.sizes.session_records)

        return self.scenario(f"files-{self.sizes.big_files}-store-{self.sizes.session_records}", build)

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

    def majordomus(self, cwd: str, *args: str, stdin: str | None = None, ok: tuple[int, ...] = (0,),
                   prepare: Callable[[], None] | None = None) -> Cmd:
        return Cmd([self.mj, *args], cwd, stdin=stdin, ok_exits=ok, prepare=prepare)

    def python(self, cwd: str, code: str, *args: str, stdin: str | None = None) -> Cmd:
        return Cmd([self.py, "-c", code, *args], cwd, stdin=stdin)

    def git_floor(self, cwd: str, stdin: str | None = None) -> Cmd:
        return self.python(cwd, GIT_FLOOR, stdin=stdin)

    def script_floor(self, cwd: str, stdin: str | None = None) -> Cmd:
        return self.python(cwd, SCRIPT_FLOOR, stdin=stdin)

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
