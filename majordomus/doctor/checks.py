"""`majordomus doctor` (design §11): is the state whole? Findings from one pass over the store and the ledger."""

from __future__ import annotations

import os

from majordomus import claims, clock, continuity, tasks
from majordomus.doctor import boundaries
from majordomus.doctor.findings import FAIL, OK, WARN, Finding, exit_code
from majordomus.doctor.scan import CHECKED_DIRS, RECORD_DIRS, Scan, scan_state
from majordomus.errors import MajordomusError
from majordomus.git import held
from majordomus.lite import ignorefile, textrules
from majordomus.output import escape
from majordomus.store import ledger
from majordomus.workspace import Workspace

__all__ = ["Finding", "exit_code", "open_workspace", "retention", "run", "stale"]

RETENTION = {"checkpoints": "checkpoint", "handoffs": "handoff"}  # record directory -> config section
STATE_PREFIX = ".ai/local/"


def open_workspace(cwd: str | None = None) -> tuple[Workspace, list[Finding]]:
    """The workspace, with its configuration checked: a broken config is a finding and the defaults apply."""
    ws = Workspace.open(cwd, lenient_config=True)
    where = ws.paths.config_file
    problem = ws.config_problem
    if problem is not None:
        return ws, [Finding(FAIL, "config.invalid", problem.message, where and ws.display(where),
                            problem.hint + " (until then every command refuses to run; doctor uses the defaults)")]
    cfg = ws.config
    shown = ws.display(cfg.path) if cfg.path else None
    found = [
        Finding(WARN, "config.unknown-key", f"unknown key `{key}` in {shown}", shown,
                "check its spelling against the file `majordomus init` writes (every key, documented), or remove it")
        for key in cfg.unknown_keys
    ]
    return ws, found or [Finding(OK, "config", f"{shown} is valid" if shown else "no .ai/config.yaml: the defaults apply")]


def check_git(ws: Workspace, state_exists: bool) -> list[Finding]:
    """No state file is tracked, staged or committed; the state directory is ignored."""
    how = {"tracked": "is tracked by git", "staged": "is staged in git's index",
           "committed": "is in HEAD's commit (its removal is staged but not committed)"}
    found = []
    for path, kind in sorted(held.held_under(ws.place, STATE_PREFIX).items()):
        hint = ("commit the staged removal; if it was pushed, the record is in the shared history"
                if kind == "committed"
                else f"`git rm --cached -- {textrules.shell_quoted(path)}` and commit; the file stays on disk")
        found.append(Finding(FAIL, "state.in-git", f"{path} {how[kind]}: local state must never be shared "
                             "through the work tree", path, hint))
    main = ws.place.main_worktree
    special = ignorefile.special(ws.paths.ignore_file)
    if special is not None:  # git's own look at the ignore rules would wait on a FIFO: not asked
        found.append(Finding(FAIL, "state.ignore-file", special, ws.display(ws.paths.ignore_file),
                             ignorefile.removal_hint(ws.paths.ignore_file)))
        main = None
    if main is not None and state_exists:
        samples = [ws.paths.ledger, ws.paths.task_file("t"), os.path.join(ws.paths.checkpoints, "r.md"),
                   os.path.join(ws.paths.handoffs, "r.md"), os.path.join(ws.paths.context_dir("t"), "continuity.json")]
        loose = [os.path.relpath(p, main) for p in samples]
        ignored = held.ignored(ws.place, loose)
        loose = [p for p in loose if p not in ignored]
        if loose:
            local = ws.display(ws.paths.local)
            found.append(Finding(WARN, "state.not-ignored", f"git does not ignore {', '.join(loose)}: one "
                                 "`git add -A` would stage local state", local,
                                 f"restore the ignore file: `printf '*\\n' > {local}/.gitignore`"))
    return found or [Finding(OK, "git", "no state file is tracked or staged; the state directory is ignored")]


def check_store(ws: Workspace, scan: Scan) -> list[Finding]:
    found = list(scan.findings)
    if not found:
        what = f"{scan.entries} entries" if scan.exists else "no local state yet"
        found.append(Finding(OK, "store", f"state directory: {what}; modes, links and records are sound"))
    for directory in RECORD_DIRS:
        found.append(retention(ws, directory, scan.counts[directory]))
    return found


