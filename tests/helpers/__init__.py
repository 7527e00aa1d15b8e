"""What the tests share that is not a fixture: running majordomus, hermetic git, snapshots, the ledger.

A plain module, not a test module and not `conftest.py`: a test imports these (`from helpers import run`)
and `conftest.py` builds its fixtures on them. `helpers.sync` holds what the sync tests share.
Each helper is strict, so that it can never hide what a test is about.
"""

from __future__ import annotations

import hashlib
import os
import pty
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
FIXTURES = ROOT / "fixtures"
BIN = Path(sys.executable).parent
MAJORDOMUS = shutil.which("majordomus", path=str(BIN)) or shutil.which("majordomus")

# The hermetic git configuration. init.templateDir: a new repository gets an empty hooks/ directory and
# nothing else from git's template (no sample hooks), which keeps each test's scratch tree small.
TEMPLATE = ROOT / "tests" / "git-template"
GITCONFIG = ("[user]\n\tname = Test User\n\temail = test@example.com\n"
             f"[init]\n\tdefaultBranch = main\n\ttemplateDir = {TEMPLATE}\n"
             "[protocol \"file\"]\n\tallow = always\n")


# ---------------------------------------------------------------- what a test needs from the machine

# tool -> the Debian package that provides it (what .ci/run installs)
PACKAGES = {"mandoc": "mandoc", "man": "man-db", "groff": "groff-base", "zsh": "zsh", "fish": "fish",
            "strace": "strace", "unshare": "util-linux"}


def under_ci() -> bool:
    """CI=true (as CI runners set it): every collected test must run there."""
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def require(present: bool, what: str) -> None:
    """Go on when `present`; else skip the test on a developer's machine, and fail it under CI, where a
    skip would hide a test that never runs (.ci/run installs what the suite needs)."""
    if present:
        return
    if under_ci():
        pytest.fail(f"{what}, and under CI a test does not skip: .ci/run installs what the suite needs",
                    pytrace=False)
    pytest.skip(what)


def require_tool(name: str) -> str:
    """The path of the command `name`; skip (or, under CI, fail) the test when it is not installed."""
    found = shutil.which(name)
    package = PACKAGES.get(name, name)
    require(found is not None, f"{name} is not installed (apt-get install {package})")
    assert found is not None
    return found


# ---------------------------------------------------------------- git

