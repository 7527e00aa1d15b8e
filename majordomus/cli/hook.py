"""`majordomus hook session-start|stop|compact|rewrite` (design §12, §21): what agent runtimes and git's
post-rewrite hook run. Always exits 0:
`majordomus.main` keeps this command fail-open, whatever happens in it."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # `hook compact` starts here: typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any

USAGE = """usage: majordomus hook session-start [--runtime claude|codex|gemini|copilot]
       majordomus hook stop [--runtime claude|codex|gemini|copilot]
       majordomus hook compact --phase pre|post --runtime claude|codex|gemini|copilot
       majordomus hook rewrite amend|rebase < MAPPING

What agent runtimes run (SessionStart, Stop, PreCompact/PostCompact), and what git's post-rewrite hook
runs. Always exits 0.
"""

REWRITE_USAGE = """usage: majordomus hook rewrite amend|rebase < MAPPING

What git's post-rewrite hook runs (`hooks install --runtime git`): appends one `git.rewrite` ledger event
with the `<old> <new>` lines git gives on stdin (at most 10,000 lines, 1 MiB; 3,000 pairs kept), so that
brief, run evidence and doctor follow a record's head through the amend or rebase. Always exits 0.
"""

# Each hook's options, declared once: parsed here (compact parses its own in majordomus.hooks.compact, on
# the lite layer alone) and offered by completion.
RUNTIMES = ("claude", "codex", "gemini", "copilot")  # the first is the default
_DECLARED: dict[str, Any] = {}


def subcommands() -> dict[str, Any]:
    """Each hook's options (`argv.Spec`), built when asked: `hook compact` runs at every compaction and
    needs none of them."""
    if not _DECLARED:
        from majordomus.cli import argv as parsing

        _DECLARED.update(_declare(parsing))
    return _DECLARED


def _declare(parsing: Any) -> dict[str, Any]:
    return {
        "session-start": parsing.Spec(
            "usage: majordomus hook session-start [--runtime claude|codex|gemini|copilot]\n\n"
            "SessionStart: print the identity and the briefing as the runtime's context, in the runtime's own\n"
            "shape and budget (claude: UTF-16 units; codex: ceil(bytes/4) tokens; gemini, copilot: bytes).\n",
            choices={"--runtime": RUNTIMES}, described={"--runtime": "the runtime whose shape and budget apply"}),
        "stop": parsing.Spec("usage: majordomus hook stop [--runtime claude|codex|gemini|copilot]\n\n"
                             "Stop: record `session.stop` (bookkeeping only).\n",
                             choices={"--runtime": RUNTIMES}, described={"--runtime": "the runtime that stops"}),
        "compact": parsing.Spec(
            "usage: majordomus hook compact --phase pre|post --runtime claude|codex|gemini|copilot\n\n"
            "PreCompact/PostCompact: append one line to the compaction journal.\n",
            choices={"--phase": ("pre", "post"), "--runtime": RUNTIMES},
            described={"--phase": "before or after the compaction", "--runtime": "the runtime that compacts"}),
        "rewrite": parsing.Spec(REWRITE_USAGE),
    }


def main(argv: list[str]) -> int:
    name = argv[0] if argv else ""
    if name == "compact":
        # Every compaction runs this: its own few options, and nothing but the lite layer behind it.
        from majordomus.hooks import compact

        return compact.main(argv[1:])
    if name == "rewrite":
        return rewrite(argv[1:])
    if name not in ("session-start", "stop"):
        if name in ("-h", "--help"):
            sys.stdout.write(USAGE)
        else:
            # fail-open: a runtime that runs an unknown hook gets exit 0, and the one error format on stderr
            from majordomus.output import escape

            what = f"unknown hook `{escape(name[:80])}`" if name else "a hook is needed: session-start, stop, compact or rewrite"
            sys.stderr.write(f"majordomus: {what}\nhint: usage: majordomus hook session-start|stop|compact|rewrite; "
                             "see `majordomus hook --help`\n")
        return 0
    from majordomus.cli import argv as parsing

    args = parsing.parse(subcommands()[name], argv[1:])
    if args is None:
        return 0
    from majordomus.hooks import session

    session.run(name, str(args.get("runtime", "claude")))
    return 0




def rewrite(argv: list[str]) -> int:
    """The post-rewrite hook: git's mapping, bounded, into one ledger event; fail-open like every hook."""
    import os

    if argv[:1] in (["-h"], ["--help"]):
        sys.stdout.write(subcommands()["rewrite"].usage)
        return 0
    from majordomus import rewrites

    if len(argv) != 1 or argv[0] not in rewrites.HOWS:
        shown = " ".join(argv) or "nothing"
        from majordomus.output import escape

        sys.stderr.write(f"majordomus: hook rewrite: expected amend or rebase, got `{escape(shown[:80])}`; nothing "
                         "was recorded\nhint: usage: majordomus hook rewrite amend|rebase < MAPPING; see "
                         "`majordomus hook rewrite --help`\n")
        return 0
    stream = None if sys.stdin is None or sys.stdin.isatty() else sys.stdin.buffer  # by hand: no mapping
    data, unread = rewrites.read_stdin(stream)
    from majordomus.errors import MajordomusError
    from majordomus.workspace import Workspace

    try:
        ws = Workspace.open(lenient_config=True)
    except MajordomusError:
        return 0  # not a git work tree: nothing of ours here
    if os.path.isdir(ws.paths.root):  # a hook never creates the state directory
        rewrites.record(ws, argv[0], data, unread)
    return 0


def __getattr__(name: str) -> Any:
    """`SUBCOMMANDS`, for completion and the tests: the declared options, built on first use."""
    if name == "SUBCOMMANDS":
        return subcommands()
    raise AttributeError(name)
