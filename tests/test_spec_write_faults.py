"""Every write step failing (design §2b, §10): each write command with each of its `write`, `fsync`,
`link`, `rename`, `mkdir`, `chmod` and creating `open` calls failed in turn.

The fault layer below wraps those os functions in this process while one command runs in-process, and
fails only calls on paths inside the test's repository (git's own processes are not touched). It counts
the calls of a clean run first, then fails the 1st, the 2nd, … of each kind: ENOSPC everywhere, EIO for
fsync, and a short write (half the bytes, as a full disk gives) for write. After each:

- the command exits 0 and everything it reports has landed, or exits 12 with a `majordomus: …` message
  and a hint;
- after an exit 12, the same command run again (two seconds later: not the same second, which would let
  the retry find its own record under its final name) exits 0 and everything has landed;
- then `doctor --strict` is clean.

`test_the_fault_layer_sees_every_write_the_process_makes` checks the layer against strace's view of the
real process, so that no write escapes it (a write through a Python file object would).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from freezegun import freeze_time
from helpers import HANDOFF_BODY, MAJORDOMUS, events_named, ledger_events, records_in, run_here, state_dir

from majordomus.store.fault import OPS, Faults

# ---------------------------------------------------------------- the write commands


def _start(repo: Path, *more: str) -> None:
    for task in ("t1", *more):
        assert run_here("task", "start", task, cwd=repo).returncode == 0


def _task(repo: Path, task: str = "t1") -> dict[str, Any]:
    """The task record as stored (read directly: the walk reads it a few times per case)."""
    import yaml

    return dict(yaml.load((state_dir(repo) / "tasks" / f"{task}.yaml").read_text(), Loader=yaml.CSafeLoader))


def _active_here(repo: Path) -> str | None:
    index = state_dir(repo) / "active.json"
    found = json.loads(index.read_text()) if index.exists() else {}
    return next(iter(found.values()), None)


def _logged_once(repo: Path, event: str, path: str) -> None:
    named = [e for e in events_named(repo, event) if e.get("path") == path]
    assert len(named) == 1, (event, path, named)


def _setup_checkpoint(repo: Path) -> None:
    _start(repo)
    assert run_here("checkpoint", cwd=repo, input="before\n").returncode == 0


def _landed_checkpoint(repo: Path) -> None:
    task = _task(repo)
    assert (state_dir(repo) / task["checkpoint"]).read_bytes().endswith(b"---\nthe note\n")
    _logged_once(repo, "task.checkpoint", task["checkpoint"])
    assert "the note" in run_here("checkpoint", "--show", cwd=repo).stdout.decode()
    assert "the note" in run_here("brief", cwd=repo).stdout.decode()


def _landed_handoff(repo: Path) -> None:
    task = _task(repo)
    assert task["status"] == "handed-off" and _active_here(repo) is None
    _logged_once(repo, "task.handoff", task["handoff"])
    assert "Finish normalise()" in run_here("handoff", "--show", "t1", cwd=repo).stdout.decode()


def _setup_pinned(repo: Path) -> None:
    _start(repo)
    assert run_here("context", "pin", "decision", "--", "Keep it.", cwd=repo).returncode == 0


def _decisions(repo: Path) -> list[dict[str, Any]]:
    doc = json.loads((state_dir(repo) / "context" / "t1" / "continuity.json").read_text())
    return list(doc["decisions"])


def _pins(repo: Path) -> list[str]:
    return [p["text"] for p in _decisions(repo)]


def _landed_pin(repo: Path) -> None:
    # one pin (a retry completes the first, never adds a second), logged once
    [pinned] = [p for p in _decisions(repo) if p["text"] == "Synced."]
    assert [e["pin"] for e in events_named(repo, "context.pin")] == [pinned["id"]]
    assert "Synced." in (state_dir(repo) / "context" / "t1" / "continuity.md").read_text()


def _landed_unpin(repo: Path) -> None:
    assert _pins(repo) == []
    [pinned] = events_named(repo, "context.pin")
    assert [e["pin"] for e in events_named(repo, "context.unpin")] == [pinned["pin"]]
    assert "Keep it." not in (state_dir(repo) / "context" / "t1" / "continuity.md").read_text()


def _paused_once(repo: Path, task: str, pauses: int) -> None:
    """The task the command replaced here: paused, its claim ended, and its pauses each logged once."""
    replaced = _task(repo, task)
    assert replaced["status"] == "paused", replaced["status"]
    assert not [c for c in replaced.get("claims", []) if c.get("ended_at") is None], replaced["claims"]
    assert [e["task"] for e in events_named(repo, "task.pause")] == [task] * pauses


def _landed_start(repo: Path) -> None:
    assert _task(repo, "t2")["status"] == "active" and _active_here(repo) == "t2"
    assert len(events_named(repo, "task.start")) == 2  # t1's and t2's, once each
    _paused_once(repo, "t1", 1)
    assert json.loads(run_here("task", "show", "--json", cwd=repo).stdout)["id"] == "t2"  # what checkpoint uses


def _landed_resume(repo: Path) -> None:
    assert _task(repo, "t1")["status"] == "active" and _active_here(repo) == "t1"
    assert [e["task"] for e in events_named(repo, "task.resume")] == ["t1"]
    # the setup's `task start t2` paused t1 once; this resume pauses t2 once
    assert [e["task"] for e in events_named(repo, "task.pause")] == ["t1", "t2"]
    replaced = _task(repo, "t2")
    assert replaced["status"] == "paused"
    assert not [c for c in replaced.get("claims", []) if c.get("ended_at") is None], replaced["claims"]


def _setup_takeover(repo: Path) -> None:
    """t1 active here, t2 active in another worktree of the same repository: `task resume t2 --force` here
    takes it over."""
    from helpers import git

    _start(repo)
    git(repo, "worktree", "add", "-q", "-b", "other", str(repo.parent / "other"))
    assert run_here("task", "start", "t2", cwd=repo.parent / "other").returncode == 0


def _landed_takeover(repo: Path) -> None:
    taken = _task(repo, "t2")
    assert taken["status"] == "active" and (taken["worktree"], taken["branch"]) == (str(repo), "main")
    index = json.loads((state_dir(repo) / "active.json").read_text())
    assert sorted(index.values()) == ["t2"], index  # here only: the worktree it was taken from lost it
    [resumed] = events_named(repo, "task.resume")
    assert resumed["task"] == "t2" and resumed.get("takeover") is True, resumed
    _paused_once(repo, "t1", 1)
    there = run_here("checkpoint", cwd=repo.parent / "other", input="from where it was taken\n")
    assert there.returncode == 11, there.stderr  # never a record of t2 from the worktree that lost it


def _landed_release(repo: Path) -> None:
    assert _task(repo)["status"] == "paused" and _active_here(repo) is None
    assert len(events_named(repo, "task.release")) == 1


def _landed_done(repo: Path) -> None:
    assert _task(repo)["status"] == "done" and _active_here(repo) is None
    assert len(events_named(repo, "task.done")) == 1


def _landed_run(repo: Path) -> None:
    [pointer] = _task(repo)["runs"]
    _logged_once(repo, "task.run", pointer)


def _setup_pull(repo: Path) -> None:
    """A remote that another clone (B) pushed records to: a task with a checkpoint and a handoff, and a
    second task. This clone has a task of its own and pulls."""
    from helpers import git

    remote, other = repo.parent / "remote.git", repo.parent / "B"
    git(repo.parent, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "HEAD")
    git(repo.parent, "clone", "-q", str(remote), str(other))
    assert run_here("task", "start", "b", cwd=other).returncode == 0
    assert run_here("checkpoint", cwd=other, input="B's note\n").returncode == 0
    assert run_here("handoff", cwd=other, input=HANDOFF_BODY).returncode == 0
    assert run_here("task", "start", "b2", cwd=other).returncode == 0
    assert run_here("sync", "push", "origin", "--checkpoints", cwd=other).returncode == 0
    _start(repo)


def _landed_pull(repo: Path) -> None:
    other = state_dir(repo.parent / "B")
    for directory in ("checkpoints", "handoffs"):
        for record in sorted((other / directory).iterdir()):
            path = f"{directory}/{record.name}"
            assert (state_dir(repo) / path).read_bytes() == record.read_bytes(), path
            _logged_once(repo, "sync.import", path)
    for task in ("b", "b2"):
        assert _task(repo, task)["id"] == task
        _logged_once(repo, "sync.import", f"tasks/{task}.yaml")
    assert "Finish normalise()" in run_here("handoff", "--show", "b", cwd=repo).stdout.decode()


def _landed_init(repo: Path) -> None:
    from majordomus import scaffold

    for rel, data in scaffold._template_files():
        assert (repo / rel).read_bytes() == data, rel


# name: (setup, argv, stdin, what must have landed)
COMMANDS: dict[str, tuple[Callable[[Path], None], tuple[str, ...], str, Callable[[Path], None]]] = {
    "checkpoint": (_setup_checkpoint, ("checkpoint",), "the note\n", _landed_checkpoint),
    "handoff": (_setup_checkpoint, ("handoff",), HANDOFF_BODY, _landed_handoff),
    "context pin": (_start, ("context", "pin", "decision", "--", "Synced."), "", _landed_pin),
    "context unpin": (_setup_pinned, ("context", "unpin", "PIN"), "", _landed_unpin),
    "task start": (_start, ("task", "start", "t2"), "", _landed_start),
    "task resume": (lambda repo: _start(repo, "t2"), ("task", "resume", "t1"), "", _landed_resume),
    "task resume --force": (_setup_takeover, ("task", "resume", "t2", "--force"), "", _landed_takeover),
    "task release": (_start, ("task", "release"), "", _landed_release),
    "task done": (_start, ("task", "done"), "", _landed_done),
    "run": (_start, ("run", "--", "true"), "", _landed_run),
    "init": (lambda repo: None, ("init",), "", _landed_init),
    "sync pull": (_setup_pull, ("sync", "pull", "origin"), "", _landed_pull),
}
TOUCHES_GIT = {"sync pull"}  # it moves refs too: each case starts from the refs of the setup


def _argv(repo: Path, argv: tuple[str, ...]) -> tuple[str, ...]:
    if "PIN" not in argv:
        return argv
    doc = json.loads((state_dir(repo) / "context" / "t1" / "continuity.json").read_text())
    return tuple(doc["decisions"][0]["id"] if a == "PIN" else a for a in argv)


def _cases(counts: dict[str, int]) -> Iterator[tuple[str, int, str]]:
    """fsync fails as a disk fails it (EIO); the others as a full disk does (ENOSPC), and each write once
    more as a short write."""
    for op in OPS:
        for nth in range(1, counts[op] + 1):
            yield op, nth, "EIO" if op == "fsync" else "ENOSPC"
            if op == "write":
                yield op, nth, "short"


def _restore(pristine: Path, repo: Path, refs: Path | None = None) -> None:
    """Put `.ai` back as it was before the command (and, for a command that moves refs, `.git`'s refs:
    no other command writes anywhere else)."""
    shutil.rmtree(repo / ".ai", ignore_errors=True)
    if any(pristine.iterdir()):
        shutil.copytree(pristine, repo / ".ai", symlinks=True)
    if refs is not None:
        shutil.rmtree(repo / ".git" / "refs")
        shutil.copytree(refs / "refs", repo / ".git" / "refs", symlinks=True)
        (repo / ".git" / "packed-refs").unlink(missing_ok=True)
        if (refs / "packed-refs").exists():
            shutil.copy2(refs / "packed-refs", repo / ".git" / "packed-refs")


def _holds(check: Callable[[Path], None], repo: Path) -> bool:
    try:
        check(repo)
    except (AssertionError, KeyError, OSError, ValueError):
        return False
    return True


WALKED: dict[str, int] = {}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_write_step_failing_in_turn(repo: Path, tmp_path: Path, name: str) -> None:
    setup, argv, stdin, landed = COMMANDS[name]
    # One frozen clock for the whole walk, moved rather than entered again: each entry of freeze_time scans
    # every loaded module (about 9 ms), and the walk would enter it twice a case.
    with freeze_time("2026-12-01T09:00:00Z") as clock:
        setup(repo)
        pristine = tmp_path / "pristine"
        shutil.copytree(repo / ".ai", pristine, symlinks=True) if (repo / ".ai").exists() else pristine.mkdir()
        refs = tmp_path / "pristine-refs" if name in TOUCHES_GIT else None
        if refs is not None:
            shutil.copytree(repo / ".git" / "refs", refs / "refs", symlinks=True)
            if (repo / ".git" / "packed-refs").exists():
                shutil.copy2(repo / ".git" / "packed-refs", refs / "packed-refs")
        args = _argv(repo, argv)

        clock.move_to("2026-12-01T09:01:00Z")
        with Faults(repo).active() as counting:
            clean = run_here(*args, cwd=repo, input=stdin)
        assert clean.returncode == 0, clean.stderr
        landed(repo)
        assert sum(counting.counts.values()) > 0

        problems = []
        walked = 0
        for op, nth, how in _cases(counting.counts):
            _restore(pristine, repo, refs)
            clock.move_to("2026-12-01T09:01:00Z")
            with Faults(repo, op, nth, how).active() as faults:
                failed = run_here(*args, cwd=repo, input=stdin)
            walked += 1
            case = f"{name}: {how} at {op} #{nth}: exit {failed.returncode}: {failed.stderr.decode()[:300]!r}"
            assert faults.fired, f"{case}: the layer never reached that call: the walk would prove nothing"
            clock.move_to("2026-12-01T09:01:02Z")
            try:
                if failed.returncode == 0:  # it coped (a short write it finished): all of it landed
                    landed(repo)
                else:
                    assert failed.returncode == 12, "not exit 12"
                    err = failed.stderr.decode()
                    assert err.startswith("majordomus: ") and "\nhint: " in err, "no clear message"
                    assert err.count("run the same command again") <= 1, "the hint says it twice"
                    again = run_here(*args, cwd=repo, input=stdin)
                    if again.returncode != 0:
                        # Only a change that had landed whole (its last directory fsync reported the error)
                        # leaves the retry nothing to do: then it refuses, writing nothing (so what it left is
                        # what the failure left: asked only here, it costs the walk nothing elsewhere), and the
                        # failure's message said that it had landed, never to run it again (design §2b).
                        assert again.returncode in (10, 11) and _holds(landed, repo), \
                            f"the retry exits {again.returncode}: {again.stderr.decode()[:300]}"
                        assert "landed" in err and "run the same command again" not in err, \
                            f"the retry refuses, but the message asked for it: {err[:300]}"
                    landed(repo)
                doctor = run_here("doctor", "--strict", "--json", cwd=repo)
                findings = [(f["code"], f.get("path")) for f in json.loads(doctor.stdout)["findings"]
                            if f["level"] != "ok"]
                assert doctor.returncode == 0 and not findings, f"doctor --strict after the retry: {findings}"
            except AssertionError as exc:
                problems.append(f"{case}\n    -> {exc}")
    WALKED[name] = walked
    print(f"{name}: {walked} cases over {counting.counts}")
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------- the layer against the real process

STRACED = {"write": "write", "fsync": "fsync", "link": "link", "linkat": "link", "rename": "rename",
           "renameat": "rename", "renameat2": "rename", "mkdir": "mkdir", "mkdirat": "mkdir", "chmod": "chmod",
           "fchmod": "chmod", "fchmodat": "chmod", "openat": "open"}


def _needs_strace() -> None:
    if shutil.which("strace") is None:
        if os.environ.get("CI"):
            pytest.fail("strace is missing (apt-get install strace)")
        pytest.skip("needs strace (apt-get install strace)")


def _traced_counts(trace: str, root: Path) -> dict[str, int]:
    """Per kind, the calls of the real process that change files under `root` (its own calls only: git's
    processes are not followed)."""
    import re

    counts = dict.fromkeys(OPS, 0)
    for line in trace.splitlines():
        match = re.match(r"^(\w+)\((.*)\) += (-?\d+)", line)
        if match is None or match.group(1) not in STRACED:
            continue
        name, args = match.group(1), match.group(2)
        if name == "openat" and "O_CREAT" not in args:
            continue
        # -y shows a descriptor's path as fd<path>; a path argument is quoted. write and fsync name their
        # descriptor first; link, rename, mkdir and openat their target last.
        paths = re.findall(r'<([^>]*)>|"([^"]*)"', args)
        targets = [a or b for a, b in paths]
        target = targets[0] if name in ("write", "fsync") and targets else (targets[-1] if targets else "")
        if target.startswith(str(root) + os.sep):
            counts[STRACED[name]] += 1
    return counts


@pytest.mark.parametrize("name", ["checkpoint", "handoff", "task start", "init"])
def test_the_fault_layer_sees_every_write_the_process_makes(repo: Path, tmp_path: Path, name: str) -> None:
    """strace's count of the real console script's calls equals the in-process layer's: no write of these
    commands goes around the os functions the layer wraps (a Python file object's write would)."""
    _needs_strace()
    from helpers import MAJORDOMUS

    setup, argv, stdin, _landed = COMMANDS[name]
    setup(repo)
    pristine = tmp_path / "pristine"
    shutil.copytree(repo, pristine, symlinks=True)
    with Faults(repo).active() as counting:
        assert run_here(*argv, cwd=repo, input=stdin).returncode == 0
    shutil.rmtree(repo)
    shutil.copytree(pristine, repo, symlinks=True)
    out = tmp_path / "trace"
    done = subprocess.run(["strace", "-y", "-qq", "-s", "0", "-o", str(out), "-e",
                           "trace=write,fsync,link,linkat,rename,renameat,renameat2,mkdir,mkdirat,chmod,fchmod,fchmodat,openat",
                           str(MAJORDOMUS), *argv], cwd=repo, input=stdin.encode(), capture_output=True, check=False)
    assert done.returncode == 0, done.stderr
    assert _traced_counts(out.read_text(), repo) == counting.counts


def _counted_checkpoint(repo: Path) -> tuple[Path, Faults]:
    """A task with one checkpoint, kept as `pristine`; and the calls of one more checkpoint, counted."""
    _needs_strace()
    _setup_checkpoint(repo)
    pristine = repo.parent / "pristine"
    shutil.copytree(repo, pristine, symlinks=True)
    with Faults(repo).active() as counting:
        assert run_here("checkpoint", cwd=repo, input="counted\n").returncode == 0
    return pristine, counting


def _traced_checkpoint(repo: Path, pristine: Path, *injections: str) -> subprocess.CompletedProcess[bytes]:
    """`majordomus checkpoint` under strace with `injections`, in `repo` put back as `pristine` first."""
    shutil.rmtree(repo)
    shutil.copytree(pristine, repo, symlinks=True)
    faults = [arg for injection in injections for arg in ("-e", injection)]
    return subprocess.run(["strace", "-qq", "-o", os.devnull, *faults, str(MAJORDOMUS), "checkpoint"], cwd=repo,
                          input=b"the note\n", capture_output=True, check=False)


@pytest.mark.parametrize("syscall", ["fsync", "write", "link", "rename"])
def test_a_real_process_failing_each_call_exits_12_and_its_retry_completes(repo: Path, syscall: str) -> None:
    """The same walk for a checkpoint in the real process, with strace's fault injection (the Nth call of
    SYSCALL fails with EIO or ENOSPC): exit 12 with a message, then the retry lands it and doctor is clean."""
    pristine, counting = _counted_checkpoint(repo)
    error = "EIO" if syscall == "fsync" else "ENOSPC"
    for nth in range(1, counting.counts[syscall] + 1):
        done = _traced_checkpoint(repo, pristine, f"inject={syscall}:error={error}:when={nth}")
        if done.returncode == 0:  # that call was not ours (the process's own output), or it coped
            _landed_checkpoint(repo)
            continue
        err = done.stderr.decode()
        assert done.returncode == 12 and err.startswith("majordomus: ") and "\nhint: " in err, (nth, err)
        again = run_here("checkpoint", cwd=repo, input="the note\n")
        assert again.returncode == 0, again.stderr
        _landed_checkpoint(repo)
        doctor = run_here("doctor", "--strict", cwd=repo)
        assert doctor.returncode == 0, doctor.stdout


@pytest.mark.parametrize("syscall", ["rename", "fsync"])
def test_a_second_fault_in_the_cleanup_never_turns_into_nothing_was_written(repo: Path, syscall: str) -> None:
    """Two faults: the Nth call of SYSCALL fails, and so does every unlink, so that the cleanup after it
    (removing a record nothing names yet) fails too. A message that says nothing was written is then true
    (no record is left under its name); otherwise it says the record is stored, and the retry completes it.
    The temporary files the failed unlinks leave are doctor's warnings, nothing else."""
    pristine, counting = _counted_checkpoint(repo)
    before = set(records_in(pristine))
    error = "EIO" if syscall == "fsync" else "ENOSPC"
    for nth in range(1, counting.counts[syscall] + 1):
        done = _traced_checkpoint(repo, pristine, f"inject={syscall}:error={error}:when={nth}",
                                  "inject=unlink,unlinkat:error=EIO")
        if done.returncode == 0:
            continue
        err = done.stderr.decode()
        assert done.returncode == 12, (nth, err)
        if "nothing was written" in err:
            assert set(records_in(repo)) == before, (nth, err)
        again = run_here("checkpoint", cwd=repo, input="the note\n")
        assert again.returncode == 0, again.stderr
        _landed_checkpoint(repo)
        doctor = run_here("doctor", "--strict", "--json", cwd=repo)
        left = {f["code"] for f in json.loads(doctor.stdout)["findings"] if f["level"] != "ok"}
        assert left <= {"store.temp-file"}, (nth, left)


def test_a_ledger_append_that_cannot_be_taken_back_never_says_its_event_was_not_written(repo: Path) -> None:
    """Two faults: the ledger's fsync fails (EIO), and so does taking the appended line back (ftruncate):
    the event is then in the ledger all the same, so the message says it may be, never that it was not;
    the retry finds it and writes no second one."""
    pristine, counting = _counted_checkpoint(repo)
    seen = 0
    for nth in range(1, counting.counts["fsync"] + 1):
        done = _traced_checkpoint(repo, pristine, f"inject=fsync:error=EIO:when={nth}", "inject=ftruncate:error=EIO")
        err = done.stderr.decode()
        if "cannot append to the ledger" not in err:
            continue
        seen += 1
        assert done.returncode == 12 and "not written" not in err and "may" in err, err
        again = run_here("checkpoint", cwd=repo, input="the note\n")
        assert again.returncode == 0, again.stderr
        named = [e["path"] for e in events_named(repo, "task.checkpoint")]
        assert len(named) == len(set(named)), named  # never a second event of one record
        _landed_checkpoint(repo)
    assert seen == 1  # the one fsync of the ledger's append


# ---------------------------------------------------------------- a really full disk

def test_a_really_full_disk_exits_12_and_the_same_checkpoint_lands_once_there_is_room(repo: Path, tmp_path: Path) -> None:
    """The state directory on a small tmpfs, filled up: checkpoints until the disk is full, where one exits 12
    (never 70, never 0 with a torn ledger line); with room again, the same checkpoint lands and doctor is clean."""
    _start(repo)
    state = state_dir(repo)
    saved = tmp_path / "saved-state"
    shutil.copytree(state, saved, symlinks=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k,mode=0700", "tmpfs", str(state)],
                             capture_output=True, check=False)
    if mounted.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail(f"cannot mount a tmpfs: {mounted.stderr.decode()}")
        pytest.skip("needs root to mount a small tmpfs")
    try:
        shutil.copytree(saved, state, symlinks=True, dirs_exist_ok=True)
        os.chmod(state, 0o700)
        filler = state / "filler"
        stat = os.statvfs(state)
        filler.write_bytes(b"\0" * (stat.f_bavail * stat.f_frsize - 48 * 1024))
        body = "".join(f"line {n} of a note that takes some room on the disk\n" for n in range(38))
        for n in range(100):
            result = run_here("checkpoint", cwd=repo, input=f"note {n}\n{body}")
            if result.returncode != 0:
                break
        else:
            pytest.fail("the disk never filled up")
        err = result.stderr.decode()
        assert result.returncode == 12 and err.startswith("majordomus: ") and "\nhint: " in err, err
        assert ledger_events(repo)  # strict: every line of the ledger is whole JSON
        filler.unlink()
        again = run_here("checkpoint", cwd=repo, input=f"note {n}\n{body}")
        assert again.returncode == 0, again.stderr
        pointer = _task(repo)["checkpoint"]
        assert (state / pointer).read_text().endswith(f"note {n}\n{body}")
        _logged_once(repo, "task.checkpoint", pointer)
        doctor = run_here("doctor", "--strict", "--json", cwd=repo)
        findings = [(f["code"], f.get("path")) for f in json.loads(doctor.stdout)["findings"] if f["level"] != "ok"]
        assert doctor.returncode == 0 and not findings, findings
    finally:
        subprocess.run(["umount", "-l", str(state)], capture_output=True, check=False)
