"""`majordomus hook session-start|stop|compact|rewrite` (design §12, §21): what agent runtimes and git's
post-rewrite hook run. Always exits 0:
`majordomus.main` keeps this command fail-open, whatever happens in it."""

from __future__ import annotations

import sys

USAGE = """usage: majordomus hook session-start [--runtime claude|codex]
       majordomus hook stop
       majordomus hook compact --phase pre|post --runtime claude|codex
       majordomus hook rewrite amend|rebase < MAPPING

What agent runtimes run (SessionStart, Stop, PreCompact/PostCompact), and what git's post-rewrite hook
runs. Always exits 0.
"""


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
            sys.stderr.write((f"majordomus hook: unknown hook `{name}`\n" if name else "") + USAGE)
        return 0
    from majordomus.cli import argv as parsing

    if name == "session-start":
        spec = parsing.Spec("usage: majordomus hook session-start [--runtime claude|codex]\n\n"
                            "SessionStart: print the identity and the briefing as the runtime's context, cut to\n"
                            "that runtime's budget (claude: UTF-16 units; codex: ceil(bytes/4) tokens).\n",
                            choices={"--runtime": ("claude", "codex", "gemini", "copilot")})
    else:
        spec = parsing.Spec("usage: majordomus hook stop\n\nStop: record `session.stop` (bookkeeping only).\n")
    args = parsing.parse(spec, argv[1:])
    if args is None:
        return 0
    from majordomus.hooks import session

    session.run(name, str(args.get("runtime", "claude")))
    return 0


REWRITE_USAGE = """usage: majordomus hook rewrite amend|rebase < MAPPING

What git's post-rewrite hook runs (`hooks install --runtime git`): appends one `git.rewrite` ledger event
with the `<old> <new>` lines git gives on stdin (at most 10,000 lines, 1 MiB; 3,000 pairs kept), so that
brief, run evidence and doctor follow a record's head through the amend or rebase. Always exits 0.
"""


def rewrite(argv: list[str]) -> int:
    """The post-rewrite hook: git's mapping, bounded, into one ledger event; fail-open like every hook."""
    import os

    if argv[:1] in (["-h"], ["--help"]):
        sys.stdout.write(REWRITE_USAGE)
        return 0
    from majordomus import rewrites

    if len(argv) != 1 or argv[0] not in rewrites.HOWS:
        shown = " ".join(argv) or "nothing"
        sys.stderr.write(f"majordomus hook rewrite: expected amend or rebase, got {shown[:80]!r}; nothing was "
                         "recorded\n" + REWRITE_USAGE)
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
