"""Doctor's checks of the trust boundaries (design §2a): what an attacker or an accident can leave where
majordomus reads — the active index, the committed profiles, who owns the state, orphaned tasks."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator

from majordomus import profiles, tasks
from majordomus.doctor.findings import FAIL, OK, WARN, Finding
from majordomus.errors import MajordomusError
from majordomus.lite import active, safeio
from majordomus.lite.names import is_profile_name
from majordomus.lite.textrules import escape
from majordomus.workspace import Workspace


def check_index(ws: Workspace) -> list[Finding]:
    """`active.json` is the one place that says which task is active: corrupt or odd, every write refuses."""
    path = ws.paths.active_index
    try:
        active.read(ws.paths.root)
    except MajordomusError as exc:
        return [Finding(FAIL, "active.corrupt", exc.message, ws.display(path), exc.hint)]
    return []


def check_profiles(ws: Workspace) -> list[Finding]:
    """Committed profiles are injected into agents' context: a link (to /proc/self/environ, to a file of
    yours) or anything but a plain bounded file is never read, and is reported."""
    found = []
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


def run(ws: Workspace, task_ids: list[str]) -> list[Finding]:
    found = (check_index(ws) + check_profiles(ws) + check_profile_names(ws, task_ids) + check_owners(ws)
             + check_orphans(ws, task_ids) + check_branches(ws, task_ids))
    return found or [Finding(OK, "boundaries", "active index, profiles and ownership are sound; no orphaned task, "
                             "no task on a missing branch")]
