"""Doctor's checks of the trust boundaries (design §2a): what an attacker or an accident can leave where
majordomus reads — the active index, the committed profiles, who owns the state, orphaned tasks."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator

from majordomus import claims, profiles, tasks
from majordomus.doctor.findings import FAIL, OK, WARN, Finding
from majordomus.errors import MajordomusError
from majordomus.lite import active, safeio
from majordomus.lite.names import is_profile_name
from majordomus.lite.textrules import escape, shell_quoted
from majordomus.workspace import Workspace


def check_index(ws: Workspace) -> list[Finding]:
    """`active.json` is the one place that says which task is active: corrupt or odd, every write refuses."""
    path = ws.paths.active_index
    try:
        index = active.read(ws.paths.root)
    except MajordomusError as exc:
        return [Finding(FAIL, "active.corrupt", exc.message, ws.display(path), exc.hint)]
    found = []
    for key, task_id in sorted(index.items()):
        place = active.unslot(key)
        if place is None:
            continue
        where = f"{escape(place[0])} on " + (f"branch {escape(place[1])}" if place[1] else "a detached HEAD")
        problem = _not_active(ws, task_id, place)
        if problem is not None:
            status, why = problem
            found.append(Finding(FAIL, "active.not-active", f"{ws.display(path)} names task `{task_id}` as the "
                                 f"active task in {where}, but {why}: every command there says no task is active",
                                 ws.display(path), "a command that failed part way left it so: "
                                 + _AGAIN.get(status, _AGAIN["paused"]).format(id=task_id)))
            continue
        holder = _held_by_another(ws, task_id)
        if holder is not None:
            found.append(Finding(FAIL, "task.held-elsewhere", f"task `{task_id}` is active in {where}, but this "
                                 f"machine's claim on it was ended and {escape(holder)} holds it: two workers "
                                 "hold one task", ws.display(ws.paths.task_file(task_id)),
                                 f"agree who continues; if it is the other, let it go here (`majordomus task "
                                 f"release {task_id}`, then `majordomus sync push`): the other's next pull pauses "
                                 f"it there too, and it resumes it with `majordomus task resume {task_id}`; if it "
                                 f"is you, the other does so and you resume it here after a `majordomus sync pull`"))
    return found


def _held_by_another(ws: Workspace, task_id: str) -> str | None:
    """Who holds a task that is active here by its record while its live claims are all another worker's
    (a takeover elsewhere that a kept record of ours outlived). None when a claim of ours is live, or when
    the record has no live claim at all (written before claims were kept)."""
    try:
        task = tasks.load(ws, task_id)
    except MajordomusError:
        return None
    live = claims.live(task.claims)
    ours = claims.mine(ws).get(task_id)
    if not live or (ours is not None and ours["id"] in {c["id"] for c in live}):
        return None
    return claims.describe(live[-1])


_AGAIN = {  # by the status the index's task has: the command whose rerun completes the change
    "paused": "run the `majordomus task start` or `task resume` that failed again (it completes), or resume the "
              "task you work on there with `majordomus task resume ID`",
    "handed-off": "run the same `majordomus handoff` again (it completes), or `majordomus task resume {id}`",
    "done": "run `majordomus task done {id}` again (it completes)",
    "released": "run `majordomus task release {id}` again (it completes)",
}


def _not_active(ws: Workspace, task_id: str, place: tuple[str, str | None]) -> tuple[str, str] | None:
    """(status, why) when the index's task for `place` is not active there, or None when it is (or cannot
    be told: an unreadable record is check_tasks' finding)."""
    try:
        if not tasks.exists(ws, task_id):
            return "paused", "there is no such task record"
        task = tasks.load(ws, task_id)
    except MajordomusError:
        return None
    if task.status == "paused" and any(c.get("ended_by") == "released" and c.get("ended_at") == task.updated_at
                                       for c in task.claims):
        return "released", "its record says it is paused"  # by a `task release` that did not finish
    if task.status != "active":
        return task.status, f"its record says it is {task.status}"
    if (task.worktree, task.branch) != place:
        return "paused", "its record says it is active somewhere else"
    return None


def _runtime_dirs(ws: Workspace) -> list[str]:
    """Where `hooks install` writes in the work tree: each runtime's settings directory, and its top (.mcp.json)."""
    from majordomus.hooks import copilot, gemini, installers

    where = [directory for directory, _name in installers.SETTINGS.values()]
    where += [os.path.join(*gemini.SETTINGS[:-1]), os.path.join(*copilot.SETTINGS[:-1])]
    return [ws.worktree] + [os.path.join(ws.worktree, d) for d in where]


