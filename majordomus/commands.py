"""The one command table: name -> (module, function, one-line summary).

`majordomus.main` dispatches through it, `majordomus --help` lists it and completion reads it, so a command
exists in exactly one place. Only the module of the command being run is imported (design §16); this
module itself imports nothing.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: `hook compact` starts here, and typing is not free
if TYPE_CHECKING:
    from typing import Callable


def _command(module: str, function: str, summary: str) -> tuple[str, str, str]:
    return (module, function, summary)


COMMANDS: dict[str, tuple[str, str, str]] = {
    "init": _command("majordomus.cli.init", "main",
                     "Create .ai/config.yaml and .ai/profiles/ from the template; never overwrites"),
    "task": _command("majordomus.cli.task", "main", "Start, show, list, resume and finish tasks"),
    "checkpoint": _command("majordomus.cli.checkpoint", "main",
                           "Record what holds now: a few lines from stdin, identity computed from git"),
    "check": _command("majordomus.cli.check", "main",
                      "Is the active task's checkpoint fresh? Exit 0 fresh, 1 stale or none"),
    "handoff": _command("majordomus.cli.handoff", "main",
                        "Write, show and list handoffs: the bundle another worker continues from"),
    "context": _command("majordomus.cli.context", "main",
                        "Pin what a task must not forget; show, status and validate its continuity"),
    "brief": _command("majordomus.cli.brief", "main", "The briefing a worker resumes a task from"),
    "log": _command("majordomus.cli.log", "main",
                    "One timeline of a task, newest first: its events, records and its branch's commits"),
    "search": _command("majordomus.cli.search", "main",
                       "Find the records and pins that hold every WORD (or a regular expression), newest first"),
    "ledger": _command("majordomus.cli.ledger", "main", "Print the ledger's events, or verify its hash chain"),
    "doctor": _command("majordomus.cli.doctor", "main",
                       "Check that the state is whole; exit 1 on any failure (for CI)"),
    "watch": _command("majordomus.cli.watch", "main",
                      "Report new events, retention and staleness as they happen"),
    "hook": _command("majordomus.cli.hook", "main",
                     "What agent runtimes and git run: session-start, stop, compact, rewrite (always exit 0)"),
    "hooks": _command("majordomus.cli.hooks", "main", "Install or uninstall the hooks of Claude Code, Codex or git"),
    "sync": _command("majordomus.cli.sync", "main",
                     "Share tasks and records through a git remote: push, pull, status, compact"),
    "run": _command("majordomus.cli.run", "main",
                    "Run a command and record its result as evidence: exit status, output digest, last lines"),
    "mcp": _command("majordomus.cli.mcp", "main",
                    "Serve the task's records to MCP clients over stdio (needs majordomus[mcp])"),
    "completion": _command("majordomus.cli.completion", "main", "Print the completion script of bash, zsh or fish"),
    "help": _command("majordomus.cli.help", "main",
                     "Open the manual page of majordomus or of one command (its --help text without man)"),
}

# Commands that never fail: whatever goes wrong inside them, they exit 0 (the agent-runtime hooks).
FAIL_OPEN = frozenset(("hook",))


def summaries() -> dict[str, str]:
    """name -> one line, in the table's order."""
    return {name: command[2] for name, command in COMMANDS.items()}


def lookup(name: str) -> Callable[[list[str]], int]:
    """The function that serves `name`, importing its module (and only that one)."""
    module, function, _summary = COMMANDS[name]
    found: Callable[[list[str]], int] = getattr(__import__(module, fromlist=[function]), function)
    return found
