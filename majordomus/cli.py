"""The command line: declares commands and options, calls the core, prints. No logic lives here."""

from __future__ import annotations

import os
import sys
from typing import Any, Optional

import click

from majordomus import __version__
from majordomus.errors import MajordomusError, UsageError
from majordomus.output import BlockWriter, emit, emit_json, note, table


class Group(click.Group):
    """Turns a MajordomusError into its message on stderr and its exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MajordomusError as exc:
            click.echo(exc.render(), err=True)
            ctx.exit(exc.code)


# Feature commands live in majordomus/commands/*.py and are imported only when named, so that a
# command pays for nothing but its own imports. A module that is not present is simply not listed.
LAZY_COMMANDS = {
    "handoff": ("majordomus.commands.handoff", "handoff"),
    "context": ("majordomus.commands.context", "context"),
    "brief": ("majordomus.commands.context", "brief"),
    "hook": ("majordomus.commands.hooks", "hook"),
    "hooks": ("majordomus.commands.hooks", "hooks"),
    "doctor": ("majordomus.commands.doctor", "doctor"),
    "watch": ("majordomus.commands.doctor", "watch"),
    "sync": ("majordomus.commands.sync", "sync"),
}


class RootGroup(Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        names = set(super().list_commands(ctx))
        names.update(name for name in LAZY_COMMANDS if self._lazy(name) is not None)
        return sorted(names)

    def get_command(self, ctx: click.Context, cmd_name: str) -> Optional[click.Command]:
        return super().get_command(ctx, cmd_name) or self._lazy(cmd_name)

    @staticmethod
    def _lazy(name: str) -> Optional[click.Command]:
        spec = LAZY_COMMANDS.get(name)
        if spec is None:
            return None
        import importlib

        try:
            module = importlib.import_module(spec[0])
        except ModuleNotFoundError as exc:
            if exc.name != spec[0]:
                raise
            return None
        command = getattr(module, spec[1], None)
        return command if isinstance(command, click.Command) else None


def _workspace() -> Any:
    from majordomus.workspace import Workspace

    return Workspace.open()


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")


@click.group(cls=RootGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-C", "directory", metavar="DIR", help="Run as if majordomus was started in DIR (like git -C).")
@click.version_option(__version__, prog_name="majordomus")
def cli(directory: Optional[str]) -> None:
    """Keep the work state of a task in git-native records: checkpoints, handoffs, continuity, briefings."""
    if directory:
        try:
            os.chdir(directory)
        except OSError as exc:
            raise UsageError(f"cannot change to {directory}: {exc.strerror}", "pass an existing directory to -C")


def _group_of(name: str, help_text: str) -> click.Group:
    return cli.group(name, cls=Group, help=help_text)(lambda: None)


# ---------------------------------------------------------------- init


@cli.command("init")
def init_cmd() -> None:
    """Create .ai/config.yaml and .ai/profiles/ from the template; never overwrites."""
    from majordomus import init

    for path, what in init.init(_workspace()):
        emit(f"{what}: {path}")


# ---------------------------------------------------------------- tasks

task_group = _group_of("task", "Start, show, list, resume and finish tasks.")


def _task_lines(task: Any) -> str:
    return "\n".join(f"{key}: {'' if value is None else value}" for key, value in task.to_dict().items())


@task_group.command("start")
@click.argument("task_id", metavar="ID")
@click.option("--title", help="A short title (default: the id).")
@click.option("--objective", help="What the task must achieve; seeds its continuity.")
@click.option("--profile", help="The worker profile (default: config `profile`).")
@click.option("--owner", help="Who owns it (default: MAJORDOMUS_OWNER, git user.email, login).")
@click.option("--from", "from_task", metavar="TASK", help="Seed continuity with the pins of TASK.")
def task_start(task_id: str, title: Optional[str], objective: Optional[str], profile: Optional[str],
               owner: Optional[str], from_task: Optional[str]) -> None:
    """Start task ID, active in this worktree and branch (pauses the one active here)."""
    from majordomus import tasks

    ws = _workspace()
    task = tasks.start(ws, task_id, title=title, objective=objective, profile=profile, owner=owner,
                       from_task=from_task)
    emit(f"started {task.id} in {ws.where()}")


@task_group.command("show")
@click.argument("task_id", metavar="[ID]", required=False)
@json_option
def task_show(task_id: Optional[str], as_json: bool) -> None:
    """Show a task (default: the active task here)."""
    from majordomus import tasks

    ws = _workspace()
    task = tasks.load(ws, tasks.validate_id(task_id)) if task_id else tasks.active(ws)
    if as_json:
        emit_json(task.to_dict())
    else:
        emit(_task_lines(task))


@task_group.command("list")
@json_option
def task_list(as_json: bool) -> None:
    """List every task."""
    from majordomus import tasks

    items = tasks.all_tasks(_workspace())
    if as_json:
        emit_json([t.to_dict() for t in items])
        return
    rows = [[t.id, t.status, t.branch or "(detached)", t.checkpoint_at or "-", t.title] for t in items]
    if rows:
        emit(table([["ID", "STATUS", "BRANCH", "CHECKPOINT", "TITLE"]] + rows))


@task_group.command("resume")
@click.argument("task_id", metavar="ID")
@click.option("--force", is_flag=True, help="Take over a task active in another worktree or branch.")
def task_resume(task_id: str, force: bool) -> None:
    """Make a paused or handed-off task active in this worktree and branch."""
    from majordomus import tasks

    ws = _workspace()
    task = tasks.resume(ws, task_id, force=force)
    emit(f"resumed {task.id} in {ws.where()}")


@task_group.command("done")
@click.argument("task_id", metavar="[ID]", required=False)
def task_done(task_id: Optional[str]) -> None:
    """Mark a task done (default: the active task here)."""
    from majordomus import tasks

    task = tasks.done(_workspace(), task_id)
    emit(f"done {task.id}")


# ---------------------------------------------------------------- checkpoint


@cli.command("checkpoint")
@click.option("--show", is_flag=True, help="Print the newest checkpoint of the active task here.")
@click.option("--list", "list_", is_flag=True, help="List every checkpoint record, newest first.")
@json_option
@click.pass_context
def checkpoint_cmd(ctx: click.Context, show: bool, list_: bool, as_json: bool) -> None:
    """Record what holds now: a few lines from stdin, identity computed from git."""
    from majordomus import checkpoint, fast, paths

    if show and list_:
        raise UsageError("--show and --list do not go together", "pick one")
    if as_json and not (show or list_):
        raise UsageError("--json goes with --show or --list", "add --show or --list")
    ws = _workspace()
    if show and not as_json:
        ctx.exit(fast.show(ws))
    if show:
        path = checkpoint.latest(ws)
        emit_json(checkpoint.describe(ws, path) if path else None)
        return
    if list_:
        _print_records(ws, ws.paths.checkpoints if paths.check_readable(ws.paths) else None, as_json)
        return
    ctx.exit(fast.write(ws))


def _print_records(ws: Any, directory: Optional[str], as_json: bool) -> None:
    """Stream the records of `directory`, newest first (a large store never sits in memory)."""
    import json

    from majordomus import checkpoint

    found = checkpoint.summaries(ws, directory) if directory else iter(())
    out = BlockWriter(sys.stdout)
    if as_json:
        out.write("[")
        for i, d in enumerate(found):
            out.write(("," if i else "") + "\n  " + json.dumps(d, ensure_ascii=False))
        out.write("\n]\n" if out.written > 1 else "]\n")
        out.flush()
        return
    for d in found:
        out.write(f"{d.get('timestamp')}  {d.get('task')}  {d.get('branch') or '(detached)'}  "
                  f"{(d.get('head') or '0000000')[:7]}  {d.get('lines', '?')} lines  {d['path']}\n")
    out.flush()


@cli.command("check")
@click.option("--checkpoint", "as_checkpoint", is_flag=True,
              help="Record an empty checkpoint: move the task's checkpoint time to now.")
@click.pass_context
def check_cmd(ctx: click.Context, as_checkpoint: bool) -> None:
    """Is the active task's checkpoint fresh? Exit 0 fresh, 1 stale or none."""
    from majordomus import fast

    ctx.exit(fast.check(_workspace(), touch=as_checkpoint))


