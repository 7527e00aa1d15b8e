"""Console entry point: turns every failure into one clear line and an exit code (SPEC §14)."""

from __future__ import annotations

import os
import sys
TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: `hook compact` starts here, and typing is not free
if TYPE_CHECKING:
    from typing import NoReturn, Optional


def internal_error(exc: BaseException) -> int:
    if os.environ.get("MAJORDOMUS_DEBUG") == "1":
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__)
    sys.stderr.write(
        f"majordomus: internal error: {type(exc).__name__}: {exc}\n"
        "hint: rerun with MAJORDOMUS_DEBUG=1 for the traceback, and report it\n"
    )
    return 70


def _hook_args(args: list[str]) -> Optional[tuple[Optional[str], list[str]]]:
    """(directory of a leading `-C DIR`, the words after `hook`) when this is `majordomus hook …`."""
    directory = None
    i = 0
    while i < len(args) and args[i].startswith("-C"):
        if args[i] == "-C" and i + 1 < len(args):
            directory, i = args[i + 1], i + 2
        else:
            directory, i = args[i][2:], i + 1
    if i < len(args) and args[i] == "hook":
        return directory, args[i + 1:]
    return None


def run_hook(directory: Optional[str], words: list[str], args: list[str]) -> int:
    """Agent-runtime hooks are fail-open (SPEC §12): whatever happens, exit 0."""
    if words[:1] == ["compact"] and not {"-h", "--help"} & set(words):
        # The fast path: every compaction runs it, so the click CLI (and pygit2, yaml) is never imported.
        from majordomus import journal

        return journal.main(words[1:], directory)
    try:
        if words in (["session-start"], ["stop"]):
            # Every session start runs this: its floor is pygit2 and yaml, so click is not imported either.
            from majordomus import hooks

            hooks.run(words[0], directory)
            return 0
        run(args, hook=False)
    except BaseException:  # noqa: BLE001 - even an interrupt must not fail the agent's session
        pass
    return 0


def run(argv: Optional[list[str]] = None, hook: bool = True) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    hook_args = _hook_args(args) if hook else None
    if hook_args is not None:
        return run_hook(hook_args[0], hook_args[1], args)
    try:
        if args and args[-1] in ("checkpoint", "check", "--show", "--checkpoint"):
            from majordomus import fast

            code = fast.try_run(args)
            if code is not None:
                return code
        import click

        from majordomus.cli import cli

        try:
            return int(cli.main(args=args, prog_name="majordomus", standalone_mode=False) or 0)
        except click.ClickException as exc:
            exc.show()
            return exc.exit_code
        except click.Abort:
            sys.stderr.write("majordomus: interrupted\n")
            return 130
    except SystemExit as exc:  # click's own exits in non-standalone mode are returned, but be safe
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): not our failure; keep Python from complaining at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except Exception as exc:  # noqa: BLE001 - the last line of defence
        return internal_error(exc)


def main(argv: Optional[list[str]] = None) -> NoReturn:
    sys.exit(run(argv))
