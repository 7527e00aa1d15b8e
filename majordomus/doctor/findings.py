"""A doctor finding, the exit code findings make, and their three renderings: people, machines, GitHub Actions."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from majordomus.lite.textrules import escape

OK, WARN, FAIL = "ok", "warn", "fail"
LEVELS = (FAIL, WARN, OK)
# Human output shows this many findings of one code, then says how many more --json holds: a store copied
# with the wrong umask must not bury the one finding that matters under ten thousand lines.
SHOWN_PER_CODE = 10


@dataclass
class Finding:
    level: str  # ok | warn | fail
    code: str
    message: str
    path: str | None = None
    hint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def counts(findings: list[Finding]) -> dict[str, int]:
    out = dict.fromkeys(LEVELS, 0)
    for finding in findings:
        out[finding.level] += 1
    return out


def exit_code(findings: list[Finding], strict: bool) -> int:
    """0 when nothing fails (warnings allowed), 1 on any fail, and with `strict` on any warning too."""
    tally = counts(findings)
    return 1 if tally[FAIL] or (strict and tally[WARN]) else 0


def _summary(findings: list[Finding], strict: bool) -> str:
    tally = counts(findings)
    code = exit_code(findings, strict)
    verdict = "state is whole" if code == 0 else "problems found"
    if code == 1 and not tally[FAIL]:
        verdict = "warnings fail under --strict"
    return f"{tally[FAIL]} fail, {tally[WARN]} warn, {tally[OK]} ok: {verdict} (exit {code})"


def render_text(findings: list[Finding], strict: bool) -> str:
    """Grouped by level, worst first; each problem with its path and the next step."""
    lines: list[str] = []
    for level in LEVELS:
        group = [f for f in findings if f.level == level]
        if not group:
            continue
        lines.append(f"{level} ({len(group)})")
        shown: dict[str, int] = {}
        for finding in group:
            shown[finding.code] = shown.get(finding.code, 0) + 1
            if shown[finding.code] > SHOWN_PER_CODE:
                continue
            lines.append(f"  {finding.code}: {escape(finding.message)}")
            if finding.hint and level != OK:
                lines.append(f"    next: {escape(finding.hint)}")
        for code, number in shown.items():
            if number > SHOWN_PER_CODE:
                lines.append(f"  {code}: … and {number - SHOWN_PER_CODE} more (see `majordomus doctor --json`)")
    lines.append(_summary(findings, strict))
    return "\n".join(lines) + "\n"


def render_json(findings: list[Finding], strict: bool) -> str:
    document = {
        "ok": exit_code(findings, strict) == 0,
        "exit_code": exit_code(findings, strict),
        "strict": strict,
        "counts": counts(findings),
        "findings": [f.to_dict() for f in findings],
    }
    from majordomus.output import dumps

    return dumps(document, indent=2) + "\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(findings: list[Finding], strict: bool) -> str:
    """GitHub Actions workflow commands: `::error` for fails (and warnings under --strict), `::warning` else."""
    lines = []
    for finding in findings:
        if finding.level == OK:
            continue
        command = "error" if finding.level == FAIL or strict else "warning"
        props = [f"title={_escape_property('majordomus ' + finding.code)}"]
        if finding.path:  # a file's name may hold any byte: escaped as every stored field, then GitHub's way
            props.insert(0, f"file={_escape_property(escape(finding.path))}")
        # GitHub's own escaping turns the newlines into %0A; every other control is escaped as everywhere
        message = escape(finding.message + (f". Next: {finding.hint}" if finding.hint else ""), body=True)
        lines.append(f"::{command} {','.join(props)}::{_escape_data(message)}")
    lines.append("majordomus doctor: " + _summary(findings, strict))
    return "\n".join(lines) + "\n"