def _committed_temps(ws: Workspace) -> list[Finding]:
    """A temporary file an interrupted write (`init`, `hooks install`, a killed one) left in the committed
    `.ai/`, its profiles, or a runtime's settings directory: `git add -A` would commit it."""
    from majordomus.store.files import TMP_PREFIX

    found = []
    profiles_at = [os.path.dirname(d) for d in ws.paths.profile_dirs] + ws.paths.profile_dirs
    for directory in dict.fromkeys(profiles_at + _runtime_dirs(ws)):
        try:
            names = sorted(n for n in os.listdir(directory) if n.startswith(TMP_PREFIX))
        except OSError:
            continue
        for name in names:
            shown = ws.display(os.path.join(directory, name))
            found.append(Finding(WARN, "config.temp-file", f"{shown} is a temporary file left by an interrupted "
                                 "write: `git add -A` would commit it", shown,
                                 f"when no majordomus command is running, remove it: `rm {shell_quoted(shown)}`"))
    return found


def check_profiles(ws: Workspace) -> list[Finding]:
    """Committed profiles are injected into agents' context: a link (to /proc/self/environ, to a file of
    yours) or anything but a plain bounded file is never read, and is reported."""
    found = _committed_temps(ws)
    for directory in ws.paths.profile_dirs:
        if os.path.islink(directory):  # `.ai` or `.ai/profiles` itself: nothing below it is read
            shown = ws.display(directory)
            found.append(Finding(FAIL, "profile.unsafe", f"{shown} is a symbolic link; no profile is read through "
                                 "it and session-start injects none", shown, "make it a real directory in the "
                                 "repository (`git rm` the link and commit the profiles themselves)"))
            continue
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        for name in names:
            if not name.endswith(".md"):
                continue
            path = os.path.join(directory, name)
            try:
                profiles.read(path)  # as session-start reads it
            except safeio.UnsafeFile as exc:
                hint = exc.hint if isinstance(exc, profiles.BadProfile) else (
                    "make it a plain file in the repository (`git rm` the link and commit the text itself)")
                found.append(Finding(FAIL, "profile.unsafe", f"{ws.display(path)} {exc.what}; session-start never "
                                     "injects it", ws.display(path), hint))
            except OSError:
                continue
    return found


def check_owners(ws: Workspace) -> list[Finding]:
    """The state and the directories above it: ours, and not writable by others (another local user could
    replace `.ai/local`)."""
    found = []
    uid = os.getuid()
    for path in (os.path.dirname(ws.paths.local), ws.paths.local, ws.paths.root):
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            continue  # refused as a link (`state.symlink`), whoever owns the link itself
        shown = ws.display(path)
        if st.st_uid != uid:
            found.append(Finding(WARN, "state.owner", f"{shown} is owned by uid {st.st_uid}, not by you "
                                 f"(uid {uid})", shown, "run majordomus as the state's owner, or `chown -R` it"))
        if stat.S_IMODE(st.st_mode) & 0o022:
            found.append(Finding(WARN, "state.writable-by-others", f"{shown} is writable by group or others "
                                 f"(mode {stat.S_IMODE(st.st_mode):04o}): another user could replace what is in it",
                                 shown, f"chmod go-w {shown}"))
    return found


def loaded(ws: Workspace, task_ids: list[str]) -> Iterator[tuple[str, tasks.Task]]:
    """(id, task) of each task that loads, in id order; the others are reported by check_tasks."""
    for task_id in sorted(task_ids):
        try:
            yield task_id, tasks.load(ws, task_id)
        except MajordomusError:
            continue


def _held(ws: Workspace, task_ids: list[str]) -> Iterator[tuple[str, tasks.Task, str | None]]:
    """(id, task, where it is held) of each task that loads; the others are reported by check_tasks and
    check_index."""
    for task_id, task in loaded(ws, task_ids):
        try:
            yield task_id, task, tasks.where_active(ws, task)
        except MajordomusError:
            continue


def check_profile_names(ws: Workspace, task_ids: list[str]) -> list[Finding]:
    """A task's profile is an identifier (design §2a): a stored one that breaks the grammar (a path, a
    newline) is never read by session-start, and is reported."""
    found = []
    for task_id, task in loaded(ws, task_ids):
        if not is_profile_name(task.profile):
            shown = ws.display(ws.paths.task_file(task_id))
            found.append(Finding(FAIL, "task.profile-invalid", f"task `{task_id}` names the profile "
                                 f"{escape(repr(task.profile[:80]))}, which is not a valid profile name; "
                                 "session-start injects no identity for it", shown,
                                 f"set `profile:` in {shown} to the name of a file .ai/profiles/NAME.md "
                                 "(A-Z, a-z, 0-9, `.`, `_`, `-`, starting with a letter or digit)"))
    return found


