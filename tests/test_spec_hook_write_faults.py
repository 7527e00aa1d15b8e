"""Every write step of `hooks install|uninstall` failing in turn (design §2b, §12): the runtimes' settings files,
git's hooks directory and Husky's `.husky/`, with each `write`, `fsync`, `link`, `rename`, `mkdir`, creating
`open` and `unlink` failed in turn (the fault layer of `majordomus/store/fault.py`, in this process; `unlink`
by the same counting here). After each:

- exit 0 and everything landed, or exit 12 with a `majordomus: …` message and a hint;
- the user's own hook is where git runs it, whole: never moved aside without ours in its place;
- the same command again completes, and then `doctor --strict` is clean (no receipt of a hook that never
  ran, no state directory left without its ignore file).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers import run_here, state_dir
from helpers.husky import npx_husky

from majordomus.store.fault import OPS, Faults

USER_HOOK = b"#!/bin/sh\necho the user's own post-commit\n"
HUSKY_USER = "echo the user's own post-commit\nexit 0\n"


def _user_hook(repo: Path) -> None:
    hook = repo / ".git" / "hooks" / "post-commit"
    hook.write_bytes(USER_HOOK)
    hook.chmod(0o755)


def _installed(*runtime: str) -> Callable[[Path], None]:
    def setup(repo: Path) -> None:
        _user_hook(repo)
        assert run_here("hooks", "install", "--runtime", *runtime, cwd=repo).returncode == 0
    return setup


def _husky(repo: Path) -> None:
    npx_husky(repo)
    (repo / ".husky" / "post-commit").write_text(HUSKY_USER)


def _user_hook_runs(repo: Path) -> None:
    """Where git runs post-commit: the user's hook itself, or ours with the user's chained beside it."""
    hooks = repo / ".git" / "hooks"
    here = (hooks / "post-commit").read_bytes()
    if here != USER_HOOK:
        assert b"# majordomus post-commit hook" in here, here
        assert (hooks / "post-commit.majordomus-chained").read_bytes() == USER_HOOK
        assert os.access(hooks / "post-commit", os.X_OK)


def _git_installed(repo: Path) -> None:
    hooks = repo / ".git" / "hooks"
    assert b"majordomus check --checkpoint" in (hooks / "post-commit").read_bytes()
    assert (hooks / "post-commit.majordomus-chained").read_bytes() == USER_HOOK
    assert b"majordomus hook rewrite" in (hooks / "post-rewrite").read_bytes()


def _git_uninstalled(repo: Path) -> None:
    hooks = repo / ".git" / "hooks"
    assert (hooks / "post-commit").read_bytes() == USER_HOOK
    assert sorted(p.name for p in hooks.iterdir()) == ["post-commit"]


def _husky_installed(repo: Path) -> None:
    text = (repo / ".husky" / "post-commit").read_text()
    assert text.startswith("# >>> majordomus post-commit hook") and text.endswith(HUSKY_USER)
    assert (repo / ".husky" / "post-rewrite").read_text().startswith("# >>> majordomus post-rewrite hook")


def _settings(repo: Path, rel: str) -> dict[str, object]:
    return dict(json.loads((repo / rel).read_text()))


def _claude_installed(repo: Path) -> None:
    assert "SessionStart" in _settings(repo, ".claude/settings.json")["hooks"]  # type: ignore[operator]
    assert "majordomus" in _settings(repo, ".mcp.json")["mcpServers"]  # type: ignore[operator]


def _claude_uninstalled(repo: Path) -> None:
    assert not (repo / ".claude").exists() and not (repo / ".mcp.json").exists()


def _gemini_installed(repo: Path) -> None:
    assert "SessionStart" in _settings(repo, ".gemini/settings.json")["hooks"]  # type: ignore[operator]


# name: (setup, argv, what must have landed)
COMMANDS: dict[str, tuple[Callable[[Path], None], tuple[str, ...], Callable[[Path], None]]] = {
    "git install": (_user_hook, ("hooks", "install", "--runtime", "git"), _git_installed),
    "git uninstall": (_installed("git"), ("hooks", "uninstall", "--runtime", "git"), _git_uninstalled),
    "husky install": (_husky, ("hooks", "install", "--runtime", "git"), _husky_installed),
    "claude install": (_user_hook, ("hooks", "install", "--runtime", "claude", "--mcp"), _claude_installed),
    "claude uninstall": (_installed("claude", "--mcp"), ("hooks", "uninstall", "--runtime", "claude"),
                         _claude_uninstalled),
    "gemini install": (_user_hook, ("hooks", "install", "--runtime", "gemini"), _gemini_installed),
}
KINDS = (*OPS, "unlink")


class _Unlinks:
    """`os.unlink` and `os.remove` on paths under `root`, counted, and the `nth` failed with EIO."""

    def __init__(self, root: Path, nth: int = 0) -> None:
        self.root, self.nth, self.count, self.fired = str(root) + os.sep, nth, 0, False

    def __enter__(self) -> _Unlinks:
        self.real = os.unlink, os.remove

        def unlink(path: object, *args: object, **kw: object) -> None:
            if os.fsdecode(os.path.abspath(path)).startswith(self.root):  # type: ignore[arg-type]
                self.count += 1
                if self.count == self.nth:
                    self.fired = True
                    raise OSError(errno.EIO, os.strerror(errno.EIO))
            self.real[0](path, *args, **kw)  # type: ignore[arg-type]

        os.unlink = os.remove = unlink  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        os.unlink, os.remove = self.real


def _cases(counts: dict[str, int]) -> Iterator[tuple[str, int]]:
    for kind in KINDS:
        for nth in range(1, counts[kind] + 1):
            yield kind, nth


def _run(repo: Path, argv: tuple[str, ...], kind: str | None = None, nth: int = 0) -> tuple[object, dict[str, int], bool]:
    faults = Faults(repo, kind if kind in OPS else None, nth, "EIO" if kind == "fsync" else "ENOSPC")
    with faults.active(), _Unlinks(repo, nth if kind == "unlink" else 0) as unlinks:
        result = run_here(*argv, cwd=repo)
    return result, {**faults.counts, "unlink": unlinks.count}, faults.fired or unlinks.fired


def _restore(pristine: Path, repo: Path) -> None:
    shutil.rmtree(repo)
    shutil.copytree(pristine, repo, symlinks=True)


def _doctor_clean(repo: Path) -> None:
    doctor = run_here("doctor", "--strict", "--json", cwd=repo)
    findings = [(f["code"], f.get("path")) for f in json.loads(doctor.stdout)["findings"] if f["level"] != "ok"]
    assert doctor.returncode == 0 and not findings, f"doctor --strict: {findings}"


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_write_step_of_hooks_install_and_uninstall_failing_in_turn(repo: Path, tmp_path: Path, name: str) -> None:
    setup, argv, landed = COMMANDS[name]
    setup(repo)
    pristine = tmp_path / "pristine"
    shutil.copytree(repo, pristine, symlinks=True)
    clean, counts, _ = _run(repo, argv)
    assert clean.returncode == 0, clean  # type: ignore[attr-defined]
    landed(repo)
    assert sum(counts.values()) > 0

    problems, walked = [], 0
    for kind, nth in _cases(counts):
        _restore(pristine, repo)
        failed, _, fired = _run(repo, argv, kind, nth)
        walked += 1
        code, err = failed.returncode, failed.stderr.decode()  # type: ignore[attr-defined]
        case = f"{name}: {kind} #{nth}: exit {code}: {err[:300]!r}"
        assert fired, f"{case}: the walk never reached that call"
        try:
            if code != 0:
                assert code == 12, "not exit 12"
                assert err.startswith("majordomus: ") and "\nhint: " in err, "no clear message"
                if (pristine / ".git" / "hooks" / "post-commit").exists():
                    _user_hook_runs(repo)
                again = run_here(*argv, cwd=repo)
                assert again.returncode == 0, f"the retry exits {again.returncode}: {again.stderr.decode()[:300]}"
            landed(repo)
            _doctor_clean(repo)
        except (AssertionError, OSError, ValueError, KeyError) as exc:
            problems.append(f"{case}\n    -> {exc}")
    print(f"{name}: {walked} cases over {counts}")
    assert not problems, "\n".join(problems)


def test_a_failed_rename_never_leaves_git_without_the_users_hook(repo: Path) -> None:
    """The edge the walk found: the user's hook is moved aside only for ours to take its place at once; when
    that second rename fails, it moves back (exit 12), and nothing else changed."""
    _user_hook(repo)
    before = sorted(p.name for p in (repo / ".git" / "hooks").iterdir())
    failed, _, fired = _run(repo, ("hooks", "install", "--runtime", "git"), "rename", 2)
    assert fired and failed.returncode == 12  # type: ignore[attr-defined]
    err = failed.stderr.decode()  # type: ignore[attr-defined]
    assert "cannot write" in err and "post-commit" in err and "the hooks are as they were before" in err, err
    assert "hint: the file system of" in err and "is full" in err, err
    hooks = repo / ".git" / "hooks"
    assert (hooks / "post-commit").read_bytes() == USER_HOOK
    assert stat.S_IMODE((hooks / "post-commit").stat().st_mode) == 0o755
    assert sorted(p.name for p in hooks.iterdir()) == before
    assert not (state_dir(repo) / "hooks").exists() or not any((state_dir(repo) / "hooks").iterdir())


def test_a_settings_file_that_cannot_be_written_leaves_no_receipt_behind(repo: Path) -> None:
    """The receipt goes in first and back out when the settings file then fails: doctor has no hook to call
    missing that never ran, and the hint speaks of a full disk, not of the state directory's modes."""
    _, counts, _ = _run(repo, ("hooks", "install", "--runtime", "claude"))
    shutil.rmtree(repo / ".claude")
    shutil.rmtree(repo / ".ai")
    last_write = counts["write"]  # the settings file is written last
    failed, _, fired = _run(repo, ("hooks", "install", "--runtime", "claude"), "write", last_write)
    err = failed.stderr.decode()  # type: ignore[attr-defined]
    assert fired and failed.returncode == 12 and "settings.json" in err and "is full" in err, err  # type: ignore[attr-defined]
    assert "state directory" not in err and "chmod" not in err, err
    assert not (repo / ".claude" / "settings.json").exists()
    assert not any((state_dir(repo) / "hooks").iterdir())
    _doctor_clean(repo)


