"""Talking to a remote through the `git` command, so the user's remotes, credentials and transports apply.

Only the one ref of majordomus ever travels: every call names it explicitly, never tags, never branches.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Optional

from majordomus.errors import EnvironmentProblem

STATE_REF = "refs/majordomus/state"


def tracking_ref(remote: str) -> str:
    """Where a remote's state is fetched to, like `refs/remotes/REMOTE/…` for branches."""
    return f"refs/majordomus/remotes/{remote}/state"


@dataclass
class Outcome:
    ok: bool
    rejected: bool  # git refused to move the remote ref (a race, or a hook / server policy)
    detail: str  # what git said, for the user
    up_to_date: bool = False


def _git(cwd: str, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    except OSError as exc:
        raise EnvironmentProblem(f"cannot run git: {exc.strerror}", "install git and make sure it is on PATH") from exc


def _said(done: subprocess.CompletedProcess[str]) -> str:
    lines = [line.rstrip() for line in (done.stderr + done.stdout).splitlines()]
    kept = [line for line in lines if line.strip() and line.strip() != "Done" and not line.startswith("To ")]
    return "\n".join(kept[-12:])


def push(cwd: str, remote: str) -> Outcome:
    """Push the local state ref to the remote's state ref, fast-forward only."""
    done = _git(cwd, "push", "--porcelain", "--no-follow-tags", "--recurse-submodules=no", remote,
                f"{STATE_REF}:{STATE_REF}")
    # --porcelain prints one `<flag>\t<from>:<to>\t<summary>` line per ref; `!` is a rejection.
    for line in done.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[1].endswith(f":{STATE_REF}"):
            flag = parts[0]
            if flag == "!":
                return Outcome(ok=False, rejected=True, detail=_said(done))
            if done.returncode == 0:
                return Outcome(ok=True, rejected=False, detail=parts[2], up_to_date=flag == "=")
    return Outcome(ok=done.returncode == 0, rejected=False, detail=_said(done))


def fetch(cwd: str, remote: str) -> Outcome:
    """Fetch the remote's state ref into its tracking ref (forced, like git's default refspecs)."""
    done = _git(cwd, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules",
                remote, f"+{STATE_REF}:{tracking_ref(remote)}")
    return Outcome(ok=done.returncode == 0, rejected=False, detail=_said(done))


def has_state(cwd: str, remote: str) -> Optional[bool]:
    """Whether the remote has the state ref; None when the remote cannot be asked."""
    done = _git(cwd, "ls-remote", "--exit-code", remote, STATE_REF)
    if done.returncode == 0:
        return True
    if done.returncode == 2:  # --exit-code: the remote answered, and has no such ref
        return False
    return None