def retention(ws: Workspace, directory: str, count: int) -> Finding:
    """Retention is reported, never enforced: nothing is ever deleted."""
    section = RETENTION[directory]
    limit = ws.config.get(section, "retention_max_files")
    if count > limit:
        return Finding(WARN, f"retention.{directory}", f"{count} {section} records in the store, over "
                       f"{section}.retention_max_files ({limit}); nothing is deleted",
                       ws.display(ws.paths.directory(directory)),
                       f"archive old records yourself if you want fewer, or raise {section}.retention_max_files "
                       "in .ai/config.yaml")
    return Finding(OK, f"retention.{directory}", f"{count} {section} records (limit {limit})")


_RECORD_PREFIXES = tuple(f"{d}/" for d in CHECKED_DIRS)


def check_ledger(ws: Workspace, scan: Scan) -> list[Finding]:
    """One streamed pass: torn lines, the hash chain, and every event that names a record, checked against the store."""
    path = ws.paths.ledger
    shown = ws.display(path)
    chain = ledger.Chain()
    dropped: list[int] = []  # the first few line numbers; `dropped_count` counts them all (memory stays bounded)
    dropped_count = 0
    named: dict[str, tuple[int, str | None]] = {}
    events = 0
    try:
        for number, line in enumerate(ledger.iter_lines(path), 1):
            obj = ledger.parse_line(line)
            if obj is None:
                if line.strip():
                    dropped_count += 1
                    if len(dropped) < 5:
                        dropped.append(number)
                continue
            events += 1
            chain.feed(line, obj)
            rel = obj.get("path")
            if isinstance(rel, str) and rel.startswith(_RECORD_PREFIXES):
                named.setdefault(rel, (obj["seq"], obj.get("sha256")))
    except OSError as exc:
        return [Finding(FAIL, "ledger.unreadable", f"cannot read {shown}: {exc.strerror}", shown,
                        "it must be a regular file (not a link) with mode 0600")]
    except MajordomusError as exc:
        return [Finding(FAIL, "ledger.unreadable", exc.message, shown, exc.hint)]
    found = []
    if dropped:
        where = ", ".join(str(n) for n in dropped) + (", …" if dropped_count > len(dropped) else "")
        found.append(Finding(WARN, "ledger.dropped", f"{shown}: {dropped_count} torn or invalid line(s) skipped "
                             f"(line {where})", shown, "a writer was killed mid-append or the file was edited; "
                             "replay skips these lines and appends continue, but the events they held are lost"))
    for brk in chain.breaks:
        found.append(Finding(FAIL, "ledger.chain", f"{shown}: hash chain broken at {brk}: a line was edited, "
                             "removed or inserted", shown, "the ledger is append-only: restore it from a backup; "
                             "`majordomus ledger --verify` shows every break"))
    digests = scan.records
    for rel, (seq, digest) in named.items():
        stored = digests.get(rel, "missing")
        if stored is None or stored == digest:
            continue
        record = ws.display(ws.paths.absolute(rel))
        if stored == "missing":
            found.append(Finding(FAIL, "ledger.record-missing", f"ledger event seq {seq} names {record}, which is "
                                 "not in the store", record, "a record was deleted or moved: put it back (from a "
                                 "backup, or `majordomus sync pull --full` when a remote has it)"))
        elif digest is not None:
            found.append(Finding(FAIL, "record.changed", f"{record} differs from what ledger event seq {seq} "
                                 f"recorded (sha256 {str(digest)[:16]}…, now {stored[:16]}…)", record,
                                 "records are immutable: restore the original bytes from a backup"))
    for rel in scan.records:
        if rel not in named:
            record = ws.display(ws.paths.absolute(rel))
            found.append(Finding(WARN, "record.no-event", f"{record} has no ledger event", record,
                                 "its event never landed: the write failed part way (its command said so, and "
                                 "the same command again completes it), the command was killed before it "
                                 "(SIGKILL, a power loss; a `sync pull` stopped part way is completed by "
                                 "`majordomus sync pull` again), a torn ledger line, or the file was copied in by "
                                 "hand; the record itself is listed and searched as it is"))
    if not found:
        what = f"{events} events, hash chain intact" if events else "no ledger yet"
        found.append(Finding(OK, "ledger", f"{what}; every record has its event and matches it"))
    return found


