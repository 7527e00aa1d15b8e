"""Scratch repositories for the benchmark, and large stores generated through majordomus's own modules.

A store of 100,000 checkpoints cannot be made with 100,000 CLI calls in a ten-minute budget, so the records
and their ledger events are written here in bulk, with the same bytes the CLI would write: front matter from
`identity.fields`, bytes from `records.render`, names from `records.record_name`, ledger lines in
the exact shape of `ledger.append` (hash-chained). Task life cycles (start, pause, done, continuity seed) go
through `tasks.start` / `tasks.done` themselves, under a simulated clock, so that the history is in the past.
What is skipped is only the per-record fsync: the bytes on disk are the same. Large work trees (20,000 and
100,000 files) are committed through one `git fast-import` stream and checked out by git.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from datetime import datetime, timedelta
from typing import Any, Callable

OWNER = "bench@example.com"
TASK = "bench"
RECORDS_PER_TASK = 1000  # a long-lived store holds many tasks; one more task per thousand records
STEP = timedelta(seconds=30)  # simulated time between two records of the history
_DROP = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CEILING_DIRECTORIES", "MAJORDOMUS_DEBUG",
         "MAJORDOMUS_OWNER", "NO_COLOR")


def hermetic_env(base: str, bindir: str) -> dict[str, str]:
    """Fresh HOME and git config, fixed identity; the benchmark never reads the user's own configuration."""
    home = os.path.join(base, "home")
    os.makedirs(home, exist_ok=True)
    gitconfig = os.path.join(home, ".gitconfig")
    with open(gitconfig, "w", encoding="utf-8") as fh:
        fh.write("[user]\n\tname = Bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n")
    env = {k: v for k, v in os.environ.items() if k not in _DROP}
    env.update(HOME=home, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=gitconfig, MAJORDOMUS_OWNER=OWNER,
               PATH=bindir + os.pathsep + env.get("PATH", ""))
    return env


def sh(cwd: str, env: dict[str, str], *argv: str, stdin: bytes | None = None) -> str:
    done = subprocess.run(argv, cwd=cwd, env=env, input=stdin, capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"`{' '.join(argv)}` failed in {cwd} (exit {done.returncode}): "
                           f"{done.stderr.decode(errors='replace').strip()}")
    return done.stdout.decode(errors="replace")


def _write(path: str, data: bytes, mode: int = 0o644) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def _settle() -> None:
    # Files written in the same second as the index are "racily clean": every status would re-hash them.
    # A real work tree is not like that, so let the clock tick past the files before `git add`.
    time.sleep(max(0.0, 1.05 - (time.time() % 1.0)))


def new_repo(path: str, env: dict[str, str], init: bool, files: int = 1, settle: bool = True) -> str:
    """A repository on `main` with `files` committed files (and `.ai/` from `majordomus init`, committed)."""
    os.makedirs(path)
    sh(path, env, "git", "init", "-q", "-b", "main")
    if files <= 1:
        _write(os.path.join(path, "README"), b"scratch repository of the majordomus benchmark\n")
    else:
        import_files(path, env, files)
    if init:
        sh(path, env, "majordomus", "init")
    if settle:
        _settle()
    sh(path, env, "git", "add", "-A")
    sh(path, env, "git", "commit", "-q", "--allow-empty", "-m", "scratch")
    return path


