"""Console entry point: turns every failure into one clear line and an exit code (SPEC §14)."""

from __future__ import annotations

import os
import sys
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


def run(argv: Optional[list[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
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
