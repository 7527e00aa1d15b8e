"""A record is front matter computed from git plus a body that prose supplies; this module keeps them apart."""

from __future__ import annotations

import json
import re

from majordomus import secretscan
from majordomus.errors import Refused
from majordomus.lite import jsonbound, textrules
from majordomus.lite.lazyre import LazyRe
from majordomus.lite.names import branch_slug as branch_slug  # re-exported
from majordomus.lite.names import name_digest as name_digest
from majordomus.lite.names import record_name as record_name
from majordomus.lite.stdin import read_bounded

TYPE_CHECKING = False  # the hot paths read and write records: no typing at run time
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, BinaryIO

SCHEMA_VERSION = 1
MAX_RECORD_BYTES = 16 << 20  # a stored record is read up to this bound (design §2a)
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
    """(field, as written) when the line sets an identity key of design §4, as any person or YAML/Markdown
    reader would read it: the one identity rule of `lite.textrules` (markers, emphasis, look-alikes)."""
    return textrules.identity_key(line, _IDENTITY_SET)


class Body:
    __slots__ = ("lines", "text")

    def __init__(self, text: str, lines: int) -> None:
        self.text = text  # normalised, without a trailing newline
        self.lines = lines


def read_body(stream: BinaryIO | None, *, what: str, max_lines: int | None, max_bytes: int) -> Body:
    """A body read from `stream` with its bound (`max_bytes` + 1 bytes at most in memory), then its rules."""
    return normalise(read_bounded(stream, max_bytes), what=what, max_lines=max_lines, max_bytes=max_bytes,
                     more=stream)


