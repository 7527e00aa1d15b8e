"""`majordomus hook session-start|stop|compact` (design §12): what agent runtimes run. Always exits 0:
`majordomus.main` keeps this command fail-open, whatever happens in it."""

from __future__ import annotations

import sys

USAGE = """usage: majordomus hook session-start [--runtime claude|codex]
       majordomus hook stop
       majordomus hook compact --phase pre|post --runtime claude|codex

What agent runtimes run (SessionStart, Stop, PreCompact/PostCompact). Always exits 0.
"""


def main(argv: list[str]) -> int:
    name = argv[0] if argv else ""
    if name == "compact":
        # Every compaction runs this: its own few options, and nothing but the lite layer behind it.
        from majordomus.hooks import compact

        return compact.main(argv[1:])
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
