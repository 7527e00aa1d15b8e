"""`majordomus help [COMMAND]`: the manual page of majordomus or of one command, as `git help` does.

The pages ship inside the package (`majordomus/man/`), so this opens the page of the copy that is running
with `man -l PAGE`, whatever installed it: pip in a venv and pipx also link the pages where `man` looks,
`uv tool install` does not, and a checkout has none there. Without `man` it prints the `--help` text
instead, with a note on stderr naming the page. With `man` it runs `man -l` whether or not stdout is a
terminal, as `git help` does: `man` itself drops the pager and the formatting when its output is a pipe,
so `majordomus help checkpoint | grep -- --show` searches the whole manual (docs/decisions.md, "The
command line").
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from majordomus.cli import argv as parsing

OPTIONS = parsing.Spec(
    "usage: majordomus help [COMMAND [SUBCOMMAND]]\n\n"
    "Open the manual page of majordomus, or of COMMAND, with `man -l` on the page inside the installed\n"
    "package (a SUBCOMMAND is described in its command's page); where `man` is missing, print the --help\n"
    "text instead.\n",
    argument="COMMAND", argument_kind="command")
SIMILAR = 0.75  # how alike a mistyped name must be to be suggested (`chekpoint`, not `nonexist` -> `context`)


def main(argv: list[str]) -> int:
    from majordomus.commands import COMMANDS
    from majordomus.errors import UsageError

    words = [i for i, arg in enumerate(argv) if not arg.startswith("-")]
    subcommand = None
    if len(words) >= 2 and argv[words[0]] in COMMANDS:
        subcommand = argv[words[1]]
        argv = argv[:words[1]] + argv[words[1] + 1:]
    args = parsing.parse(OPTIONS, argv)
    if args is None:
        return 0
    name = args.get("command")
    if name is not None and name not in COMMANDS:
        import difflib

        close = difflib.get_close_matches(str(name), COMMANDS, 1, SIMILAR)
        raise UsageError(f"`{name}` is not a majordomus command; there is no page for it",
                         f"did you mean `majordomus help {close[0]}`?" if close else "see `majordomus --help`")
    if subcommand is not None:
        _check_subcommand(str(name), subcommand)
    page_name = "majordomus" if name is None else f"majordomus-{name}"
    page = page_path(page_name)
    man = shutil.which("man")
    if man is not None:
        sys.stdout.flush()
        return subprocess.run([man, "-l", page], check=False).returncode
    sys.stderr.write(f"majordomus: `man` is not installed here: this is the --help text; the manual page "
                     f"is {page}\n")
    if name is None:
        from majordomus.main import usage

        sys.stdout.write(usage())
        return 0
    from majordomus.commands import lookup

    return lookup(str(name))([subcommand, "--help"] if subcommand is not None else ["--help"])


def _check_subcommand(name: str, subcommand: str) -> None:
    """A usage error unless `subcommand` is one of `name`'s (its page describes each one)."""
    from majordomus.cli import completion
    from majordomus.commands import lookup, summaries
    from majordomus.errors import UsageError

    node = completion.command_node(name, summaries(), lookup)
    known = sorted(node.subcommands) if node is not None else []
    if subcommand in known:
        return
    hint = f"{OPTIONS.usage.splitlines()[0]}; see `majordomus help --help`"  # the one format of a usage error
    if not known:
        raise UsageError(f"unexpected argument `{subcommand}`: `majordomus {name}` has no subcommands (its page "
                         f"is `majordomus help {name}`)", hint)
    raise UsageError(f"unexpected argument `{subcommand}`: `majordomus {name}` has no such subcommand (it has "
                     f"{', '.join(known)})", hint)


def page_path(name: str) -> str:
    """The file of manual page `name` inside the package that is running (not wherever `man` looks)."""
    import majordomus

    path = os.path.join(os.path.dirname(os.path.abspath(majordomus.__file__)), "man", f"{name}.1")
    if not os.path.isfile(path):
        from majordomus.errors import EnvironmentProblem

        raise EnvironmentProblem(f"the manual page {path} is missing from this installation",
                                 "reinstall majordomus (`pipx install .`, `uv tool install .` or `pip install .`)")
    return path