def normalise(raw: bytes, *, what: str, max_lines: int | None, max_bytes: int,
              more: BinaryIO | None = None) -> Body:
    """Apply the body rules of design §6 steps 2–4, in order; refuse rather than repair. `more` is the
    stream `raw` was read from (bounded at `max_bytes` + 1): a refusal for size reads on to say the size."""
    if len(raw) > max_bytes:
        raise Refused(
            f"the {what} body is {_size(raw, more)} bytes; the limit is {max_bytes} bytes; nothing was written",
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
        bad = textrules.BODY_REFUSED.search(line)
        if bad is not None:
            raise Refused(
                f"the {what} body has a control character U+{ord(bad.group()):04X} on line {number}; "
                "nothing was written",
                "remove NUL bytes, terminal escapes, line separators (U+2028/U+2029) and other control "
                "characters (tab and newline are fine)",
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
    secret = secretscan.first_secret_line(lines)
    if secret is not None:
        number, kind = secret
        raise Refused(
            f"the {what} body looks like it carries a secret ({kind}) on line {number}; nothing was written",
            "never put secrets in a record: bodies reach the agent's context and the remote; say where the "
            "secret lives instead",
        )
    return Body(text=body, lines=len(lines))


_DRAIN_MAX = 64 << 20  # read (and drop) at most this much to measure an oversized body


def _size(raw: bytes, more: BinaryIO | None) -> str:
    """The body's real size in bytes, as far as a bounded read of the rest tells it."""
    total = len(raw)
    while more is not None and total < _DRAIN_MAX:
        chunk = more.read(65536)
        if not chunk:
            return str(total)
        total += len(chunk)
    return str(total) if more is None else f"over {_DRAIN_MAX}"


def _shorter_hint(what: str) -> str:
    if what == "checkpoint":
        return (
            "a checkpoint is a few lines of what holds now: write a handoff instead "
            "(`majordomus handoff`) for anything longer"
        )
    return f"shorten the {what}; the limits are in .ai/config.yaml"


def refuse_identity(lines: list[str], what: str) -> None:
    """Prose does not get to write its own identity (design §6 step 4)."""
    if lines and textrules.is_front_matter_fence(lines[0]):
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
                f"reword line {number} so it does not start with `{textrules.escape(written)}`",
            )


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    # A mapping (a claim in a task record) as a JSON object: a YAML flow mapping too.
    text = json.dumps(value if isinstance(value, dict) else str(value), ensure_ascii=False)
    if text.isascii() and text.isprintable():  # JSON escaped the rest of C0; DEL is the one it leaves
        return text
    return str(_NOT_YAML_PRINTABLE.sub(_escape, text))


# JSON leaves these raw, but YAML either refuses them or reads them as line breaks: escape them.
_NOT_YAML_PRINTABLE = LazyRe(f"[{textrules.NOT_YAML_PRINTABLE}]")


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


class DuplicateKey(ValueError):
    """A mapping that names one key twice: which of the two a reader takes is the reader's choice (YAML
    libraries take the last, others the first), so such a text is refused by every reader alike."""


def parse_yaml(text: str) -> dict[str, Any]:
    """Read what `emit_yaml` wrote; anything else (an edited file) goes through a real YAML parser."""
    try:
        return _parse_flat(text)
    except DuplicateKey:
        raise
    except ValueError:
        pass
    data = load_yaml(text)
    if not isinstance(data, dict):
        raise ValueError("front matter is not a mapping")
    return {str(k): (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in data.items()}


def load_yaml(text: str | bytes) -> Any:
    """YAML loaded safely, refusing aliases, anchors and merge keys before anything is expanded (design §2a):
    a few hundred bytes of nested aliases must not become gigabytes. ValueError says what and where."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    # An anchor needs `&`, an alias `*` and a plain merge key `<<` written out: without them the events
    # cannot hold one, and the text is loaded in one pass (a config or a record rarely has either). Bytes in
    # UTF-16 or UTF-32, which YAML also reads, hold NULs: those always take the full check.
    marks = ("&", "*", "<<") if isinstance(text, str) else (b"&", b"*", b"<<", b"\0")
    suspect = any(mark in text for mark in marks)  # type: ignore[operator]
    try:
        for event in yaml.parse(text, Loader=loader) if suspect else ():
            line = event.start_mark.line + 1 if event.start_mark is not None else 0
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                raise ValueError(f"uses a YAML alias or anchor (line {line}); majordomus never expands them")
            if isinstance(event, yaml.ScalarEvent) and event.value == "<<" and not event.style:  # plain: None or ""
                raise ValueError(f"uses a YAML merge key `<<` (line {line})")
        return yaml.load(text, Loader=_strict_loader(loader))
    except yaml.YAMLError as exc:
        raise ValueError(f"not valid YAML: {exc}") from exc


_STRICT: dict[type, type] = {}


def _strict_loader(base: type) -> type:
    """`base` refusing a mapping that names a key twice (DuplicateKey), in the same one pass."""
    strict = _STRICT.get(base)
    if strict is None:
        def construct_mapping(self: Any, node: Any, deep: bool = False) -> Any:
            seen = set()
            for key_node, _value in node.value:
                key = self.construct_object(key_node, deep=deep)
                try:
                    fresh = key not in seen
                    seen.add(key)
                except TypeError:
                    continue  # an unhashable key: the constructor says so below
                if not fresh:
                    line = key_node.start_mark.line + 1 if key_node.start_mark is not None else 0
                    raise DuplicateKey(f"names `{key}` twice (line {line})")
            return base.construct_mapping(self, node, deep)  # type: ignore[attr-defined]

        strict = _STRICT[base] = type(f"Strict{base.__name__}", (base,), {"construct_mapping": construct_mapping})
    return strict


def _parse_flat(text: str) -> dict[str, Any]:
    result: dict[str, Any] = {}
    current: list[Any] | None = None
    for line in text.splitlines():
        if line.startswith("- ") and current is not None:
            current.append(_json_scalar(line[2:]))
            continue
        key, colon, value = line.partition(":")
        if not (colon and key.isascii() and key.isidentifier()):
            raise ValueError(line)
        if key in result:
            raise DuplicateKey(f"names `{key}` twice")
        if not value:
            current = result[key] = []
        elif value[0] == " ":
            current = None
            result[key] = _json_scalar(value[1:])
        else:
            raise ValueError(line)
    return result


def _json_scalar(text: str) -> Any:
    """One JSON value as `emit_yaml` writes it. A string without escapes or a small natural number, as
    nearly every field is, is read without the decoder (a briefing reads dozens of records, a dozen fields
    each); anything else, or anything the decoder would refuse, goes through it."""
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        inner = text[1:-1]
        if "\\" not in inner and '"' not in inner and inner.isprintable():  # no escape, no raw control
            return inner
    elif text.isdigit() and text.isascii() and (text[0] != "0" or text == "0") and len(text) < 10:
        return int(text)
    return jsonbound.loads(text, unique=True)


_SUMMARY_LINE = LazyRe(r'^([a-z_]+): (?:"([^"\\\n]*)"|(null))$', re.M)


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
    found = _SUMMARY_LINE.findall(text, 4, end + 1 if stop < 0 else stop + 1)
    meta = {key: (None if null else value) for key, value, null in found}
    if len(meta) < len(wanted) or len(meta) < len(found) or not meta.keys() >= set(wanted):
        meta = split(data)[0]  # a key named twice among them: `split` refuses it, as every reader does
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


# ---------------------------------------------------------------- the one bound of a stored record

def body_caps(directory: str, config: Any) -> tuple[int | None, int]:
    """(line cap, byte cap) of a record's body in `directory`, as this machine's configuration sets them for
    a local write: what the writers refuse past, what sync refuses from the remote, and what every reader
    refuses in the store (design §2a: a record over its cap was not written by majordomus)."""
    if directory == "checkpoints":
        return int(config.get("checkpoint", "max_body_lines")), int(config.get("checkpoint", "max_body_bytes"))
    if directory == "handoffs":
        return None, int(config.get("handoff", "max_bytes"))
    # A run keeps at most its last 20 lines of output: the checkpoint's line cap, the handoff's byte cap.
    return int(config.get("checkpoint", "max_body_lines")), int(config.get("handoff", "max_bytes"))


def over_cap(data: bytes, caps: tuple[int | None, int]) -> str | None:
    """Why the stored record `data` holds a body bigger than `caps` (`body_caps`) lets a writer store, or
    None (also when it has no front matter: its readers say so). Whatever its name's digest says: a matching
    hash only proves the bytes were not changed since someone made them, not that majordomus did."""
    max_lines, max_bytes = caps
    if max_lines is None and len(data) <= max_bytes:
        return None  # the common case of a handoff: smaller than its body cap alone
    end = data.find(b"\n---\n", 3)
    if end < 0 or not data.startswith(b"---\n"):
        return None
    start = end + 5
    size = len(data) - start
    body = size - 1 if data.endswith(b"\n") else size  # `render` adds one newline after the body
    if body > max_bytes:
        return f"holds a body of {body} bytes, over the {max_bytes} a record of its kind may hold"
    if max_lines is not None and size:
        lines = data.count(b"\n", start) + (0 if data.endswith(b"\n") else 1)
        if lines > max_lines:
            return f"holds a body of {lines} lines, over the {max_lines} a record of its kind may hold"
    return None


def sha256(data: bytes) -> str:
    from majordomus.lite.sha import hexdigest

    return hexdigest(data)


def intact(name: str, data: bytes, digest: str | None = None) -> bool:
    """Whether `data`, read from the record named `name`, are the bytes that name was made from (`digest`:
    their sha256 when already computed): the one check of every reader that shows a record as majordomus
    wrote it (design §2a, §9)."""
    claimed = name_digest(name)
    return claimed is not None and (digest if digest is not None else sha256(data)).startswith(claimed)
