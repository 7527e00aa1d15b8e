"""Median wall time of `hook compact`, `hook stop` and `hook session-start` against their floors (design §12, §16).

design §16's floors, each fed the same payload on stdin as its hook: `hook compact` and `hook stop` against a
console script's own floor, `python -c "import re, sys"` (what pip's generated wrapper does before our code
runs); `hook session-start` against the interpreter plus one `git status --porcelain=v2 -z --branch
--untracked-files=all` in the same repository. `python -c pass` is shown for reference. The commands run
interleaved in a scratch repository (removed afterwards) with an active task, a pin and five checkpoints,
so that machine load falls on all of them alike. `benchmarks/run.py` has the same rows with budgets.

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
        script_floor = "import re, sys; sys.stdin.buffer.read()"
        git_floor = ("import subprocess, sys; sys.stdin.buffer.read(); subprocess.run(['git', 'status', "
                     "'--porcelain=v2', '-z', '--branch', '--untracked-files=all'], stdout=subprocess.DEVNULL)")
        pre, stop = PAYLOADS / "claude-pre-compact.json", PAYLOADS / "claude-stop.json"
        start = PAYLOADS / "claude-session-start-compact.json"
        rows = [
            ("python -c pass", [python, "-c", "pass"], None),
            ("python -c 'import re, sys' < claude-pre-compact.json", [python, "-c", script_floor], pre),
            ("majordomus hook compact --phase pre --runtime claude < claude-pre-compact.json",
             [majordomus, "hook", "compact", "--phase", "pre", "--runtime", "claude"], pre),
            ("python -c 'import re, sys' < claude-stop.json", [python, "-c", script_floor], stop),
            ("majordomus hook stop < claude-stop.json", [majordomus, "hook", "stop"], stop),
            ("python + git status < claude-session-start-compact.json", [python, "-c", git_floor], start),
            ("majordomus hook session-start --runtime claude < claude-session-start-compact.json",
             [majordomus, "hook", "session-start", "--runtime", "claude"], start),
        ]
        times: dict[str, list[float]] = {label: [] for label, _, _ in rows}
        for _ in range(runs):
            for label, cmd, payload in rows:
                with open(payload or os.devnull, "rb") as stdin:
                    start = time.perf_counter()
                    subprocess.run(cmd, cwd=repo, env=env, stdin=stdin, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, check=False)
                    times[label].append(time.perf_counter() - start)
        print(f"median of {runs} runs, interleaved")
        for label, _, _ in rows:
            print(f"{statistics.median(times[label]) * 1000:8.1f} ms  (min {min(times[label]) * 1000:6.1f})  {label}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
