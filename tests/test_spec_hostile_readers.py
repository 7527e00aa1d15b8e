"""design §2b, "every reader under every hostile shape": the reader matrix.

Every file majordomus reads — each one a full state leaves in the state directory (ledger, active index,
task record, checkpoint record, continuity, journal, every cache, receipts, claims), the committed `.ai/`
(configuration, profile) and the runtime settings files (`.claude/settings.json`, `.codex/hooks.json`,
`.mcp.json`) — is put in turn into each hostile shape (a FIFO, a directory, a link to a file, to a
directory, to `/dev/zero`, an empty file, a byte-order mark followed by invalid UTF-8, JSON nested 100,000
deep, a torn tail of over 100 MiB), and every command that reads files runs on it: no exit 70, no wait over
2 s, the hooks exit 0. In this process (`run_here`): the process is not the subject here, and SIGALRM
turns a read that blocks into a failure instead of a hang. The torn tails are sparse files (no disk
used). What only a process shows — the resident set under a 120 MiB torn ledger tail — is at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import FIXTURES, MAJORDOMUS, invoke_main, run_here, snapshot, state_dir

from majordomus.lite import jsonbound

WAIT = 2.0  # design §2b: no command waits longer on any shape
TORN = 100 << 20  # bytes of torn tail after the last complete line ("100 MiB or more")
DEEP = 100_000
WITHIN_BOUNDS = 10_000  # 20 KB: under every file's size bound, so that only the nesting bound stands in the way
PAYLOAD = (FIXTURES / "payloads" / "claude-session-start-startup.json").read_bytes()
STOP = (FIXTURES / "payloads" / "claude-stop.json").read_bytes()
PRE_COMPACT = (FIXTURES / "payloads" / "claude-pre-compact.json").read_bytes()

SHAPES = ("fifo", "directory", "link-to-file", "link-to-directory", "link-to-dev-zero", "empty",
          "bom-invalid-utf8", "deep-json", "deep-json-within-bounds", "torn-tail")

# Every command that reads state files, readers first; (arguments, stdin). The hooks must exit 0.
COMMANDS: tuple[tuple[tuple[str, ...], bytes], ...] = (
    (("check",), b""),
    (("checkpoint", "--show"), b""),
    (("checkpoint", "--list"), b""),
    (("brief",), b""),
    (("doctor",), b""),
    (("ledger",), b""),
    (("ledger", "--verify"), b""),
    (("context", "status"), b""),
    (("context", "show"), b""),
    (("context", "validate"), b""),
    (("task", "show", "t1"), b""),
    (("task", "list"), b""),
    (("watch", "--once"), b""),
    (("sync", "status", "--no-fetch"), b""),
    (("hook", "session-start"), PAYLOAD),
    (("hook", "stop"), STOP),
    (("hook", "compact", "--phase", "pre", "--runtime", "claude"), PRE_COMPACT),
    (("checkpoint",), b"a note written on a hostile state\n"),
    (("hooks", "install", "--runtime", "claude", "--mcp"), b""),
    (("hooks", "install", "--runtime", "codex"), b""),
    (("hooks", "uninstall", "--runtime", "claude"), b""),  # removes the .mcp.json entry too
    (("hooks", "uninstall", "--runtime", "codex"), b""),
)

# What the walk puts in place besides the state a full session leaves (their names are all in the registry).
TREES = (".ai", ".claude", ".codex", ".mcp.json")

# Which command reads which file is observed, not listed by hand: the audit events of every open and every
# directory listing made while a command runs on the whole state. A file a command starts to read joins
# its row of the matrix by itself.
_SEEN: list[set[str]] = []


def _audit(event: str, args: tuple[object, ...]) -> None:
    if _SEEN and event in ("open", "os.listdir", "os.scandir") and args and isinstance(args[0], (str, bytes)):
        _SEEN[-1].add(os.path.abspath(os.fsdecode(args[0])))


sys.addaudithook(_audit)


def mj(repo: Path, *args: str, input: bytes = b"") -> None:
    result = invoke_main(["-C", str(repo), *args], input=input)
    assert result.exit_code == 0, (args, result)


def full_state(repo: Path) -> None:
    """Every file a working session leaves: configuration, profile, task, checkpoint, pin, journal, the
    caches, installed hooks (settings files and their receipts)."""
    mj(repo, "init")
    (repo / ".ai" / "profiles" / "default.md").write_text("# Profile: default\nYou are careful.\n")
    mj(repo, "task", "start", "t1", "--objective", "Walk every reader")
    mj(repo, "checkpoint", input=b"a first note\n")
    mj(repo, "context", "pin", "decision", "keep the parser honest")
    mj(repo, "hook", "compact", "--phase", "pre", "--runtime", "claude", input=PRE_COMPACT)
    mj(repo, "hooks", "install", "--runtime", "claude", "--mcp")
    mj(repo, "hooks", "install", "--runtime", "codex")
    mj(repo, "hook", "session-start", input=PAYLOAD)
    mj(repo, "checkpoint", input=b"a second note\n")


def targets(repo: Path) -> list[str]:
    """Every regular file the state holds, and the committed and runtime files, relative to the repository."""
    found = []
    for tree in TREES:
        top = repo / tree
        paths = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        found += [str(p.relative_to(repo)) for p in paths if p.name not in (".gitignore", ".lock")]
    return found


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def shape(path: Path, kind: str, original: bytes, outside: Path) -> None:
    """Put `path` into the hostile shape `kind` (whatever is there now goes)."""
    _remove(path)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
        (path / "inside").write_bytes(original)
    elif kind == "link-to-file":
        (outside / "file").write_bytes(original)
        path.symlink_to(outside / "file")
    elif kind == "link-to-directory":
        (outside / "dir").mkdir(exist_ok=True)
        path.symlink_to(outside / "dir")
    elif kind == "link-to-dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "bom-invalid-utf8":
        path.write_bytes(b"\xef\xbb\xbf\xff\xfe{\"v\": \xc3\x28}\n")
    elif kind.startswith("deep-json"):
        levels = DEEP if kind == "deep-json" else WITHIN_BOUNDS
        deep = b"[" * levels + b"]" * levels
        # A line-per-record file keeps its good lines and gains a deep one; the rest become that document.
        path.write_bytes(original + deep + b"\n" if path.suffix == ".jsonl" else deep)
    elif kind == "torn-tail":
        path.write_bytes(original + b'{"v":1,"seq":')
        os.truncate(path, len(original) + TORN)  # sparse: a final line of 100 MiB that never ended
    else:  # pragma: no cover - a typo in SHAPES
        raise AssertionError(kind)


def restore(repo: Path, saved: Path) -> None:
    for tree in TREES:
        _remove(repo / tree)
        if (saved / tree).is_dir():
            shutil.copytree(saved / tree, repo / tree, symlinks=True)
        elif (saved / tree).exists():
            shutil.copy2(saved / tree, repo / tree)


def save(repo: Path, saved: Path) -> None:
    for tree in TREES:
        if (repo / tree).is_dir():
            shutil.copytree(repo / tree, saved / tree, symlinks=True)
        elif (repo / tree).exists():
            shutil.copy2(repo / tree, saved / tree)


def readers(repo: Path, saved: Path) -> dict[tuple[str, ...], set[str]]:
    """What each command opens or lists (absolute paths) when it runs on the whole state."""
    seen = {}
    for args, stdin in COMMANDS:
        restore(repo, saved)
        _SEEN.append(set())
        try:
            assert run_here(*args, cwd=repo, input=stdin).returncode in (0, 1), args
        finally:
            seen[args] = _SEEN.pop()
    restore(repo, saved)
    return seen


def reads(seen: set[str], path: Path) -> bool:
    return str(path) in seen or str(path.parent) in seen


def attempt(repo: Path, rel: str, kind: str, original: bytes, outside: Path, args: tuple[str, ...],
            stdin: bytes) -> tuple[subprocess.CompletedProcess[bytes] | None, float]:
    """One case: (its result, or None when it was still running after WAIT; how long it took). A case over
    WAIT runs once more before it counts: a read that waits waits again, while a machine busy with other
    work (the suite runs beside others) seldom slows the same case twice."""
    result: subprocess.CompletedProcess[bytes] | None = None
    took = 0.0
    for _ in range(2):
        shape(repo / rel, kind, original, outside)
        began = time.monotonic()
        try:
            result = run_here(*args, cwd=repo, input=stdin, timeout=WAIT)
        except TimeoutError:
            result = None
        took = time.monotonic() - began
        if result is not None and took <= WAIT:
            break
    return result, took


def walk(repo: Path, tmp_path: Path, rel: str, seen: dict[tuple[str, ...], set[str]]) -> tuple[int, list[str]]:
    """Every shape of `rel` × every command that reads it (and `doctor`); (cases walked, what went wrong)."""
    saved = tmp_path / "saved"
    original = (saved / rel).read_bytes()
    commands = [(args, stdin) for args, stdin in COMMANDS if args == ("doctor",) or reads(seen[args], repo / rel)]
    cases, wrong = 0, []
    for kind in SHAPES:
        restore(repo, saved)
        outside = tmp_path / "outside" / kind
        outside.mkdir(parents=True, exist_ok=True)
        for args, stdin in commands:
            cases += 1
            case = f"{rel} as {kind}: `{' '.join(args)}`"
            result, took = attempt(repo, rel, kind, original, outside, args, stdin)
            if result is None:
                wrong.append(f"{case} still running after {WAIT} s, twice")
                continue
            said = result.stderr.decode("utf-8", "replace").strip().splitlines()
            if result.returncode == 70:
                wrong.append(f"{case} exit 70: {said[:1]}")
            elif args[0] == "hook" and result.returncode != 0:
                wrong.append(f"{case} (a hook) exit {result.returncode}")
            elif result.returncode == 12 and not any(Path(rel).name in line or Path(rel).parent.name in line
                                                       for line in said):
                wrong.append(f"{case} exit 12 without naming it: {said[:1]}")
            if took > WAIT:
                wrong.append(f"{case} took {took:.1f} s, twice")
        _remove(repo / rel)
    restore(repo, saved)
    return cases, wrong


@pytest.fixture
def walked(repo: Path, remote: Path) -> Path:
    full_state(repo)
    mj(repo, "sync", "push")  # a remote to compare with, and the files a push leaves (machine id, caches)
    return repo


def test_the_matrix_names_every_file_the_state_holds(walked):
    """The walk covers what a working session leaves, so that a new kind of file joins it by itself."""
    found = set(targets(walked))
    state = ".ai/local/state/"
    for rel in ("ledger.jsonl", "active.json", "tasks/t1.yaml", "context/t1/continuity.json",
                "context/t1/compact-events.jsonl", "cache/config.json", "cache/root-commit", "cache/conversations.json",
                "cache/checkpoints-t1.idx", "cache/sync-months.json", "claims.json", "machine-id"):
        assert state + rel in found, rel
    assert {".ai/config.yaml", ".ai/profiles/default.md", ".claude/settings.json", ".codex/hooks.json",
            ".mcp.json"} <= found
    assert any(p.startswith(state + "checkpoints/") for p in found)
    assert sum(p.startswith(state + "hooks/") for p in found) == 3  # the receipts


def test_every_reader_under_every_hostile_shape_and_every_field_under_every_type(walked, tmp_path):
    """The whole matrix, each failure named — every file in every shape, then every JSON field in every type
    (`type_walk`) —; one test so that its cost is one state and one audit of who reads what."""
    save(walked, tmp_path / "saved")
    seen = readers(walked, tmp_path / "saved")
    cases, wrong = 0, []
    for rel in targets(walked):
        walked_here, found = walk(walked, tmp_path, rel, seen)
        cases += walked_here
        wrong += found
    typed, mistyped = type_walk(walked, tmp_path, seen)
    print(f"reader matrix: {cases} cases walked, {len(wrong)} wrong; type walk: {typed} cases, {len(mistyped)} wrong")
    assert cases >= 20 * len(SHAPES) * 5 and typed > 500
    wrong += mistyped
    assert not wrong, "\n".join(wrong[:60]) + (f"\n… and {len(wrong) - 60} more" if len(wrong) > 60 else "")


def test_the_ignore_file_git_reads_under_every_hostile_shape(walked, tmp_path):
    """`.ai/local/.gitignore` is read by git, not by majordomus (so the audit above never sees it): git
    status and check-ignore read it as the state directory's ignore rules, and wait forever on a FIFO.
    Every shape of it × every command: the same rules as the matrix (no wait over 2 s, no exit 70, the
    hooks exit 0, an exit 12 names it); a writer refuses it before writing anything, and doctor says so."""
    save(walked, tmp_path / "saved")
    rel = ".ai/local/.gitignore"
    every = {args: {str(walked / rel)} for args, _stdin in COMMANDS}
    cases, wrong = walk(walked, tmp_path, rel, every)
    print(f"ignore file: {cases} cases walked, {len(wrong)} wrong")
    assert cases == len(SHAPES) * len(COMMANDS)
    assert not wrong, "\n".join(wrong)
    for kind in ("fifo", "directory", "link-to-file"):
        shape(walked / rel, kind, b"*\n", tmp_path / "outside" / kind)
        before = snapshot(walked)
        refused = run_here("checkpoint", cwd=walked, input="a note\n", timeout=WAIT)
        assert refused.returncode == 12 and b".gitignore is " in refused.stderr, refused.stderr
        assert b"nothing was written" in refused.stderr and b"rm -r -- " in refused.stderr
        assert snapshot(walked) == before
        doctor = run_here("doctor", "--json", cwd=walked, timeout=WAIT)
        found = {f["code"]: f for f in json.loads(doctor.stdout)["findings"]}
        assert doctor.returncode == 1 and found["state.ignore-file"]["path"] == rel, found
        assert "state.not-a-file" not in found  # said once, by the finding that knows what the file is for
    restore(walked, tmp_path / "saved")
    assert run_here("checkpoint", cwd=walked, input="a note\n").returncode == 0  # one past: a regular file


# ---------------------------------------------------------------- the one loader


@pytest.mark.parametrize("text, depth", [
    ("{}", 1), ("[]", 1), ("1", 0), ('"[[[["', 0), ('{"a": "]]]]", "b": [[1]]}', 3),
    ('["\\"[[[[[", [[]]]', 3),  # an escaped quote does not end the string
    ("[" * 64 + "]" * 64, 64), ("[" * 65 + "]" * 65, 65), ("[" * 100_000, 100_000),
    ('"' + "[" * 100 + '"', 0), ("[" + '"x",' * 100 + "[]]", 2), ('["' + "{" * 100 + '"]', 1),
])
def test_depth_counts_brackets_outside_strings(text, depth):
    assert jsonbound.depth(text) == depth
    assert jsonbound.too_deep(text) is (depth > jsonbound.MAX_DEPTH)


def test_64_levels_load_and_65_are_too_deep_never_a_recursion_error():
    assert jsonbound.loads("[" * 64 + "]" * 64) == json.loads("[" * 64 + "]" * 64)
    for text in ("[" * 65 + "]" * 65, "[" * 100_000 + "]" * 100_000, '{"a":' * 100_000, "[" * 100_000 + "}"):
        with pytest.raises(jsonbound.TooDeep) as caught:
            jsonbound.loads(text)
        assert isinstance(caught.value, json.JSONDecodeError) and "deeper than 64" in str(caught.value)
    assert jsonbound.loads(b'{"brackets": "' + b"[" * 1000 + b'"}') == {"brackets": "[" * 1000}


def test_a_byte_order_mark_is_refused_by_name_and_bytes_must_be_utf8():
    with pytest.raises(jsonbound.ByteOrderMark, match="byte-order mark"):
        jsonbound.loads(b"\xef\xbb\xbf{}")
    with pytest.raises(UnicodeDecodeError):
        jsonbound.loads(b"\xff{}")
    with pytest.raises(json.JSONDecodeError):
        jsonbound.loads_object_line('{"a":1} trailing')
    assert jsonbound.loads_object_line('{"a":1}  ') == {"a": 1}


@pytest.mark.parametrize("text, valid", [
    ('"' + '\\"' * 1_000_000 + "[" * 100, False),  # a string that never ends, made of escaped quotes
    ('"' + "a" * 2_000_000 + "\\", False),  # ...ending on a lone backslash
    ('["' + '\\\\' * 1_000_000 + '"' + ",[]" * 100 + "]", True),  # a million escaped backslashes
])
def test_a_string_that_never_ends_is_cut_out_in_one_pass(text, valid):
    began = time.process_time()
    assert not jsonbound.too_deep(text)
    assert time.process_time() - began < WAIT
    if valid:
        assert len(jsonbound.loads(text)) == 101
    else:
        with pytest.raises(ValueError):
            jsonbound.loads(text)


def test_depth_of_a_large_document_is_linear():
    text = "[" + ",".join(["[[1]]"] * 400_000) + "]"  # 2.4 MB, 1.2 million brackets
    began = time.process_time()  # this process's CPU: what other processes on the machine do is not counted
    assert jsonbound.depth(text) == 3
    assert time.process_time() - began < WAIT


# ---------------------------------------------------------------- the readers that refuse, by name


@pytest.mark.parametrize("runtime, rel", [("claude", ".claude/settings.json"), ("codex", ".codex/hooks.json")])
@pytest.mark.parametrize("content, said, unsaid", [
    (b"\xef\xbb\xbf{}", "starts with a byte-order mark (U+FEFF)", "line 1, column 1"),
    (b"\xef\xbb\xbf\xff\xfe{", "is not UTF-8", "line 1"),
    (b"[" * 100_000 + b"]" * 100_000, "deeper than 64 levels", "RecursionError"),
    (b'{"hooks": {"Stop": ' + b"[" * 70 + b"]" * 70 + b"}}", "deeper than 64 levels", "line"),
])
def test_a_settings_file_is_refused_saying_why_and_nothing_is_written(repo, runtime, rel, content, said, unsaid):
    path = repo / rel
    path.parent.mkdir()
    path.write_bytes(content)
    before = snapshot(repo)
    for action in ("install", "uninstall"):
        result = run_here("hooks", action, "--runtime", runtime, cwd=repo)
        message = result.stderr.decode()
        assert result.returncode == 10, (action, message)
        assert rel in message and said in message and unsaid not in message, message
        assert snapshot(repo) == before


def test_a_deep_continuity_is_named_and_never_injected(walked):
    path = state_dir(walked) / "context" / "t1" / "continuity.json"
    path.write_bytes(b"[" * WITHIN_BOUNDS + b"]" * WITHIN_BOUNDS)
    status = run_here("context", "validate", cwd=walked)
    assert status.returncode == 1 and b"deeper than 64 levels" in status.stdout + status.stderr
    doctor = run_here("doctor", "--json", cwd=walked)
    assert doctor.returncode == 1 and "continuity.json" in doctor.stdout.decode()
    hook = run_here("hook", "session-start", cwd=walked, input=PAYLOAD)
    assert hook.returncode == 0 and b"keep the parser honest" not in hook.stdout


def test_a_deep_journal_line_is_skipped_and_the_good_ones_kept(walked):
    journal = state_dir(walked) / "context" / "t1" / "compact-events.jsonl"
    good = journal.read_bytes()
    journal.write_bytes(good + b"[" * DEEP + b"]" * DEEP + b"\n" + good)
    status = run_here("context", "status", "--json", cwd=walked)
    assert status.returncode == 0, status.stderr


# ---------------------------------------------------------------- memory (a real process: its resident set)

RSS_BOUND = 64 << 20  # design §2a
_MEASURE = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], input=b"a note\\n", capture_output=True)
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def peak_rss(repo: Path, *args: str) -> tuple[int, int]:
    """(exit code, peak resident set in bytes) of `majordomus ARGS` run alone under a fresh parent."""
    assert MAJORDOMUS
    out = subprocess.run([sys.executable, "-c", _MEASURE, MAJORDOMUS, *args], cwd=repo, capture_output=True,
                         check=True, timeout=60).stdout.split()
    return int(out[0]), int(out[1]) * 1024  # ru_maxrss is in KiB on Linux


def test_a_120_mib_torn_ledger_tail_keeps_every_reader_within_64_mib(walked):
    ledger = state_dir(walked) / "ledger.jsonl"
    with open(ledger, "ab") as fh:
        fh.write(b'{"v":1,"seq":99,"event":"task.checkpoint","x":"')
    os.truncate(ledger, ledger.stat().st_size + (120 << 20))  # sparse: no disk used
    try:
        for args in (("checkpoint",), ("doctor",), ("ledger", "--verify"), ("brief",), ("watch", "--once")):
            code, rss = peak_rss(walked, *args)
            assert code == 0, args  # the torn line is one dropped line: a warning, never a failure
            assert rss <= RSS_BOUND, f"{args}: {rss >> 20} MiB resident"
    finally:
        ledger.unlink()


# ---------------------------------------------------------------- every state directory as a link

# Besides the file matrix's commands, the readers of the record directories a handoff and a run add.
DIRECTORY_COMMANDS: tuple[tuple[tuple[str, ...], bytes], ...] = (*COMMANDS,
    (("handoff", "--show", "t1"), b""), (("handoff", "--list"), b""), (("run", "--list"), b""),
    (("search", "note"), b""), (("search", "parser"), b""), (("log",), b""))
_NOFOLLOW = os.O_NOFOLLOW
# Derived files only: a link there is read as no cache at all (its readers fall back to what the cache was
# derived from, and say nothing); writers refuse it and doctor fails it, like every other link.
DERIVED = ("cache",)


def _through(link: str, events: list[tuple[str, str, int]]) -> list[str]:
    """What a command read through `link`: anything opened or listed below it, the link itself listed, or
    the link itself opened without O_NOFOLLOW."""
    below = link + os.sep
    return [f"{event} {path}" for event, path, flags in events
            if path.startswith(below) or (path == link and (event != "open" or not flags & _NOFOLLOW))]


_EVENTS: list[list[tuple[str, str, int]]] = []


def _audit_events(event: str, args: tuple[object, ...]) -> None:
    if _EVENTS and event in ("open", "os.listdir", "os.scandir") and args and isinstance(args[0], (str, bytes)):
        flags = args[2] if event == "open" and len(args) > 2 and isinstance(args[2], int) else 0
        _EVENTS[-1].append((event, os.path.abspath(os.fsdecode(args[0])), flags))


sys.addaudithook(_audit_events)


def _distinct_readers(link: str, seen: dict[tuple[str, ...], set[str]]) -> list[tuple[tuple[str, ...], bytes]]:
    """The commands that read below `link`, one for each distinct set of files they read there (every
    command reads the configuration's cache: one of them walks that), and every hook and `doctor` that
    reads there at all (they answer differently: exit 0, a finding)."""
    out, kept = [], set()
    for args, stdin in DIRECTORY_COMMANDS:
        below = frozenset(p for p in seen[args] if p == link or p.startswith(link + os.sep))
        if below and (args[0] == "hook" or args == ("doctor",) or below not in kept):
            kept.add(below)
            out.append((args, stdin))
    return out


def test_every_state_directory_as_a_link_is_refused_by_every_reader(walked, tmp_path, handoff_body):
    """design §2, §2a: each directory of the state (`checkpoints/`, `handoffs/`, `runs/`, `context/`,
    `context/ID/`, …, found by walking the state, so that a new one joins by itself) replaced by a link to a
    whole copy of itself — the one shape a reader that follows links would read without a sign — under
    every command that reads it: nothing is opened or listed through the link, nothing is written into its
    target, a refusal is exit 12 naming it (a hook: exit 0, and the briefing says why in a line). A link to
    a file or a device where a directory belongs fails the same `lstat`, so one shape walks the class."""
    mj(walked, "run", "--label", "unit", "--", sys.executable, "-c", "print('a parser run')")
    mj(walked, "handoff", input=handoff_body.encode())
    mj(walked, "task", "resume", "t1")
    mj(walked, "checkpoint", input=b"a note after the handoff\n")
    state = state_dir(walked)
    directories = sorted(str(p.relative_to(walked)) for p in state.rglob("*") if p.is_dir() and not p.is_symlink())
    assert {f"{state.relative_to(walked)}/{d}" for d in ("checkpoints", "handoffs", "runs", "tasks", "context",
                                                           "context/t1", "cache")} <= set(directories)
    saved = tmp_path / "saved"
    save(walked, saved)
    seen = {}
    for args, stdin in DIRECTORY_COMMANDS:
        restore(walked, saved)
        _EVENTS.append([])
        try:
            assert run_here(*args, cwd=walked, input=stdin).returncode in (0, 1), args
        finally:
            seen[args] = {path for _event, path, _flags in _EVENTS.pop()}
    cases, wrong = 0, []
    for rel in directories:
        path = walked / rel
        link, name = str(path), path.name
        readers = _distinct_readers(link, seen)
        for args, stdin in readers:
            cases += 1
            case = f"{rel} as a link: `{' '.join(args)}`"
            restore(walked, saved)
            target = tmp_path / "outside" / rel
            _remove(target)
            shutil.copytree(path, target, symlinks=True)
            shutil.rmtree(path)
            path.symlink_to(target, target_is_directory=True)
            before = snapshot(target)
            _EVENTS.append([])
            try:
                result = run_here(*args, cwd=walked, input=stdin, timeout=WAIT * 5)
            finally:
                events = _EVENTS.pop()
            said = result.stderr.decode("utf-8", "replace")
            if _through(link, events):
                wrong.append(f"{case} read through it: {_through(link, events)[:2]}")
            if snapshot(target) != before:
                wrong.append(f"{case} wrote into the link's target")
            if result.returncode == 70:
                wrong.append(f"{case} exit 70: {said.splitlines()[:1]}")
            elif args[0] == "hook":
                if result.returncode != 0:
                    wrong.append(f"{case} (a hook) exit {result.returncode}")
                elif (args[1] == "session-start" and name not in DERIVED and b"briefing" in result.stdout
                      and name.encode() not in result.stdout):
                    wrong.append(f"{case}: the context does not say why")
            elif result.returncode == 12 and name not in said:
                wrong.append(f"{case} exit 12 without naming it: {said.splitlines()[:1]}")
    restore(walked, saved)
    print(f"directory links: {cases} cases walked, {len(wrong)} wrong")
    assert cases >= 40
    assert not wrong, "\n".join(wrong[:60]) + (f"\n… and {len(wrong) - 60} more" if len(wrong) > 60 else "")


# ---------------------------------------------------------------- every field under every type

# What a JSON value of the wrong type looks like to a reader that looks it up in a table (a list or an object
# is no key of a set: the ledger's `task`, a pin's `kind`, the journal's `runtime` were exit 70), compares it
# (a number is no time) or walks it.
TYPES = (["x"], {"x": 1}, 7)
# The fields without which a line of a line log is no entry at all: changed one at a time, the others together.
CORE = {"ledger.jsonl": ("v", "seq", "event", "prev", "task", "at"), "compact-events.jsonl": ("v", "at", "phase", "runtime")}


def _variants(rel: str, data: bytes) -> list[tuple[str, bytes]]:
    """(what changed, the file's new bytes) for each field × each type: a JSON document's every value at
    depth one and two (a cache's at depth one: it is taken whole or rebuilt), one at a time; a line log's
    core fields one at a time and all its other fields at once."""
    out = []
    if rel.endswith(".jsonl"):
        lines = [json.loads(line) for line in data.splitlines() if line.strip()]
        core = CORE.get(Path(rel).name, ())
        for value in TYPES:
            changes = [(f"{key}={value!r}", {key}) for key in sorted({k for line in lines for k in line} & set(core))]
            changes.append((f"every other field={value!r}", {k for line in lines for k in line} - set(core)))
            for what, keys in changes:
                new = [{k: (value if k in keys else v) for k, v in line.items()} for line in lines]
                out.append((what, b"".join(json.dumps(line).encode() + b"\n" for line in new)))
        return out
    doc = json.loads(data)
    paths = [(k,) for k in doc] if isinstance(doc, dict) else []
    if "/cache/" not in rel:
        paths += [(k, k2) for k in (doc if isinstance(doc, dict) else ()) if isinstance(doc[k], dict) for k2 in doc[k]]
    for path in paths:
        for value in TYPES:
            new = json.loads(data)
            holder = new
            for key in path[:-1]:
                holder = holder[key]
            holder[path[-1]] = value
            out.append((f"{'.'.join(path)}={value!r}", json.dumps(new).encode()))
    return out


def type_walk(walked: Path, tmp_path: Path, seen: dict[tuple[str, ...], set[str]]) -> tuple[int, list[str]]:
    """Every JSON file and line log the state holds, each field set in turn to a list, an object and a
    number, × every command that reads that file: no exit 70, the hooks exit 0 (design §2a: one grammar per
    field, a wrong one refused or left out, never a crash). (cases walked, what went wrong)"""
    cases, wrong = 0, []
    for rel in targets(walked):
        if not rel.endswith((".json", ".jsonl")):
            continue
        original = (tmp_path / "saved" / rel).read_bytes()
        commands = [(args, stdin) for args, stdin in COMMANDS if reads(seen[args], walked / rel)]
        for what, data in _variants(rel, original):
            for args, stdin in commands:
                restore(walked, tmp_path / "saved")
                (walked / rel).write_bytes(data)
                cases += 1
                result = run_here(*args, cwd=walked, input=stdin, timeout=WAIT * 5)
                if result.returncode == 70 or (args[0] == "hook" and result.returncode != 0):
                    said = result.stderr.decode("utf-8", "replace").strip().splitlines()[:1]
                    wrong.append(f"{rel} {what}: `{' '.join(args)}` exit {result.returncode}: {said}")
    restore(walked, tmp_path / "saved")
    return cases, wrong
