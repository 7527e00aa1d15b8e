"""Build a store of N checkpoint records through the library, then time `majordomus doctor` against
`sha256sum` over the same files (design §16: doctor stays linear, target <= 2x sha256sum).

    python benchmarks/doctor_store.py 10000            # builds in a scratch directory, prints timings
    python benchmarks/doctor_store.py 10000 --keep     # and leaves the repository for you to inspect

Standard library + majordomus only. Records and ledger events are written by the same functions the
commands use (checkpoint.store_record, tasks.event); only fsync is skipped while building, since a
benchmark store does not need to survive a power cut and 3 fsyncs per record would dominate the build.
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def build(repo: str, count: int) -> None:
    from majordomus import checkpoint, clock, identity, lifecycle
    from majordomus.workspace import Workspace

    real_fsync = os.fsync
    os.fsync = lambda fd: None  # type: ignore[assignment]
    try:
        ws = Workspace.open(repo)
        task = lifecycle.start(ws, "bench", objective="benchmark store")
        ws.ensure_state("tasks", "checkpoints", "cache")
        fields = dict(identity.fields(ws, "checkpoint", task, clock.iso(clock.now())))
        start = clock.now().timestamp() - count
        for i in range(count):
            at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start + i))
            fields["timestamp"] = at
            path, _created, digest = checkpoint.store_record(ws, ws.paths.checkpoints, list(fields.items()),
                                                             f"step {i}: what holds now\nnext: step {i + 1}")
            ws.event("task.checkpoint", task.id, at, path=ws.paths.relative(path), sha256=digest, lines=2)
    finally:
        os.fsync = real_fsync  # type: ignore[assignment]


def timed(argv: list[str], cwd: str, runs: int) -> tuple[float, float]:
    """Median wall time and median CPU time (user + sys) of `runs` runs: the machine may be shared, and CPU
    time is what a busy neighbour changes least."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.perf_counter()
        subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        walls.append(time.perf_counter() - began)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def main() -> int:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    keep = "--keep" in sys.argv
    scratch = tempfile.mkdtemp(prefix="majordomus-doctor-bench.")
    repo = os.path.join(scratch, "repo")
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=scratch)
    subprocess.run(["git", "init", "-q", repo], check=True, env=env)
    subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-q", "--allow-empty",
                    "-m", "initial"], cwd=repo, check=True, env=env)
    began = time.perf_counter()
    build(repo, count)
    print(f"built {count} records in {time.perf_counter() - began:.1f}s: {repo}")
    majordomus = shutil.which("majordomus", path=os.path.dirname(sys.executable)) or "majordomus"
    files = os.path.join(repo, ".ai/local/state/checkpoints")
    floor = f"find {files} -type f -print0 | xargs -0 sha256sum > /dev/null; sha256sum {repo}/.ai/local/state/ledger.jsonl > /dev/null"
    runs = 5
    doctor = timed([majordomus, "doctor"], repo, runs)
    base = timed(["sh", "-c", floor], repo, runs)
    print(f"{'':26} {'wall':>8} {'cpu':>8}   (medians of {runs} runs)")
    print(f"{'majordomus doctor':26} {doctor[0]:7.3f}s {doctor[1]:7.3f}s   cd {repo} && majordomus doctor")
    print(f"{'sha256sum, same files':26} {base[0]:7.3f}s {base[1]:7.3f}s   {floor}")
    print(f"{'ratio':26} {doctor[0] / base[0]:7.2f}x {doctor[1] / base[1]:7.2f}x")
    if not keep:
        shutil.rmtree(scratch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