def stale(ws: Workspace, task: tasks.Task) -> Finding | None:
    """An active task gone quiet, by the one staleness rule (`tasks.staleness`)."""
    limit = ws.config.get("checkpoint", "stale_after_minutes")
    try:
        problem = tasks.staleness(task, limit, clock.now_iso())
    except (TypeError, ValueError):
        problem = "has no readable checkpoint or start time"  # an unreadable time cannot prove freshness
    if problem is None:
        return None
    where = f"worktree {task.worktree} on " + (f"branch {task.branch}" if task.branch else "a detached HEAD")
    return Finding(WARN, "task.stale", f"active task `{task.id}` {problem} (checkpoint.stale_after_minutes is {limit})",
                   ws.display(ws.paths.task_file(task.id)),
                   f"in {where}, pipe what holds now into `majordomus checkpoint`, or `majordomus task done {task.id}`")


def check_tasks(ws: Workspace, task_ids: list[str]) -> list[Finding]:
    found = []
    for task_id in sorted(task_ids):
        try:
            task = tasks.load(ws, task_id)
        except Exception as exc:
            shown = ws.display(ws.paths.task_file(task_id))
            message = exc.message if isinstance(exc, MajordomusError) else f"the task record {shown} is unreadable: " \
                f"{type(exc).__name__}"
            found.append(Finding(FAIL, "task.unreadable", message, shown, "restore the task record from a "
                                 "backup; the ledger still holds its history (`majordomus ledger --task ID`)"))
            continue
        if task.status == "active":
            finding = stale(ws, task)
            if finding is not None:
                found.append(finding)
        double = claims.double_claim(task.claims)  # design §18
        if double:
            found.append(Finding(FAIL, "task.double-claim", f"task `{task.id}` is held by {len(double)} workers "
                                 "at once: " + "; ".join(escape(claims.describe(c)) for c in double),
                                 ws.display(ws.paths.task_file(task.id)),
                                 f"agree who continues; the other runs `majordomus task release {task.id}` "
                                 f"and syncs; or the one where it is not active takes it over: `majordomus task resume {task.id} --force`"))
    return found or [Finding(OK, "tasks", f"{len(task_ids)} task record(s) readable; no active task is stale, "
                             "none is claimed twice")]


def check_continuity(ws: Workspace, task_ids: list[str]) -> list[Finding]:
    """Continuity integrity of every task that has one (the continuity module owns the rule)."""
    found = []
    for task_id in sorted(task_ids):
        shown = ws.display(os.path.join(ws.paths.context_dir(task_id), "continuity.json"))
        try:
            problems = list(continuity.validate(ws, task_id))
        except (MajordomusError, ValueError, OSError) as exc:
            problems = [getattr(exc, "message", None) or str(exc)]
        for problem in problems:
            found.append(Finding(FAIL, "continuity.integrity", f"continuity of `{task_id}`: {problem}", shown,
                                 f"inspect it with `majordomus context validate {task_id}`; if the change is not "
                                 f"one to keep, move context/{task_id} away: brief and resume work without it "
                                 "(the records and the ledger are the authority)"))
    try:
        unlogged = continuity.unlogged_pins(ws, task_ids)
    except (MajordomusError, ValueError, OSError):
        unlogged = []  # the integrity findings above say why
    for task_id, kind, pin in unlogged:
        found.append(Finding(WARN, "continuity.pin-no-event", f"continuity of `{task_id}`: {kind} pin {escape(pin['id'])} "
                             "has no `context.pin` ledger event", ws.display(continuity.path_of(ws, task_id)),
                             "its event did not land (a write that failed): run the same `majordomus context pin` "
                             "again to write it"))
    return found or [Finding(OK, "continuity", f"{len(task_ids)} continuity file(s) intact")]


def run(ws: Workspace, config_findings: list[Finding]) -> list[Finding]:
    """Every check of design §11, in a stable order."""
    scan = scan_state(ws)
    found = list(config_findings)
    found += check_git(ws, scan.exists)
    found += check_store(ws, scan)
    found += check_ledger(ws, scan)
    found += check_tasks(ws, scan.tasks)
    found += check_continuity(ws, scan.continuity)
    found += boundaries.run(ws, scan.tasks)
    found += check_heads(ws, scan.tasks)
    found += check_briefings(ws, scan.tasks)
    found += check_hooks(ws)
    return found