@pytest.mark.parametrize(("runtime", "rel", "matcher", "covered"), [
    ("gemini", ".gemini/settings.json", "startup", False),   # Gemini compares exactly: resume and clear missed
    ("gemini", ".gemini/settings.json", "", True),
    ("claude", ".claude/settings.json", "startup", False),
    ("claude", ".claude/settings.json", "startup|resume|clear|compact|fork", True),  # a regular expression there
    ("claude", ".claude/settings.json", "*", True),
])
def test_an_entry_of_ours_limited_by_a_matcher_is_not_taken_as_installed(repo: Path, runtime: str, rel: str,
                                                                        matcher: str, covered: bool) -> None:
    command = f"majordomus hook session-start --runtime {runtime}"
    settings = repo / rel
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": {"SessionStart": [
        {"matcher": matcher, "hooks": [{"type": "command", "command": command}]}]}}))
    done = run_here("hooks", "install", "--runtime", runtime, cwd=repo)
    assert done.returncode == 0, done
    groups = json.loads(settings.read_text())["hooks"]["SessionStart"]
    assert len(groups) == (1 if covered else 2), groups
    if not covered:
        assert "matcher" not in groups[1] and groups[1]["hooks"][0]["command"] == command
    again = run_here("hooks", "install", "--runtime", runtime, cwd=repo)
    assert again.stdout.startswith(b"already installed"), again


def test_a_second_hook_that_fails_says_the_first_is_installed(repo: Path) -> None:
    """post-commit in place, post-rewrite's rename (the third: post-commit's, its receipt's, then this one) fails (a full disk): exit 12, and the message says which
    is installed and which is as it was (never "the hooks are as they were before"); the retry completes."""
    failed, _, fired = _run(repo, ("hooks", "install", "--runtime", "git"), "rename", 3)
    assert fired and failed.returncode == 12  # type: ignore[attr-defined]
    err = failed.stderr.decode()  # type: ignore[attr-defined]
    assert "post-rewrite" in err and "that hook is as it was, and post-commit is installed" in err, err
    assert "as they were before" not in err and "run the same command again: it installs the rest" in err, err
    assert (repo / ".git" / "hooks" / "post-commit").exists() and not (repo / ".git" / "hooks" / "post-rewrite").exists()
    again = run_here("hooks", "install", "--runtime", "git", cwd=repo)
    assert again.returncode == 0 and (repo / ".git" / "hooks" / "post-rewrite").exists(), again.stderr
