"""`majordomus hook session-start|stop|compact` (design §12): what agent runtimes run. Always exits 0:
`majordomus.main` keeps this command fail-open, whatever happens in it."""

from __future__ import annotations

import sys

from majordomus.cli import argv as parsing

USAGE = """usage: majordomus hook session-start [--runtime claude|codex|gemini|copilot]
       majordomus hook stop [--runtime claude|codex|gemini|copilot]
       majordomus hook compact --phase pre|post --runtime claude|codex|gemini|copilot

What agent runtimes run (SessionStart, Stop, PreCompact/PostCompact). Always exits 0.
"""

# Each hook's options, declared once: parsed here (compact parses its own in majordomus.hooks.compact, on
# the lite layer alone) and offered by completion.
RUNTIMES = ("claude", "codex", "gemini", "copilot")  # the first is the default
SUBCOMMANDS = {
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
}


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
            # fail-open: a runtime that runs an unknown hook gets exit 0, and the one error format on stderr
            what = f"unknown hook `{name}`" if name else "a hook is needed: session-start, stop or compact"
            sys.stderr.write(f"majordomus: {what}\nhint: usage: majordomus hook session-start|stop|compact; see "
                             "`majordomus hook --help`\n")
        return 0
    args = parsing.parse(SUBCOMMANDS[name], argv[1:])
    if args is None:
        return 0
    from majordomus.hooks import session

    session.run(name, str(args.get("runtime", "claude")))
    return 0
