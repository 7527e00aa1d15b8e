"""How long `majordomus sync push` and `sync pull` take for N records, with a local bare remote.

    python benchmarks/sync_bench.py [--records 1000] [--repeat 3]

Builds scratch repositories in a temporary directory (nothing outside it is touched): clone A holds one
task with N checkpoint records and N/10 handoffs; B is a fresh clone. Times the real console script:
A's first `sync push --checkpoints`, B's first `sync pull`, both again with nothing new, then with 10 new.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HANDOFF = "## State\nrecord {i}\n\n## Decisions\nnone\n\n## Open items\nnone\n\n## Next actions\nnone\n"


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def majordomus(cwd: Path, *args: str) -> float:
    exe = shutil.which("majordomus", path=str(Path(sys.executable).parent)) or "majordomus"
    start = time.perf_counter()
    done = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"majordomus {' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return elapsed


def fill(repo: Path, records: int) -> None:
    """N checkpoints and N/10 handoffs, written through the library (the CLI would only add start-up time)."""
    from majordomus import checkpoint, clock, identity, lifecycle, tasks
    from majordomus.store import files
    from majordomus.workspace import Workspace

    ws = Workspace.open(str(repo))
    lifecycle.start(ws, "bench")
    for i in range(records):
        checkpoint.write(ws, io.BytesIO(f"checkpoint {i}\nnext: {i + 1}\n".encode()))
    ws.ensure_state("handoffs")
    for i in range(records // 10):
        task = tasks.load(ws, "bench")
        at = clock.iso(clock.now())
        fields = identity.fields(ws, "handoff", task, at) + [("previous_handoff", None), ("checkpoints", [])]
        path, _created, digest = checkpoint.store_record(ws, ws.paths.handoffs, fields, HANDOFF.format(i=i).strip())
        with files.locked(ws.paths.lock):
            tasks.save(ws, task)
        ws.event("task.handoff", "bench", at, path=ws.paths.relative(path), sha256=digest)


def more(repo: Path, count: int) -> None:
    from majordomus import checkpoint
    from majordomus.workspace import Workspace

    ws = Workspace.open(str(repo))
    for i in range(count):
        checkpoint.write(ws, io.BytesIO(f"one more {i}\n".encode()))


def one_round(root: Path, records: int) -> dict[str, float]:
    remote, a = root / "remote.git", root / "a"
    git(root, "init", "-q", "--bare", str(remote))
    git(root, "init", "-q", str(a))
    (a / "README").write_text("bench\n")
    git(a, "add", "README")
    git(a, "commit", "-q", "-m", "initial")
    git(a, "remote", "add", "origin", str(remote))
    git(a, "push", "-q", "-u", "origin", "HEAD")
    fill(a, records)
    git(root, "clone", "-q", str(remote), str(root / "b"))
    times = {
        "push --checkpoints (first)": majordomus(a, "sync", "push", "--checkpoints"),
        "pull (first)": majordomus(root / "b", "sync", "pull"),
        "push --checkpoints (nothing new)": majordomus(a, "sync", "push", "--checkpoints"),
        "pull (nothing new)": majordomus(root / "b", "sync", "pull"),
        "status": majordomus(root / "b", "sync", "status"),
    }
    more(a, 10)
    times["push --checkpoints (10 new)"] = majordomus(a, "sync", "push", "--checkpoints")
    times["pull (10 new)"] = majordomus(root / "b", "sync", "pull")
    records += 10
    imported = len(os.listdir(root / "b" / ".ai" / "local" / "state" / "checkpoints"))
    assert imported == records, f"B holds {imported} checkpoints, expected {records}"
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, list[float]] = {}
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="majordomus-sync-bench.") as tmp:
            env = {"HOME": tmp, "GIT_CONFIG_NOSYSTEM": "1", "MAJORDOMUS_OWNER": "bench@example.com"}
            os.environ.update(env)
            git(Path(tmp), "config", "--global", "user.email", "bench@example.com")
            git(Path(tmp), "config", "--global", "user.name", "Bench")
            for name, seconds in one_round(Path(tmp), args.records).items():
                results.setdefault(name, []).append(seconds)
    total = args.records + args.records // 10
    print(f"sync with {args.records} checkpoints + {args.records // 10} handoffs ({total} records), "
          f"median of {args.repeat} runs, wall time:")
    for name, values in results.items():
        print(f"  {name:<34} {statistics.median(values):7.2f} s   (min {min(values):.2f}, max {max(values):.2f})")


if __name__ == "__main__":
    main()