def check_orphans(ws: Workspace, task_ids: list[str]) -> list[Finding]:
    """A task active in a worktree that no longer exists can be resumed anywhere without --force."""
    found = []
    for task_id, task, held in _held(ws, task_ids):
        if held == "orphaned":
            found.append(Finding(WARN, "task.orphaned", f"task `{task_id}` is active in {task.worktree}, which no "
                                 "longer exists", ws.display(ws.paths.task_file(task_id)),
                                 f"resume it where you work now: `majordomus task resume {task_id}` (no --force "
                                 "needed), or `majordomus task done " + task_id + "`"))
    return found


def check_branches(ws: Workspace, task_ids: list[str]) -> list[Finding]:
    """A task active on a branch that no longer exists (`git branch -m` or `-D`) is stranded there: on the
    branch it became, `task resume` takes it over without --force (design §5)."""
    from majordomus.git import status

    found = []
    for task_id, task, held in _held(ws, task_ids):
        if held not in ("here", "elsewhere") or task.branch is None or status.branch_exists(ws.place, task.branch):
            continue
        found.append(Finding(WARN, "task.branch-missing", f"task `{task_id}` is active on branch `{task.branch}` "
                             f"in {task.worktree}, and that branch no longer exists (renamed or deleted)",
                             ws.display(ws.paths.task_file(task_id)),
                             f"on the branch it became, `majordomus task resume {task_id}` takes it over (no --force "
                             f"needed), or `majordomus task done {task_id}`"))
    return found


def check_unindexed(ws: Workspace, task_ids: list[str]) -> list[Finding]:
    """A task active by its record in a worktree of this machine, under this machine's live claim, that the
    index does not name there: a `task start` or `resume` that failed after the task's record (design
    §10). `task list` says so too; the same command run again completes it."""
    found = []
    mine = claims.mine(ws)
    for task_id, task, held in _held(ws, task_ids):
        if held != "remote" or not claims.held_here_unindexed(task, mine):
            continue
        where = f"{escape(task.worktree or '')} on " + (f"branch {escape(task.branch)}" if task.branch
                                                        else "a detached HEAD")
        found.append(Finding(FAIL, "active.not-active", f"task `{task_id}` is active in {where} by its record and "
                             f"this machine's claim, but {ws.display(ws.paths.active_index)} does not name it "
                             "there", ws.display(ws.paths.task_file(task_id)),
                             "a command that failed part way left it so: run the `majordomus task start` or "
                             f"`task resume {task_id}` that failed again there (it completes)"))
    return found


def check_unlogged(ws: Workspace) -> list[Finding]:
    """A task active here whose start or resume landed without its events (the one append that carries
    them, and the replaced task's `task.pause`, failed): the same command run again writes them. Only
    asked of a ledger that begins at its first event (one rotated by hand cannot tell)."""
    from majordomus import lifecycle

    try:
        index = active.read(ws.paths.root)
        if not index or not _ledger_whole(ws):
            return []
    except (MajordomusError, OSError):
        return []  # a corrupt index or an unreadable ledger: their own findings say so
    found = []
    for key, task_id in sorted(index.items()):
        place = active.unslot(key)
        try:
            task = tasks.load(ws, task_id)
        except MajordomusError:
            continue
        if place is None or task.status != "active" or (task.worktree, task.branch) != place:
            continue
        if place != (ws.worktree, ws.branch):
            continue  # the rule reads this worktree's claims and slot: asked where the task is active
        try:
            command = lifecycle.unfinished(ws, task)
        except (MajordomusError, OSError):
            continue
        if command is not None:
            found.append(Finding(FAIL, "task.no-event", f"task `{task_id}` is active here, but the ledger has "
                                 f"no event of the `{command}` that made it so", ws.display(ws.paths.ledger),
                                 f"its events did not land (a write that failed): run `majordomus {command} "
                                 f"{task_id}` again to write them"))
    return found


def _ledger_whole(ws: Workspace) -> bool:
    """Whether the ledger begins at its first event (seq 1)."""
    from majordomus.store import ledger

    lines = ledger.iter_lines(ws.paths.ledger)
    try:
        for line in lines:  # its first line only
            first = ledger.parse_line(line) if line.strip() else None
            return first is not None and first.get("seq") == 1
        return False
    finally:
        try:
            lines.close()  # the file, closed here: a close that fails (EIO) loses nothing that was read
        except OSError:
            pass


def run(ws: Workspace, task_ids: list[str]) -> list[Finding]:
    found = (check_index(ws) + check_unindexed(ws, task_ids) + check_unlogged(ws) + check_profiles(ws) + check_profile_names(ws, task_ids) + check_owners(ws)
             + check_orphans(ws, task_ids) + check_branches(ws, task_ids))
    return found or [Finding(OK, "boundaries", "active index, profiles and ownership are sound; no orphaned task, "
                             "no task on a missing branch")]