# ---------------------------------------------------------------- ledger

_LEDGER_COMMON = frozenset(("v", "seq", "at", "event", "task", "worktree", "branch", "prev"))


@cli.command("ledger")
@json_option
@click.option("--task", "task_id", metavar="T", help="Only the events of task T.")
@click.option("--verify", is_flag=True, help="Check the hash chain; exit 1 when it is broken.")
@click.pass_context
def ledger_cmd(ctx: click.Context, as_json: bool, task_id: Optional[str], verify: bool) -> None:
    """Print the ledger's events, or verify its hash chain."""
    import json

    from majordomus import ledger

    ws = _workspace()
    if verify:
        result = ledger.verify(ws.paths.ledger)
        if as_json:
            emit_json({"ok": result.ok, "events": result.events, "dropped_lines": result.dropped_lines,
                       "breaks": result.breaks})
        else:
            for brk in result.breaks:
                emit(f"broken: {brk}")
            emit(f"{'ok' if result.ok else 'BROKEN'}: {result.events} events, "
                 f"{result.dropped_lines} dropped lines")
        if not result.ok:
            ctx.exit(1)
        return
    # Streamed: a ledger of a million events is printed without holding it, and --json passes each
    # validated line through as it stands instead of decoding and re-encoding it.
    dropped = [0]
    out = BlockWriter(sys.stdout)
    shown = 0
    if as_json:
        out.write('{"events": [')
    for line, ev in ledger.scan(ws.paths.ledger, dropped):
        if task_id is not None and ev.get("task") != task_id:
            continue
        if as_json:
            out.write(("," if shown else "") + "\n  " + line.decode("utf-8").strip())
        else:
            extra = {k: v for k, v in ev.items() if k not in _LEDGER_COMMON}
            detail = " ".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in extra.items())
            out.write(f"{ev['seq']:>6}  {ev['at']}  {ev['event']:<16} {ev.get('task') or '-'}  {detail}".rstrip()
                      + "\n")
        shown += 1
    if as_json:
        out.write(("\n" if shown else "") + f'], "dropped_lines": {dropped[0]}}}\n')
    out.flush()
    if dropped[0] and not as_json:
        note(f"majordomus: {dropped[0]} torn or invalid ledger lines skipped "
             "(run `majordomus doctor` for details)")