"""Where click reads a command's words (`params` hands it what it does not read itself): `--help`, and
usage errors in the one format of every parser."""

from __future__ import annotations

import click


def run(command: click.Command, argv: list[str], prog: str) -> int:
    """Run a click command as `main(argv) -> int`. Click's usage errors become ours (`majordomus: …` then
    `hint: …`, exit 2: the one format of every parser); every other error (a MajordomusError, an internal
    one) goes to the one boundary in `majordomus.main`, Ctrl-C and a reader gone (`| head`) included: the
    command is invoked as `Command.main` would, without its own handling of those (exit 1 for a broken pipe)."""
    try:
        with command.make_context(prog, list(argv)) as ctx:
            return int(command.invoke(ctx) or 0)
    except click.UsageError as exc:
        raise usage_error(exc, prog) from None
    except click.ClickException as exc:
        from majordomus.errors import MajordomusError

        raise MajordomusError(_quoted(exc), code=exc.exit_code) from None
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.Abort:  # click's word for Ctrl-C (a prompt's): the one boundary says what it means
        raise KeyboardInterrupt from None


def _quoted(exc: click.ClickException) -> str:
    """Click's message, which quotes the arguments it was given as they are: one line, escaped, so that an
    argument holding a line break cannot start a line of its own (the one boundary keeps a message's)."""
    from majordomus.output import escape

    return escape(exc.format_message())


def usage_error(exc: click.UsageError, prog: str) -> Exception:
    """Click's usage error in the one format: what is wrong, then the usage line of the (sub)command it
    concerns and where its help is. A group run without its subcommand names the subcommands."""
    from majordomus.errors import UsageError

    ctx = exc.ctx
    if ctx is None:
        return UsageError(_quoted(exc), f"see `{prog} --help`")
    path = ctx.command_path
    usage = "usage:" + ctx.get_usage().splitlines()[0].split(":", 1)[-1]
    message = _quoted(exc)
    # click 8.2 raises NoArgsIsHelpError for a group run bare; older versions say "Missing command"
    bare = getattr(click.exceptions, "NoArgsIsHelpError", ())
    if isinstance(ctx.command, click.Group) and (isinstance(exc, bare) or message.startswith("Missing command")):
        message = f"`{path}` needs a subcommand: {', '.join(ctx.command.commands)}"
    return UsageError(message, f"{usage}; see `{path} --help`")
