"""Talking to a remote through the `git` command, so the user's remotes, credentials and transports apply.

Only refs under `refs/majordomus/` ever travel: every call names them explicitly, never tags, never branches.
A remote's refs are fetched to `refs/majordomus/remotes/REMOTE/…` (`machines/ID`, `state`), as git keeps
`refs/remotes/REMOTE/…` for branches.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from majordomus.errors import EnvironmentProblem
from majordomus.git import run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from majordomus.lite.dotgit import Place

NAMESPACE = "refs/majordomus/"
# What git says when a ref moved under a push (a race to retry), as opposed to a hook or a rule refusing it.
_RACE = ("non-fast-forward", "fetch first", "stale info", "atomic push failed", "cannot lock ref",
         "failed to update ref", "incorrect old value", "failed to lock", "already exists")


def tracking_prefix(remote: str) -> str:
    return f"{NAMESPACE}remotes/{remote}/"


def tracking(remote: str, name: str) -> str:
    """Where the remote's ref `name` (`refs/majordomus/…`) is fetched to."""
    return tracking_prefix(remote) + name[len(NAMESPACE):]


@dataclass
class Outcome:
    ok: bool
    detail: str  # what git said, for the user


@dataclass
class Update:
    """One ref of a push: `src` (an object id; "" deletes `dst`), and the value `dst` must still have on
    the remote (`expect`; "" must not exist) when the update may replace what is there."""

    src: str
    dst: str
    expect: str | None = None


@dataclass
class Pushed:
    ok: bool
    race: bool = False  # rejected because the remote ref moved: fetch, merge and try again
    detail: str = ""
    up_to_date: set[str] = field(default_factory=set)


def _said(done: run.Ran) -> str:
    lines = [line.rstrip() for line in (done.err + done.out).split("\n")]
    kept = [line for line in lines if line.strip() and line.strip() != "Done" and not line.startswith("To ")]
    return "\n".join(kept[-12:])


def rejection_hint(detail: str, refusal: str) -> str:
    """What to do about a push the remote rejected: `refusal` when a hook or rule refused it, or, when the
    remote could not store what came (its disk full, an unpacker error, a permission), to see to that; or,
    when a git that was stopped here left a lock behind, to remove it."""
    left = run.lock_left(detail)
    if left is not None:
        return left
    if any(word in detail for word in ("unpacker error", "No space left", "unable to write", "Disk quota",
                                       "Permission denied", "unable to create")):
        return ("the remote could not store what was sent (see git's words above: its disk, its permissions); "
                "nothing was changed there: run the same command again once it can")
    return refusal


def said(text: str) -> list[str]:
    """What git said, as the lines an error quotes under its message (`detail`)."""
    return text.splitlines() or ["(git said nothing)"]


def list_refs(place: Place, remote: str) -> dict[str, str]:
    """The remote's refs under refs/majordomus/ and the ids they point at (one round trip, no objects)."""
    done = run.run(place, "ls-remote", remote, f"{NAMESPACE}*", within=run.REMOTE_SECONDS, remote=remote)
    if done.returncode != 0:
        raise EnvironmentProblem(f"cannot reach {remote}:", detail=said(_said(done)), hint=
                                 f"check the remote and your access to it: {run.hint(('ls-remote', remote), place.worktree)}")
    found: dict[str, str] = {}
    for line in done.out.split("\n"):  # at "\n" only: a ref name may hold U+2028, which `splitlines` cuts
        oid, _, name = line.partition("\t")
        if name.startswith(NAMESPACE):
            found[name] = oid
    return found


def fetch_all(place: Place, remote: str) -> Outcome:
    """Fetch every ref under refs/majordomus/ in one fetch; refs gone from the remote go here too."""
    done = run.run(place, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules", "--prune",
                   remote, f"+{NAMESPACE}*:{tracking_prefix(remote)}*", within=run.REMOTE_SECONDS, remote=remote)
    return Outcome(ok=done.returncode == 0, detail=_said(done))


def fetch_refs(place: Place, remote: str, names: list[str]) -> Outcome:
    """Fetch the named refs (that exist on the remote) into their tracking refs."""
    done = run.run(place, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules",
                   remote, *(f"+{name}:{tracking(remote, name)}" for name in names), within=run.REMOTE_SECONDS,
                   remote=remote)
    return Outcome(ok=done.returncode == 0, detail=_said(done))


def push(place: Place, remote: str, updates: list[Update]) -> Pushed:
    """Push `updates` (atomically when there are several): fast-forward only, unless an update names what
    the remote ref must still be (`expect`), which git then checks as a lease."""
    args = ["push", "--porcelain", "--no-follow-tags", "--recurse-submodules=no"]
    if len(updates) > 1:
        args.append("--atomic")
    args += [f"--force-with-lease={u.dst}:{u.expect}" for u in updates if u.expect is not None]
    done = run.run(place, *args, remote, *(f"{u.src}:{u.dst}" for u in updates), within=run.REMOTE_SECONDS,
                   remote=remote)
    # --porcelain prints one `<flag>\t<from>:<to>\t<summary>` line per ref; `!` is a rejection.
    result = Pushed(ok=done.returncode == 0, detail=_said(done))
    seen, races, refusals = False, 0, 0
    for line in done.out.split("\n"):
        parts = line.split("\t")
        if len(parts) < 3 or ":" not in parts[1]:
            continue
        seen = True
        dst = parts[1].rsplit(":", 1)[1]
        if parts[0] == "=":
            result.up_to_date.add(dst)
        if parts[0] == "!":
            result.ok = False
            if any(word in parts[2] for word in _RACE):
                races += 1
            elif "atomic transaction failed" in parts[2]:
                # The remote says why in its own words: a ref that moved under the transaction is a race.
                races += any(word in done.err for word in _RACE)
                refusals += not any(word in done.err for word in _RACE)
            else:
                refusals += 1  # a hook or a rule: retrying will not help
    if not seen and done.returncode != 0:
        if any(word in done.err for word in _RACE):
            return Pushed(ok=False, race=True, detail=result.detail)
        raise EnvironmentProblem(f"cannot push to {remote}:", detail=said(_said(done)), hint=run.lock_left(done.err) or
                                 f"check the remote and your access to it: {run.hint(('push', remote), place.worktree)}")
    result.race = races > 0 and refusals == 0
    return result
