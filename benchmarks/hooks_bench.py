"""Median wall time of `hook compact` and `hook session-start` against their floors (SPEC §12, §16).

`hook compact` runs at every compaction: its floor is the interpreter (`python -c pass`), and it must
parse JSON, so `python -c "import re, json"` is shown too. `hook session-start` opens the repository and
reads the config: its floor is `python -c "import pygit2, yaml"`. The commands run interleaved in a scratch
repository (removed afterwards) with an active task, a pin and five checkpoints, so that machine load
falls on all of them alike.

    python benchmarks/hooks_bench.py [RUNS]      (default 31; uses the majordomus next to this python)
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PAYLOADS = Path(__file__).resolve().parent.parent / "fixtures" / "payloads"


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 31
    bindir = Path(sys.executable).parent
    python, majordomus = sys.executable, str(bindir / "majordomus")
    scratch = tempfile.mkdtemp(prefix="majordomus-hooks-bench-")
    repo = os.path.join(scratch, "repo")
    env = dict(os.environ, HOME=scratch, GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@x",
               GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@x", PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}")

    def sh(*args: str, stdin: bytes | None = None) -> None:
        subprocess.run(args, cwd=repo, env=env, check=True, capture_output=True, input=stdin)

    try:
        os.makedirs(repo)
        sh("git", "init", "-q", "-b", "main", ".")
        Path(repo, "f").write_text("x\n")
        sh("git", "add", "f")
        sh("git", "commit", "-qm", "initial")
        sh(majordomus, "init")
        sh(majordomus, "task", "start", "bench", "--objective", "Measure the hooks")
        sh(majordomus, "context", "pin", "decision", "--", "Measure against the interpreter floor")
        for n in range(5):
            sh(majordomus, "checkpoint", stdin=f"note {n}\n".encode())
        rows = [
            ("python -c pass", [python, "-c", "pass"], None),
            ("python -c 'import re, json'", [python, "-c", "import re, json"], None),
            ("majordomus hook compact --phase pre --runtime claude < claude-pre-compact.json",
             [majordomus, "hook", "compact", "--phase", "pre", "--runtime", "claude"],
             PAYLOADS / "claude-pre-compact.json"),
            ("python -c 'import pygit2, yaml'", [python, "-c", "import pygit2, yaml"], None),
            ("majordomus hook session-start < claude-session-start-compact.json",
             [majordomus, "hook", "session-start"], PAYLOADS / "claude-session-start-compact.json"),
        ]
        times: dict[str, list[float]] = {label: [] for label, _, _ in rows}
        for _ in range(runs):
            for label, cmd, payload in rows:
                with open(payload or os.devnull, "rb") as stdin:
                    start = time.perf_counter()
                    subprocess.run(cmd, cwd=repo, env=env, stdin=stdin, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
                    times[label].append(time.perf_counter() - start)
        print(f"median of {runs} runs, interleaved")
        for label, _, _ in rows:
            print(f"{statistics.median(times[label]) * 1000:8.1f} ms  (min {min(times[label]) * 1000:6.1f})  {label}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