def import_files(path: str, env: dict[str, str], files: int, per_dir: int = 100) -> None:
    """`files` small files under src/, committed in one `git fast-import` stream and checked out.

    Writing 100,000 files and `git add`ing them as 100,000 loose objects takes minutes on a slow disk;
    fast-import writes one pack, and the checkout writes the files (and an index that knows their stat data).
    """
    stamp = int(time.time())
    proc = subprocess.Popen(["git", "fast-import", "--quiet", "--done"], cwd=path, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stdin is not None
    chunk = [b"commit refs/heads/main\ncommitter Bench <bench@example.com> %d +0000\ndata 6\nfiles\n" % stamp]
    for i in range(files):
        data = f"file {i}\n".encode() * 8
        chunk.append(b"M 100644 inline src/d%04d/f%06d.txt\ndata %d\n%s\n" % (i // per_dir, i, len(data), data))
        if len(chunk) >= 4096:
            proc.stdin.write(b"".join(chunk))
            chunk.clear()
    chunk.append(b"done\n")
    proc.stdin.write(b"".join(chunk))
    proc.stdin.close()
    assert proc.stderr is not None
    said = proc.stderr.read().decode(errors="replace").strip()
    if proc.wait() != 0:
        raise RuntimeError(f"`git fast-import` failed in {path}: {said}")
    sh(path, env, "git", "reset", "-q", "--hard")


def dirty(path: str, env: dict[str, str], modified: int = 3, untracked: int = 3) -> None:
    """A few modified and untracked files, as a work tree in the middle of a task has."""
    tracked = sh(path, env, "git", "ls-files").split()
    tracked = [p for p in tracked if p.startswith("src/")] or tracked
    for rel in tracked[:: max(1, len(tracked) // modified)][:modified]:
        with open(os.path.join(path, rel), "ab") as fh:
            fh.write(b"edited\n")
    for i in range(untracked):
        _write(os.path.join(path, f"untracked-{i}.txt"), b"new\n")
    sh(path, env, "git", "status", "--porcelain")  # what the user's own `git status` leaves in the index


def untracked_cache(path: str, env: dict[str, str], settle: bool = True) -> None:
    """`core.untrackedCache=true`, the cache built and warm: what git's docs advise for a large work tree."""
    sh(path, env, "git", "config", "core.untrackedCache", "true")
    if settle:
        _settle()  # directories changed in the index's own second would be re-read by every status
    sh(path, env, "git", "update-index", "--untracked-cache")
    for _ in range(2):  # the first status fills the cache and writes it into the index; the second finds it
        sh(path, env, "git", "status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all")


class LedgerLines:
    """Appends ledger lines with exactly the bytes `ledger.append` writes, without an fsync per line."""

    def __init__(self, path: str) -> None:
        from majordomus.store import ledger

        self._hash: Callable[[bytes], str] = ledger.line_hash
        # json.dumps(record, ensure_ascii=False, separators=(",", ":")), without building an encoder per line
        self._encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
        self.path = path
        self._buffer: list[bytes] = []
        self.reload()

    def reload(self) -> None:
        """Pick the chain up again after a library call appended events of its own."""
        self.seq, self.prev = 0, None
        try:
            with open(self.path, "rb") as fh:
                fh.seek(max(0, os.fstat(fh.fileno()).st_size - 65536))
                lines = [line for line in fh.read().split(b"\n") if line.strip()]
        except FileNotFoundError:
            return
        if lines:
            self.seq, self.prev = json.loads(lines[-1])["seq"], self._hash(lines[-1])

    def add(self, event: str, at: str, fields: dict[str, Any]) -> None:
        record: dict[str, Any] = {"v": 1, "seq": self.seq + 1, "at": at, "event": event}
        record.update(fields)
        record["prev"] = self.prev
        line = self._encode(record).encode("utf-8")
        self._buffer.append(line + b"\n")
        self.seq, self.prev = self.seq + 1, self._hash(line)
        if len(self._buffer) >= 4096:
            self.flush()

    def flush(self) -> None:
        if self._buffer:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            with os.fdopen(fd, "ab") as fh:
                fh.write(b"".join(self._buffer))
            self._buffer.clear()


class SimulatedClock:
    """Makes majordomus's clock (`clock.now()` and `clock.now_iso()`, its only two readings of the time)
    return a moment of the generated history while the library runs."""

    def __init__(self, start: datetime) -> None:
        from majordomus import clock

        self._clock, self._real, self.moment = clock, (clock.now, clock.now_iso), start

    def __enter__(self) -> SimulatedClock:
        self._clock.now = lambda: self.moment
        self._clock.now_iso = lambda: self._clock.iso(self.moment)
        return self

    def __exit__(self, *exc: object) -> None:
        self._clock.now, self._clock.now_iso = self._real


def _body(i: int) -> str:
    return (f"State: step {i} of the generated history holds; the tests of module {i % 97} pass.\n"
            f"Decision: keep the parser streaming (record {i}).\n"
            f"Next: review the edge cases of batch {i // 50}.")


def populate(repo: str, records: int) -> dict[str, Any]:
    """`records` checkpoints over one task per thousand, in the past; the last task (`bench`) stays active.

    Every record has its `task.checkpoint` event, every task points at its latest checkpoint, and the
    ledger's hash chain is whole: `doctor` should find nothing but what it finds in a real store this size.
    """
    from majordomus import clock, lifecycle, taskend, tasks
    from majordomus import identity as identity_mod
    from majordomus.lite import names
    from majordomus.store import files, listing
    from majordomus.store import records as rec
    from majordomus.workspace import Workspace

    ws = Workspace.open(repo)
    ws.ensure_state("tasks", "checkpoints", "cache")
    others = records // RECORDS_PER_TASK
    ids = [f"t{k:04d}" for k in range(others)] + [TASK]
    shares = [records // len(ids)] * len(ids)
    shares[-1] += records - sum(shares)
    # The history ends a minute ago: the active task's last checkpoint is fresh, as right after a commit.
    sim = SimulatedClock(clock.now() - STEP * (records + len(ids)) - timedelta(minutes=1))
    lines = LedgerLines(ws.paths.ledger)
    directory = ws.paths.checkpoints
    identity: list[tuple[str, Any]] | None = None
    branch, head, worktree = ws.branch, str(ws.repo.handle.head.target), ws.worktree
    made = 0
    with sim:
        for task_id, share in zip(ids, shares):
            lines.flush()
            task = lifecycle.start(ws, task_id, title=f"generated task {task_id}",
                               objective=f"Benchmark history of {task_id}", owner=OWNER)
            lines.reload()
            if identity is None:  # one status of the work tree for the whole history, like one commit's
                identity = identity_mod.fields(ws, "checkpoint", task, clock.iso(sim.moment))
            rel = at = None
            written: list[str] = []
            for _i in range(share):
                sim.moment += STEP
                at = clock.iso(sim.moment)
                fields = [(k, at if k == "timestamp" else task_id if k == "task" else
                           task.profile if k == "profile" else task.owner if k == "owner" else v)
                          for k, v in identity]
                made += 1
                body = _body(made)
                data = rec.render(fields, body)
                digest = rec.sha256(data)
                name = names.record_name(clock.compact(sim.moment), branch, head, digest)
                _write(os.path.join(directory, name), data, 0o600)
                written.append(name)
                rel = ws.paths.relative(os.path.join(directory, name))
                lines.add("task.checkpoint", at, {"task": task_id, "worktree": worktree, "branch": branch,
                                                  "path": rel, "sha256": digest, "lines": body.count("\n") + 1})
            lines.flush()
            if rel is not None and at is not None:
                with files.locked(ws.paths.lock):  # what checkpoint.write does after its last record
                    current = tasks.load(ws, task_id)
                    current.checkpoint, current.checkpoint_at, current.updated_at = rel, at, at
                    tasks.save(ws, current)
                    # the task's index of its checkpoint names, as each checkpoint appends to it
                    files.write_derived(listing.index_path(ws, task_id), "".join(n + "\n" for n in written).encode())
            sim.moment += STEP
            if task_id != TASK:
                taskend.done(ws, task_id)
                lines.reload()
    lines.flush()
    return {"records": records, "tasks": len(ids), "ledger_events": lines.seq}


def big_ledger(repo: str, events: int) -> str:
    """A ledger of `events` hash-chained `task.checkpoint` lines (no record files: replay reads only lines)."""
    from majordomus import clock
    from majordomus.workspace import Workspace

    ws = Workspace.open(repo)
    ws.ensure_state("tasks", "checkpoints", "cache")
    lines = LedgerLines(ws.paths.ledger)
    moment = clock.now() - STEP * (events + 1)
    fields = {"task": "", "worktree": ws.worktree, "branch": ws.branch, "path": "", "sha256": "", "lines": 3}
    for i in range(events):
        moment += STEP
        at = moment.replace(tzinfo=None).isoformat() + "Z"  # clock.iso's bytes, without strftime's cost
        if i == 0:
            assert at == clock.iso(moment), (at, clock.iso(moment))
        digest = f"{i:064x}"
        fields["task"] = f"t{i // RECORDS_PER_TASK:04d}"
        fields["path"] = f"checkpoints/{at.replace('-', '').replace(':', '')}--main--0a1b2c3--{digest[-16:]}.md"
        fields["sha256"] = digest
        lines.add("task.checkpoint", at, fields)
    lines.flush()
    return ws.paths.ledger
