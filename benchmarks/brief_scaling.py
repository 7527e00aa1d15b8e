"""How `brief`, `handoff`, `handoff --show` and `context pin|status` scale with the records of a task.

Builds scratch repositories (under a temporary directory, removed afterwards) holding N checkpoint
records of one task since its start, then times the real console script (best of R runs) against the
interpreter's floor. Records are written straight into the store here — the point is to measure the
readers, not to wait for N fsyncs.

    python benchmarks/brief_scaling.py [N ...]      (default: 10 1000 10000)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone

from majordomus import clock, identity, tasks
from majordomus.lite import names
from majordomus.store import records
from majordomus.workspace import Workspace

RUNS = 5
EXE = shutil.which("majordomus") or "majordomus"
HANDOFF = "## State\ns\n## Decisions\nd\n## Open items\no\n## Next actions\nn\n"


def sh(cwd: str, *args: str, data: str | None = None) -> None:
    subprocess.run(args, cwd=cwd, input=data.encode() if data else None, check=True, capture_output=True)


def best(cwd: str, *args: str, data: str | None = None, reset: list[str] | None = None) -> float:
    times = []
    for _ in range(RUNS):
        if reset:
            sh(cwd, *reset)
        start = time.perf_counter()
        subprocess.run(args, cwd=cwd, input=data.encode() if data else None, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return min(times) * 1000


def build(root: str, n: int) -> str:
    repo = os.path.join(root, f"repo-{n}")
    sh(root, "git", "init", "-q", "-b", "main", repo)
    with open(os.path.join(repo, "README"), "w") as fh:
        fh.write("hello\n")
    sh(repo, "git", "add", "README")
    sh(repo, "git", "-c", "user.name=B", "-c", "user.email=b@example.com", "commit", "-qm", "init")
    sh(repo, EXE, "task", "start", "t1", "--objective", "Measure the briefing")
    ws = Workspace.open(repo)
    ws.ensure_state("checkpoints")
    task = tasks.load(ws, "t1")
    base = clock.parse(task.started_at).timestamp()
    fields = identity.fields(ws, "checkpoint", task, task.started_at)
    for i in range(n):
        at = clock.iso(datetime.fromtimestamp(base + 1 + i, timezone.utc))
        meta = [(k, at if k == "timestamp" else v) for k, v in fields]
        data = records.render(meta, f"checkpoint {i}: " + "what holds now. " * 8)
        name = names.record_name(clock.compact(clock.parse(at)), "main", meta[9][1], records.sha256(data))
        with open(os.path.join(ws.paths.checkpoints, name), "wb") as fh:
            fh.write(data)
        os.chmod(os.path.join(ws.paths.checkpoints, name), 0o600)
    return repo


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [10, 1000, 10000]
    root = tempfile.mkdtemp(prefix="majordomus-bench-")
    try:
        # design §16's floor for what reads the work tree: the interpreter plus one `git status` (in a repository)
        floor = best(build(root, 0), sys.executable, "-c", "import subprocess; subprocess.run(['git', 'status', "
                     "'--porcelain=v2', '-z', '--branch', '--untracked-files=all'], stdout=subprocess.DEVNULL)")
        print(f"floor (python + git status): {floor:.0f} ms   best of {RUNS}")
        print(f"{'records':>8} {'brief':>8} {'ctx pin':>8} {'ctx status':>10} {'handoff':>8} {'--show':>8}")
        for n in sizes:
            repo = build(root, n)
            brief = best(repo, EXE, "brief")
            pin = best(repo, EXE, "context", "pin", "decision", "--", "A decision.")
            status = best(repo, EXE, "context", "status")
            handoff = best(repo, EXE, "handoff", data=HANDOFF, reset=[EXE, "task", "resume", "t1"])
            show = best(repo, EXE, "handoff", "--show", "t1")
            print(f"{n:>8} {brief:>6.0f}ms {pin:>6.0f}ms {status:>8.0f}ms {handoff:>6.0f}ms {show:>6.0f}ms")
    finally:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