def git(cwd: Path | str, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return out.stdout.strip()


def commit_file(repo: Path, name: str, content: str, message: str | None = None) -> str:
    path = repo / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", message or f"add {name}")
    return git(repo, "rev-parse", "HEAD")


# ---------------------------------------------------------------- running majordomus

class Result(subprocess.CompletedProcess):  # type: ignore[type-arg]  # (bytes or str, as in subprocess)
    """What one run of majordomus left, in-process or from the console script: one type for both, like
    subprocess's own: `returncode` (also `exit_code`), and `stdout` / `stderr` as text when the run asked
    for text, else as bytes; `stdout_bytes` / `stderr_bytes` are the bytes either way."""

    def __init__(self, args: list[str], code: int, stdout: bytes, stderr: bytes, text: bool) -> None:
        decode = (lambda data: data.decode("utf-8", "replace")) if text else (lambda data: data)
        super().__init__(args, code, decode(stdout), decode(stderr))
        self.stdout_bytes, self.stderr_bytes = stdout, stderr

    @property
    def exit_code(self) -> int:
        return self.returncode

    @property
    def output(self) -> Any:
        return self.stdout

    def __repr__(self) -> str:
        return f"Result({self.returncode}, stdout={self.stdout[:200]!r}, stderr={self.stderr[:200]!r})"


def run(*args: str, cwd: Path | str, input: bytes | str | None = None, env: dict[str, str] | None = None,
        timeout: float = 60, text: bool = False) -> Result:
    """`majordomus ARGS` from the real console script, in a subprocess: for what only a process shows."""
    assert MAJORDOMUS, "the majordomus console script is not installed next to this python"
    data = input.encode() if isinstance(input, str) else input
    full_env = dict(os.environ, **(env or {}))
    done = subprocess.run([MAJORDOMUS, *args], cwd=cwd, input=data, capture_output=True, env=full_env,
                          timeout=timeout, check=False)
    return Result(["majordomus", *args], done.returncode, done.stdout, done.stderr, text)


def run_here(*args: str, cwd: Path | str | None = None, input: bytes | str | None = None,
             env: dict[str, str] | None = None, timeout: float = 60, text: bool = False) -> Result:
    """`run`'s twin for a test whose subject is not the process: `majordomus ARGS` in this process
    (`majordomus.main.run`), with the same working directory (the current one when `cwd` is None), stdin
    and extra environment, and the same Result. A run that outlives `timeout` (a read that blocks on a
    FIFO, say) fails the test instead of hanging the suite: SIGALRM interrupts the blocking call, and
    whatever the error boundary (or a fail-open hook) made of that, the test sees TimeoutError."""
    import signal

    late = TimeoutError(f"majordomus {' '.join(args)} still running after {timeout} s")
    fired: list[bool] = []

    def expired(signum: int, frame: Any) -> None:
        fired.append(True)
        raise late

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    previous = signal.signal(signal.SIGALRM, expired)
    outer, _ = signal.setitimer(signal.ITIMER_REAL, timeout)  # a timer already set (a test runner's) is kept
    began = time.monotonic()
    try:
        os.environ.update(env or {})
        if cwd is not None:
            os.chdir(cwd)
        code, out, err = _in_process(list(args), input)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - began), 0.001))
        os.chdir(saved_cwd)
        _restore_environment(saved_env)
    if fired:
        raise late
    return Result(["majordomus", *args], code, out, err, text)


def _restore_environment(saved: dict[str, str]) -> None:
    """os.environ as it was: only the variables a run added or changed are set again (each is a putenv)."""
    environ = os.environ
    for key in [key for key in environ if key not in saved]:
        del environ[key]
    for key, value in saved.items():
        if environ.get(key) != value:
            environ[key] = value


def invoke_main(args: list[str], input: bytes | str | None = None) -> Result:
    """`run_here(*args, text=True)` in the current directory (the older spelling, kept while tests use it)."""
    return run_here(*args, input=input, text=True)


def _in_process(args: list[str], input: bytes | str | None) -> tuple[int, bytes, bytes]:
    """`majordomus.main.run(args)` with stdin, stdout and stderr swapped for buffers."""
    import io

    from majordomus import main

    data = input.encode() if isinstance(input, str) else (input or b"")
    out, err = io.BytesIO(), io.BytesIO()
    saved = sys.stdin, sys.stdout, sys.stderr
    streams = (io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"),
               io.TextIOWrapper(out, encoding="utf-8", write_through=True),
               io.TextIOWrapper(err, encoding="utf-8", write_through=True))
    sys.stdin, sys.stdout, sys.stderr = streams
    try:
        code = main.run(args)
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
        for stream in streams:
            stream.flush()
            stream.detach()  # keep the BytesIO open when the wrapper goes
    return code, out.getvalue(), err.getvalue()


_IMPORT_PROBE = """
import json, sys
from majordomus import main
code = main.run(sys.argv[1:])
print(json.dumps({"code": code, "heavy": sorted(m for m in ("pygit2", "click", "yaml") if m in sys.modules)}))
"""


def import_probe(cwd: Path | str, *args: str, input: bytes = b"") -> dict[str, Any]:
    """`majordomus ARGS` in a fresh interpreter: its exit code, and which of pygit2, click and yaml it imported
    (design §16: a hot command imports none of them), as {"code": …, "heavy": [...]}."""
    import json

    done = subprocess.run([sys.executable, "-c", _IMPORT_PROBE, *args], cwd=cwd, input=input, capture_output=True,
                          check=False)
    assert done.stdout.strip(), done.stderr
    return json.loads(done.stdout.decode().strip().splitlines()[-1])


# ---------------------------------------------------------------- what a run left

