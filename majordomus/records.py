"""A record is front matter computed from git plus a body that prose supplies; this module keeps them apart."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Iterable

from majordomus.errors import Refused

SCHEMA_VERSION = 1
IDENTITY_KEYS = (
    "schema_version",
    "kind",
    "timestamp",
    "task",
    "profile",
    "owner",
    "repo_id",
    "worktree",
    "branch",
    "head",
    "worktree_state",
    "changed_files",
    "changed_files_omitted",
)

_IDENTITY_SET = frozenset(IDENTITY_KEYS)


def identity_field(line: str) -> tuple[str, str] | None:
    """(field, as written) when the line's first word, after indentation and an optional `-`/`*` bullet,
    is an identity key followed by `:`; `_`, `-` or one space may join its words, in any case."""
    rest = line.lstrip(" \t")
    if rest[:1] in ("-", "*"):
        rest = rest[1:].lstrip(" \t")
    colon = rest.find(":")
    if colon <= 0:
        return None
    written = rest[:colon].rstrip(" \t")
    key = written.lower().replace("-", "_").replace(" ", "_")
    return (key, written) if key in _IDENTITY_SET else None


@dataclass(frozen=True)
class Body:
    text: str  # normalised, without a trailing newline
    lines: int


def normalise(raw: bytes, *, what: str, max_lines: int | None, max_bytes: int) -> Body:
    """Apply the body rules of SPEC §6 steps 2–4, in order; refuse rather than repair."""
    if len(raw) > max_bytes:
        raise Refused(
            f"the {what} body is over {max_bytes} bytes (the limit is {max_bytes}); nothing was written",
            _shorter_hint(what),
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad_line = raw[: exc.start].count(b"\n") + 1
        raise Refused(
            f"the {what} body is not valid UTF-8 (line {bad_line}, byte {exc.start}); nothing was written",
            "convert it to UTF-8 (e.g. `iconv -t UTF-8`) and pipe it again",
        ) from exc
    text = text.replace("\r\n", "\n")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    for number, line in enumerate(lines, 1):
        for char in line:
            if char != "\t" and unicodedata.category(char) == "Cc":
                raise Refused(
                    f"the {what} body has a control character U+{ord(char):04X} on line {number}; "
                    "nothing was written",
                    "remove NUL bytes, terminal escapes and other control characters (tab and newline are fine)",
                )
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    body = "\n".join(lines)
    if max_lines is not None and len(lines) > max_lines:
        raise Refused(
            f"the {what} body has {len(lines)} lines; the limit is {max_lines}; nothing was written",
            _shorter_hint(what),
        )
    refuse_identity(lines, what)
    return Body(text=body, lines=len(lines))


def _shorter_hint(what: str) -> str:
    if what == "checkpoint":
        return (
            "a checkpoint is a few lines of what holds now: write a handoff instead "
            "(`majordomus handoff`) for anything longer"
        )
    return f"shorten the {what}; the limits are in .ai/config.yaml"


def refuse_identity(lines: list[str], what: str) -> None:
    """Prose does not get to write its own identity (SPEC §6 step 4)."""
    if lines and lines[0].strip() == "---":
        raise Refused(
            f"the {what} body starts with `---` (front matter); majordomus computes the front matter itself; "
            "nothing was written",
            "remove the front matter block and pipe only the note",
        )
    for number, line in enumerate(lines, 1):
        found = identity_field(line)
        if found:
            field, written = found
            raise Refused(
                f"the {what} body sets the identity field `{field}` on line {number}; "
                "identity is computed from git, never written by prose; nothing was written",
                f"reword line {number} so it does not start with `{written}:`",
            )


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return _NOT_YAML_PRINTABLE.sub(_escape, json.dumps(str(value), ensure_ascii=False))


# JSON leaves these raw, but YAML either refuses them or reads them as line breaks: escape them.
_NOT_YAML_PRINTABLE = re.compile("[\x7f-\x9f\u2028\u2029\ufffe\uffff\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def emit_yaml(fields: Iterable[tuple[str, Any]]) -> str:
    """A flat YAML mapping whose values are JSON scalars or lists of them: valid YAML, cheap to read back."""
    out = []
    for key, value in fields:
        if isinstance(value, (list, tuple)):
            if not value:
                out.append(f"{key}: []\n")
                continue
            out.append(f"{key}:\n")
            out.extend(f"- {_scalar(item)}\n" for item in value)
        else:
            out.append(f"{key}: {_scalar(value)}\n")
    return "".join(out)


_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*):(?: (.*))?$")


def parse_yaml(text: str) -> dict[str, Any]:
    """Read what `emit_yaml` wrote; anything else (an edited file) goes through a real YAML parser."""
    try:
        return _parse_flat(text)
    except ValueError:
        pass
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        raise ValueError(f"not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError("front matter is not a mapping")
    return {str(k): (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in data.items()}


def _parse_flat(text: str) -> dict[str, Any]:
    result: dict[str, Any] = {}
    current: list[Any] | None = None
    for line in text.splitlines():
        if line.startswith("- ") and current is not None:
            current.append(json.loads(line[2:]))
            continue
        match = _LINE.match(line)
        if not match:
            raise ValueError(line)
        key, value = match.groups()
        if value is None:
            current = result[key] = []
        else:
            current = None
            result[key] = json.loads(value)
    return result


_SUMMARY_LINE = re.compile(r'^([a-z_]+): (?:"([^"\\\n]*)"|(null))$', re.M)


def summary_fields(data: bytes, wanted: tuple[str, ...]) -> tuple[dict[str, Any], int]:
    """The scalar front-matter fields in `wanted` and the body's line count, without a full parse.

    Listing 100,000 records must cost little more than reading them: one regular-expression pass over
    the front matter picks out plain strings and nulls. Anything unusual goes through `split`.
    """
    text = data.decode("utf-8")
    end = text.find("\n---\n", 3)
    if not text.startswith("---\n") or end < 0:
        raise ValueError("no front matter")
    # identity keys come first; the changed-files list and anything after it is not needed here
    stop = text.find("\nchanged_files:", 3, end)
    meta = {key: (None if null else value)
            for key, value, null in _SUMMARY_LINE.findall(text, 4, end + 1 if stop < 0 else stop + 1)}
    if len(meta) < len(wanted) or not meta.keys() >= set(wanted):
        meta = split(data)[0]
    return meta, _count_lines(text[end + 5 :])


def _count_lines(body: str) -> int:
    if not body:
        return 0
    return body.count("\n") + (0 if body.endswith("\n") else 1)


def render(fields: Iterable[tuple[str, Any]], body: str) -> bytes:
    text = "---\n" + emit_yaml(fields) + "---\n"
    if body:
        text += body + "\n"
    return text.encode("utf-8")


def split(data: bytes) -> tuple[dict[str, Any], str]:
    """Front matter and body of a stored record."""
    text = data.decode("utf-8")
    if not text.startswith("---\n"):
        raise ValueError("no front matter")
    end = text.find("\n---\n", 3)
    if end < 0:
        raise ValueError("front matter is not closed")
    meta = parse_yaml(text[4 : end + 1])
    body = text[end + 5 :]
    return meta, body[:-1] if body.endswith("\n") else body


def branch_slug(branch: str | None) -> str:
    if branch is None:
        return "detached"
    return re.sub(r"[^A-Za-z0-9._-]", "-", branch)[:64]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def record_name(timestamp_compact: str, branch: str | None, head: str | None, digest: str) -> str:
    head7 = (head or "0" * 7)[:7]
    return f"{timestamp_compact}--{branch_slug(branch)}--{head7}--{digest[:16]}.md"


_HEX = frozenset("0123456789abcdef")


def name_digest(name: str) -> str | None:
    """The digest a record's file name claims, or None when the name is not a record name:
    `YYYYMMDDTHHMMSSZ--<slug>--<7 hex>--<16 hex>.md`. Checked by hand: doctor asks once per record."""
    if len(name) < 49 or not name.endswith(".md") or name[16:18] != "--" or name[-21:-19] != "--":
        return None
    digest, head = name[-19:-3], name[-28:-21]
    if name[-30:-28] != "--" or name[8] != "T" or name[15] != "Z":
        return None
    if not (name[:8].isascii() and name[:8].isdigit() and name[9:15].isascii() and name[9:15].isdigit()):
        return None
    if not (_HEX.issuperset(digest) and _HEX.issuperset(head)):
        return None
    return digest
