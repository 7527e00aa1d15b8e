"""`majordomus log`'s lines (design §22): one escaped line an entry for the terminal (coloured as git colours
ids, on a terminal only), and a GitHub-flavoured table for a CI job's `$GITHUB_STEP_SUMMARY`."""

from __future__ import annotations

from majordomus.history import NO_HEAD, Entry, Timeline
from majordomus.output import escape

YELLOW, GREEN, RED, RESET = "\x1b[33m", "\x1b[32m", "\x1b[31m", "\x1b[0m"


def text_line(entry: Entry, colour: bool = False, with_task: bool = False) -> str:
    """`time  kind  head  summary`, escaped (and coloured as git colours ids when asked)."""
    head = escape(entry.head or NO_HEAD)
    kind = f"{escape(entry.kind):<10}"  # an event's name and time are the ledger's text too
    summary = escape(entry.summary)
    if colour:
        head = YELLOW + head + RESET
        if entry.kind == "run":
            kind = (GREEN if " passed" in entry.summary else RED) + kind + RESET
    task = f"{escape(entry.task or '-'):<16}  " if with_task else ""
    return f"{escape(entry.at)}  {task}{kind}  {head}  {summary}".rstrip()


def markdown(timeline: Timeline) -> str:
    """A GitHub-flavoured table (for `$GITHUB_STEP_SUMMARY`): cells escaped, `|` made literal, `<`, `>` and
    `&` written as entities (GitHub renders HTML in a summary, and keeps comments)."""
    def cell(text: str) -> str:  # HTML too: a `<!--` in one summary would hide every row after it
        shown = escape(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        return shown.replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`")

    title = ", ".join(f"`{t}`" for t in timeline.tasks) or "no task"
    out = [f"### majordomus log: {title}", "", "| Time | Task | Kind | Head | Summary |",
           "| --- | --- | --- | --- | --- |"]
    for e in timeline.entries:
        out.append(f"| {cell(e.at)} | {cell(e.task or '-')} | {cell(e.kind)} | {cell(e.head or NO_HEAD)} | {cell(e.summary)} |")
    out.extend(f"\n_{cell(note)}_" for note in timeline.notes)
    return "\n".join(out) + "\n"
