"""Running commands many times, fairly: one fresh process per run, round-robin with the floor it is judged by."""

from __future__ import annotations

import marshal
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
SLOW_GROUP_SECONDS = 15.0  # a group whose first round takes longer is measured 3 times, not --repeat times


@dataclass
class Sample:
    seconds: float
    cpu: float  # user + system time of the child: far less disturbed by other load than wall time
    maxrss_kib: int
    exit: int
    inherited_kib: int  # what even a trivial exec reports: a figure at or below it means "at most this"


@dataclass(eq=False)  # a command is itself: two runs of the same line are still two rows' commands
class Cmd:
    argv: list[str]  # exactly what is executed; argv[0] is an absolute path
    cwd: str
    stdin: str | None = None  # a file fed to stdin
    script: str | None = None  # for `sh -c SCRIPT`: the script, shown instead of argv
    ok_exits: tuple[int, ...] = (0,)
    prepare: Callable[[], None] | None = None  # called before every run
    samples: list[Sample] = field(default_factory=list)
    error: str | None = None

    def median(self) -> float | None:
        return statistics.median(s.seconds for s in self.samples) if self.samples else None

    def cpu_median(self) -> float | None:
        return statistics.median(s.cpu for s in self.samples) if self.samples else None


class Spawner:
    """The small resident process that starts every measured command (spawner.py says why)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-S", "-E", os.path.join(HERE, "spawner.py")],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def run(self, request: dict[str, Any]) -> tuple[float, float, int, int, int]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        data = marshal.dumps(request)
        self.proc.stdin.write(b"%08d" % len(data) + data)
        self.proc.stdin.flush()
        head = self.proc.stdout.read(8)
        if len(head) < 8:
            raise RuntimeError("the spawner process died")
        return marshal.loads(self.proc.stdout.read(int(head)))  # type: ignore[no-any-return]

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait()


def run_once(cmd: Cmd, spawner: Spawner, env: dict[str, str], stderr: str) -> Sample:
    """One run; an exit code the command should not give is an error, never a figure."""
    if cmd.prepare:
        cmd.prepare()
    seconds, cpu, maxrss, code, inherited = spawner.run(
        {"argv": cmd.argv, "cwd": cmd.cwd, "env": env, "stdin": cmd.stdin, "stderr": stderr})
    if code not in cmd.ok_exits:
        with open(stderr, "rb") as fh:
            lines = fh.read().decode(errors="replace").strip().splitlines()
        raise RuntimeError(f"exit {code}: {lines[-1] if lines else '(no message)'}")
    return Sample(seconds, cpu, maxrss, code, inherited)


def measure(group: list[Cmd], spawner: Spawner, env: dict[str, str], stderr: str, repeat: int,
            warmup: int) -> None:
    """Round-robin over the group, the order rotating each round, the warm-up rounds discarded.

    Interleaving puts a command and its floor under the same noise. A group whose first round takes longer
    than SLOW_GROUP_SECONDS is measured three times in all, its first round included: a warm-up matters only
    for commands short enough that a cold page cache shows, and the whole run must stay under ten minutes.
    """
    rounds, done = warmup + repeat, 0
    while done < rounds:
        started = time.perf_counter()
        order = group[done % len(group):] + group[:done % len(group)]
        kept: list[tuple[Cmd, Sample]] = []
        for cmd in order:
            if cmd.error is not None:
                continue
            try:
                kept.append((cmd, run_once(cmd, spawner, env, stderr)))
            except (RuntimeError, OSError) as exc:
                cmd.error = str(exc)
        if done == 0 and warmup and time.perf_counter() - started > SLOW_GROUP_SECONDS:
            warmup, rounds = 0, min(rounds, 3)
        if done >= warmup:
            for cmd, sample in kept:
                cmd.samples.append(sample)
        done += 1
