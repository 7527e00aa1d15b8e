#!/usr/bin/env python3
"""Many machines, one remote (design §13): how `majordomus sync` scales, side by side in one run.

    .venv/bin/python benchmarks/sync_scale.py            # N = 5, 20, 50; 100 vs 10,000; 10,000 and 50,000
    .venv/bin/python benchmarks/sync_scale.py --quick    # N = 5, 10; 100 vs 2,000; 2,000 and 5,000

Scratch repositories and a local bare remote in a temporary directory, the installed console script in
real processes, a hermetic git configuration. Rows:

- N simultaneous pushes: N clones with one task and K=5 checkpoints each; every `sync push --checkpoints`
  waits on one file and starts at once. Failures (exit != 0), retries (attempts - 1, summed), wall time
  from the start to the last exit, against N plain `git push`es of distinct refs started the same way.
- Incremental push: a store of R records pushed once; then 10 new checkpoints and a timed
  `sync push --checkpoints`, several times (median), at R = 100 and R = 10,000.
- A fresh clone's first `sync pull` of R records (and the first push that shared them).
- The remote's size after `git gc`.

Records of the large stores are generated with the bytes `checkpoint` writes (identity from
`identity.fields`, `records.render`, `names.record_name`), their timestamps spread over the last year,
without an fsync per file; new records in the timed rounds are written by `checkpoint.write` itself.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from stores import hermetic_env, sh  # noqa: E402 - the directory goes on sys.path first

BIN = os.path.dirname(os.path.abspath(sys.executable))
K = 5


def setup_remote(base: str, env: dict[str, str]) -> tuple[str, str]:
    remote, seed = os.path.join(base, "remote.git"), os.path.join(base, "seed")
    sh(base, env, "git", "init", "-q", "--bare", remote)
    sh(base, env, "git", "init", "-q", "-b", "main", seed)
    with open(os.path.join(seed, "README"), "w") as fh:
        fh.write("scratch\n")
    sh(seed, env, "git", "add", "README")
    sh(seed, env, "git", "commit", "-q", "-m", "scratch")
    sh(seed, env, "git", "remote", "add", "origin", remote)
    sh(seed, env, "git", "push", "-q", "-u", "origin", "main")
    return remote, seed


def in_repo(path: str, env: dict[str, str]):  # type: ignore[no-untyped-def]
    """A Workspace of `path` opened in this process under the hermetic environment."""
    os.environ.update(env)
    from majordomus.workspace import Workspace

    return Workspace.open(path)


def at_once(dirs: list[str], env: dict[str, str], argv: list[str], go: str) -> tuple[float, list[subprocess.CompletedProcess[bytes]]]:
    """Run `argv` in every directory, all released by one file; wall time from release to the last exit."""
    wait = f'while [ ! -e "{go}" ]; do sleep 0.002; done; exec "$@"'
    procs = [subprocess.Popen(["sh", "-c", wait, "sh", *argv], cwd=d, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for d in dirs]
    time.sleep(0.3 + 0.02 * len(dirs))
    start = time.perf_counter()
    open(go, "w").close()
    outs = [p.communicate() for p in procs]
    wall = time.perf_counter() - start
    return wall, [subprocess.CompletedProcess(p.args, p.returncode, o, e) for p, (o, e) in zip(procs, outs)]


def simultaneous(base: str, env: dict[str, str], n: int, exe: str = "majordomus") -> dict[str, object]:
    root = os.path.join(base, f"n{n}-{'this' if exe == 'majordomus' else 'baseline'}")
    os.makedirs(root)
    remote, _seed = setup_remote(root, env)
    clones = []
    from majordomus import checkpoint, lifecycle

    for i in range(n):
        path = os.path.join(root, f"m{i:02d}")
        sh(root, env, "git", "clone", "-q", remote, path)
        ws = in_repo(path, env)
        lifecycle.start(ws, f"t{i:02d}")
        for k in range(K):
            checkpoint.write(ws, io.BytesIO(f"clone {i}, note {k}\n".encode()))
        clones.append(path)
    wall, done = at_once(clones, env, [exe, "sync", "push", "--checkpoints", "--json"],
                         os.path.join(root, "go"))
    failures = sum(1 for d in done if d.returncode != 0)
    retries = sum(_attempts(d) - 1 for d in done)
    held = _held(remote, env)
    # The same clones, a plain `git push` each of a new commit to a ref of its own.
    for i, path in enumerate(clones):
        sh(path, env, "git", "commit", "-q", "--allow-empty", "-m", f"plain {i}")
    plain_wall, pdone = at_once_distinct(clones, env, root)
    return {"n": n, "failures": failures, "retries": retries, "wall": wall, "plain": plain_wall,
            "plain_failures": sum(1 for d in pdone if d.returncode != 0), "held": held}


def _attempts(done: subprocess.CompletedProcess[bytes]) -> int:
    if done.returncode == 0:
        return int(json.loads(done.stdout)["attempts"])
    said = done.stderr.decode(errors="replace")  # a push that gave up says after how many
    digits = [int(w) for w in said.replace("(", " ").split() if w.isdigit()]
    return max(digits) if digits else 1


def _held(remote: str, env: dict[str, str]) -> int:
    """Checkpoints the remote holds, over every majordomus ref (what was delivered)."""
    names: set[str] = set()
    for ref in sh(remote, env, "git", "for-each-ref", "--format=%(refname)", "refs/majordomus").split():
        names.update(p.rsplit("/", 1)[1] for p in sh(remote, env, "git", "ls-tree", "-r", "--name-only", ref).split()
                     if p.startswith("checkpoints/"))
    return len(names)


def at_once_distinct(clones: list[str], env: dict[str, str],
                     root: str) -> tuple[float, list[subprocess.CompletedProcess[bytes]]]:
    """A plain `git push` of a new commit from every clone, each to a ref of its own, all at once."""
    go = os.path.join(root, "go-plain")
    wait = f'while [ ! -e "{go}" ]; do sleep 0.002; done; exec git push -q origin "HEAD:refs/heads/$0"'
    procs = [subprocess.Popen(["sh", "-c", wait, f"b{i:02d}"], cwd=d, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for i, d in enumerate(clones)]
    time.sleep(0.3 + 0.02 * len(clones))
    start = time.perf_counter()
    open(go, "w").close()
    outs = [p.communicate() for p in procs]
    wall = time.perf_counter() - start
    return wall, [subprocess.CompletedProcess(p.args, p.returncode, o, e) for p, (o, e) in zip(procs, outs)]


def fill(path: str, env: dict[str, str], records: int) -> None:
    """`records` checkpoints of one task, timestamps spread over the last year, written without fsync."""
    from majordomus import clock, identity, lifecycle, tasks
    from majordomus.lite import names
    from majordomus.store import records as recs

    ws = in_repo(path, env)
    lifecycle.start(ws, "bench")
    task = tasks.load(ws, "bench")
    now = datetime.now(timezone.utc).replace(microsecond=0)
    fields = identity.fields(ws, "checkpoint", task, clock.iso(now))
    directory = os.path.join(ws.paths.root, "checkpoints")
    os.makedirs(directory, mode=0o700, exist_ok=True)
    span = timedelta(days=365)
    for i in range(records):
        moment = clock.iso(now - span + span * i / records)
        meta = [(k, moment if k == "timestamp" else v) for k, v in fields]
        data = recs.render(meta, f"checkpoint {i}\nnext: {i + 1}")
        name = names.record_name(clock.compact_of(moment), ws.branch, dict(meta)["head"],
                                 hashlib.sha256(data).hexdigest())
        fd = os.open(os.path.join(directory, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, data)
        os.close(fd)


def timed(cwd: str, env: dict[str, str], *argv: str, exe: str = "majordomus") -> float:
    start = time.perf_counter()
    done = subprocess.run([exe, *argv], cwd=cwd, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"majordomus {' '.join(argv)} failed ({done.returncode}): {done.stderr.decode()}")
    return elapsed


def store(base: str, env: dict[str, str], records: int, purpose: str,
          exe: str = "majordomus") -> tuple[str, str, float]:
    root = os.path.join(base, f"{purpose}-{records}")
    os.makedirs(root)
    remote, seed = setup_remote(root, env)
    fill(seed, env, records)
    first = timed(seed, env, "sync", "push", "--checkpoints", exe=exe)
    return remote, seed, first


def incremental(seeds: dict[int, str], env: dict[str, str], rounds: int) -> dict[int, float]:
    """Median time of `sync push --checkpoints` after 10 new checkpoints, the sizes taken in turn each round
    so that noise on a shared machine falls on all of them alike."""
    from majordomus import checkpoint

    times: dict[int, list[float]] = {n: [] for n in seeds}
    for r in range(rounds):
        for records, seed in seeds.items():
            ws = in_repo(seed, env)
            for k in range(10):
                checkpoint.write(ws, io.BytesIO(f"round {r}, new {k}\n".encode()))
            times[records].append(timed(seed, env, "sync", "push", "--checkpoints"))
    return {n: statistics.median(t) for n, t in times.items()}


def first_pull(root: str, remote: str, env: dict[str, str], records: int, exe: str = "majordomus") -> float:
    fresh = os.path.join(root, "fresh")
    sh(root, env, "git", "clone", "-q", "--no-local", remote, fresh)  # objects travel, as over a network
    elapsed = timed(fresh, env, "sync", "pull", exe=exe)
    held = len(os.listdir(os.path.join(fresh, ".ai", "local", "state", "checkpoints")))
    assert held >= records, f"the fresh clone holds {held} checkpoints, expected {records}"
    return elapsed


def gc_size(remote: str, env: dict[str, str]) -> str:
    sh(remote, env, "git", "gc", "-q")
    stats = dict(line.split(": ", 1) for line in sh(remote, env, "git", "count-objects", "-vH").splitlines())
    return stats.get("size-pack", "?")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a look in a minute or two")
    parser.add_argument("--rounds", type=int, default=5, help="incremental pushes timed per size (median)")
    parser.add_argument("--baseline", metavar="EXE", help="another majordomus (an older version) measured "
                        "beside this one: simultaneous pushes and the smaller first pull")
    args = parser.parse_args()
    writers = (5, 10) if args.quick else (5, 20, 50)
    small, large = (100, 2_000) if args.quick else (100, 10_000)
    pulls = (2_000, 5_000) if args.quick else (10_000, 50_000)
    exes = [("this", "majordomus")] + ([("baseline", os.path.abspath(args.baseline))] if args.baseline else [])
    with tempfile.TemporaryDirectory(prefix="majordomus-sync-scale.") as base:
        env = hermetic_env(base, BIN)
        print(f"majordomus sync at scale ({os.cpu_count()} cores; local bare remote; wall times)")
        print()
        print(f"{'simultaneous pushes':<26}{'failures':>9}{'retries':>9}{'delivered':>11}{'wall':>9}"
              f"{'N git push':>12}{'ratio':>8}")
        for n in writers:
            for label, exe in exes:
                row = simultaneous(base, env, n, exe)
                name = f"N = {n}" + ("" if label == "this" else f" ({label})")
                print(f"{name:<26}{row['failures']:>9}{row['retries']:>9}{str(row['held']) + '/' + str(n * K):>11}"
                      f"{row['wall']:>8.2f}s{row['plain']:>11.2f}s{row['wall'] / row['plain']:>7.1f}x", flush=True)
        print()
        seeds = {records: store(base, env, records, "incremental")[1] for records in (small, large)}
        measured = incremental(seeds, env, args.rounds)
        print(f"{'incremental push (10 new)':<30}{'median':>9}")
        for records, seconds in measured.items():
            print(f"{f'at {records:,} records':<30}{seconds:>8.2f}s")
        print(f"{'ratio':<30}{measured[large] / measured[small]:>8.2f}x   (goal <= 1.3x)", flush=True)
        print()
        print(f"{'fresh clone, first pull':<30}{'first push':>11}{'first pull':>12}{'remote after gc':>17}")
        for records in pulls:
            for label, exe in exes if records == pulls[0] else exes[:1]:
                remote, seed, first = store(base, env, records, f"pull-{label}", exe)
                pull = first_pull(os.path.dirname(seed), remote, env, records, exe)
                name = f"{records:,} records" + ("" if label == "this" else f" ({label})")
                print(f"{name:<30}{first:>10.2f}s{pull:>11.2f}s{gc_size(remote, env):>17}", flush=True)


if __name__ == "__main__":
    main()