def snapshot(root: Path) -> dict[str, tuple[int, str]]:
    """Every file below root (outside .git), with its mode and digest: to prove nothing was written."""
    out: dict[str, tuple[int, str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            p = os.path.join(dirpath, name)
            if os.path.islink(p):
                out[os.path.relpath(p, root)] = (0, "link:" + os.readlink(p))
                continue
            if not os.path.isfile(p):  # a FIFO or a device: never opened (it could block, or never end)
                out[os.path.relpath(p, root)] = (os.lstat(p).st_mode, "special")
                continue
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = (os.stat(p).st_mode, hashlib.sha256(fh.read()).hexdigest())
        for name in dirnames:
            out[os.path.relpath(os.path.join(dirpath, name), root) + "/"] = (0, "dir")
    return out


def listed_dirs(monkeypatch: Any) -> list[str]:
    """The directories this process lists from now on (`os.listdir`, spied on through `monkeypatch`)."""
    listed: list[str] = []
    real = os.listdir

    def spy(path: Any = ".") -> list[str]:
        listed.append(str(path))
        return real(path)

    monkeypatch.setattr(os, "listdir", spy)
    return listed


def as_written(record: Path) -> Path:
    """A record edited by hand, renamed to the digest of its new content: as if majordomus (an older one, or
    another machine's) had written it so. Returns its new path."""
    data = record.read_bytes()
    stem, _old = record.name[: -len(".md")].rsplit("--", 1)
    renamed = record.with_name(f"{stem}--{hashlib.sha256(data).hexdigest()[:16]}.md")
    record.rename(renamed)
    return renamed


def state_dir(repo: Path) -> Path:
    return repo / ".ai" / "local" / "state"


# The four sections a handoff needs (design §7); tests take it as the `handoff_body` fixture.
HANDOFF_BODY = """## State
The regression test fails; the fix in normalise() is half done.

## Decisions
Normalise at the edge.

## Open items
Does the IdP ever send uppercase hosts?

## Next actions
Finish normalise(), run the suite.
"""


def start_task(cli: Any, task: str = "t1", *options: str, cwd: Path | None = None) -> Result:
    """`majordomus task start TASK OPTIONS…` in-process through the `cli` fixture; it must succeed."""
    result = cli("task", "start", task, *options, cwd=cwd)
    assert result.exit_code == 0, result
    return result


def start_task_at(repo: Path, task: str = "t1", *options: str) -> None:
    """`majordomus task start TASK OPTIONS…` in `repo`, in-process, for a test without the `cli` fixture; it
    must succeed."""
    result = run_here("task", "start", task, *options, cwd=repo)
    assert result.returncode == 0, result.stderr


def ledger_bytes(repo: Path) -> bytes:
    """The ledger's exact bytes (b"" when there is none yet): what a refusal must leave untouched."""
    path = state_dir(repo) / "ledger.jsonl"
    return path.read_bytes() if path.exists() else b""


def ledger_events(repo: Path) -> list[dict[str, Any]]:
    """Every event of the ledger, in order. Strict: a line that is not one JSON object fails the test."""
    import json

    events = []
    for number, line in enumerate(ledger_bytes(repo).splitlines(), 1):
        event = json.loads(line)
        assert isinstance(event, dict), f"ledger line {number} is not an object"
        events.append(event)
    return events


def events_named(repo: Path, name: str) -> list[dict[str, Any]]:
    return [event for event in ledger_events(repo) if event["event"] == name]


def records_in(repo: Path, kind: str = "checkpoints") -> list[str]:
    """The names of the records stored under their final names (no temporary files), sorted."""
    directory = state_dir(repo) / kind
    if not directory.exists():
        return []
    return sorted(name for name in os.listdir(directory) if name.endswith(".md") and not name.startswith("."))


def assert_refused(cli: Any, repo: Path, args: tuple[str, ...] | list[str], code: int, *words: str,
                   input: str | bytes | None = None, cwd: Path | None = None) -> Result:
    """Run a command that the design refuses: its exit code, every word of its message on stderr, the
    `majordomus: … / hint: …` shape of an error, and nothing written anywhere (the whole repository,
    ledger bytes included)."""
    before, ledger_before = snapshot(repo), ledger_bytes(repo)
    result = cli(*args, input=input, cwd=cwd)
    assert result.exit_code == code, result
    for word in words:
        assert word in result.stderr, (word, result.stderr)
    assert result.stderr.startswith("majordomus: "), result.stderr
    assert result.stdout == "", result.stdout
    assert ledger_bytes(repo) == ledger_before
    assert snapshot(repo) == before
    return result


# ---------------------------------------------------------------- the manual pages and --help

MAN_PAGES = sorted((ROOT / "majordomus" / "man").glob("*.1"))


def man_db() -> str | None:
    """man-db's `man` (the one that finds pages from PATH), or None where there is none or another man."""
    man = shutil.which("man")
    if man is None:
        return None
    version = subprocess.run([man, "--version"], capture_output=True, text=True, check=False)
    return man if version.returncode == 0 and version.stdout.startswith("man ") else None


def subcommands(help_text: str) -> list[str]:
    """The subcommands a click group's --help lists under `Commands:`."""
    if "Commands:" not in help_text:
        return []
    block = help_text.split("Commands:", 1)[1]
    return [line.split()[0] for line in block.splitlines() if line.startswith("  ") and line.strip()]


def on_a_terminal(args: list[str], cwd: Path, env: dict[str, str]) -> bytes:
    """`majordomus ARGS` with stdout on a pseudo-terminal; what the terminal received."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([str(MAJORDOMUS), *args], cwd=cwd, stdout=follower, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env=dict(os.environ, **env))
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the last writer closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=30)
    os.close(leader)
    return b"".join(chunks)


def processes_with(mark: str, *, ending: bool = False) -> list[str]:
    """The pids of the processes whose command line holds `mark` (or ends with it): what a test started,
    told by a number no other process uses, to see whether anything of it is left running."""
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                line = f.read().rstrip(b"\0")
        except OSError:
            continue
        if (line.endswith(mark.encode()) if ending else mark.encode() in line):
            found.append(pid)
    return found


def gone(mark: str, seconds: float = 2.0, *, ending: bool = False) -> list[str]:
    """`processes_with(mark)` once they are gone, or what is still running after `seconds` (a process
    killed is not gone at once: the kernel takes a moment to end it)."""
    end = time.monotonic() + seconds
    while (left := processes_with(mark, ending=ending)) and time.monotonic() < end:
        time.sleep(0.02)
    return left


READ = {"x86_64": 0, "aarch64": 63}  # read(2)'s number, as /proc/PID/syscall shows it


def reading_stdin(pid: int, seconds: float = 60.0) -> bool:
    """Wait until process `pid` sits in read(0, …) — it has started and waits for its stdin — and say so;
    False when it ended first or `seconds` passed (a bound against a hang, not a timing assertion). A test
    that signals or changes things "while the command waits for its body" waits for this, not a sleep: on a
    loaded machine the start alone can take longer than any sleep."""
    number = str(READ.get(os.uname().machine, -1))
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            fields = Path(f"/proc/{pid}/syscall").read_text().split()
        except OSError:
            return False  # ended (or no /proc here)
        if len(fields) > 1 and fields[0] == number and int(fields[1], 16) == 0:
            return True
        time.sleep(0.005)
    return False


def git_first_on_path(monkeypatch: pytest.MonkeyPatch, where: Path, script: str, *, then_git: bool = False) -> None:
    """A `git` in `where` that runs `script` (sh) — and then the real git, with `then_git` — put first on
    PATH for this test: a git that is slow, stuck or odd, as a wrapper, a hung mount or a fsmonitor makes it."""
    real = shutil.which("git")
    where.mkdir(parents=True, exist_ok=True)
    (where / "git").write_text(f"#!/bin/sh\n{script}\n" + (f"exec {real} \"$@\"\n" if then_git else ""))
    (where / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{where}{os.pathsep}{os.environ['PATH']}")