def check_briefings(ws: Workspace, task_ids: list[str]) -> list[Finding]:
    """design §9: what `brief` names under MISSING RECORDS for each unfinished task, doctor fails too (found
    the same way: the task's index or its ledger events, not this scan, so that a ledger moved away still
    tells). A record another machine never shared here is no fault of this state: said, not failed."""
    from majordomus import brief

    found = []
    unshared = []
    for task_id, task in boundaries.loaded(ws, task_ids):
        if task.status == "done":
            continue
        try:
            gone = brief.split_gone(brief._gone(ws, task))
        except (MajordomusError, OSError, ValueError):
            continue  # an unreadable store or ledger is another check's finding
        for record in gone[0]:
            found.append(Finding(FAIL, "brief.missing-record", f"task `{task_id}` names {record.rel}, which is "
                                 f"{record.why}: its briefing is not complete and `check` exits 1",
                                 ws.display(ws.paths.absolute(record.rel)),
                                 "restore the record from a backup or another machine (`majordomus sync pull`); "
                                 f"else write what holds now with `majordomus checkpoint` in the task's worktree "
                                 f"(`majordomus brief {task_id}` names what is not shown)"))
        unshared += [f"`{task_id}` names {record.rel}" for record in gone[1]]
    if unshared:
        found.append(Finding(OK, "brief.not-shared", "not shared here by the machine that wrote them (a push "
                             "without --checkpoints), so not shown by brief: " + "; ".join(unshared)))
    return found


def check_heads(ws: Workspace, task_ids: list[str]) -> list[Finding]:
    """design §21: the records brief relates to the work tree (each unfinished task's latest checkpoint,
    handoff and runs) whose head, followed through the recorded amends and rebases, is no longer in the
    history of the branch it was written on. Silent where git cannot tell (no such branch, or a commit
    from another clone)."""
    from majordomus import rewrites
    from majordomus.git import status
    from majordomus.store import reading

    mapping = rewrites.load(ws)
    found = []
    contains: dict[tuple[str, str], bool | None] = {}  # records written at one head on one branch: asked once
    for task_id, task in boundaries.loaded(ws, task_ids):
        if task.status == "done":
            continue
        for rel in [r for r in (task.checkpoint, task.handoff) if r] + list(task.runs):
            try:
                meta = reading.read_record(ws, rel).meta
            except (OSError, ValueError, UnicodeDecodeError, MajordomusError):
                continue  # a missing record is the ledger check's finding
            head, branch = meta.get("head"), meta.get("branch")
            if not isinstance(head, str) or not isinstance(branch, str):
                continue  # written on an unborn branch or a detached HEAD: no branch to be in
            now, hows = mapping.follow(head)
            if (now, branch) not in contains:
                contains[(now, branch)] = status.branch_contains(ws.place, now, branch)
            if contains[(now, branch)] is not False:
                continue
            became = f" (rewritten as {now[:7]} {rewrites.by(hows)})" if hows else ""
            found.append(Finding(WARN, "record.head-unreachable",
                                 f"{rel} of task `{task_id}` was written at {head[:7]}{became}, no longer in the "
                                 f"history of branch {escape(branch)}", ws.display(ws.paths.absolute(rel)),
                                 "brief says so instead of counting commits; to follow amends and rebases from now "
                                 "on, `majordomus hooks install --runtime git`; record what holds now with "
                                 "`majordomus checkpoint`"))
    return found


def check_hooks(ws: Workspace) -> list[Finding]:
    """design §12: a hook its install receipt lists that no longer runs majordomus (a hook manager rewrote it)."""
    from majordomus.hooks import missing
    from majordomus.lite.statepaths import UnsafeDirectory

    try:
        gone = missing.missing(ws)
    except UnsafeDirectory:
        return []  # a link on the way to the receipts: the walk of the state names it (`state.symlink`)
    return [Finding(WARN, "hooks.missing", message, path=path, hint=hint) for _runtime, path, message, hint in gone]
