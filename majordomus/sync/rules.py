"""What an entry must be to enter the store through sync (design §2a "the remote", §4, §5, §6).

Every task record and record that comes from a remote — or leaves this machine for one — passes exactly the
rules of a local write: the record-name grammar, the digest in the name, front matter keys and types of §4,
the body rules of §6 with this machine's caps, task fields by their types. Each function returns why an
entry is refused (one line, naming the field), or None; none of them raises on hostile input.
"""

from __future__ import annotations

from typing import Any, Callable

from majordomus import clock, secretscan, tasks
from majordomus.config import Config
from majordomus.errors import MajordomusError
from majordomus.lite import names, textrules
from majordomus.store import records
from majordomus.store.records import MAX_RECORD_BYTES as MAX_RECORD_BYTES  # one home: the record rules

RECORD_KINDS = {"handoffs": "handoff", "checkpoints": "checkpoint", "runs": "run"}
# Far above anything majordomus writes (a 64 KiB handoff and 200 changed paths in its front matter): a bigger
# entry is refused from its size alone, before it is inflated.
MAX_INT = 1 << 31
_HEX = frozenset("0123456789abcdef")
_HANDOFF_KEYS = ("previous_handoff", "checkpoints")


def _is_oid(value: Any) -> bool:
    return isinstance(value, str) and len(value) in (40, 64) and set(value) <= _HEX


def _is_int(value: Any, low: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value < MAX_INT


def _text(value: Any) -> bool:
    return isinstance(value, str) and len(value) <= 4096


def _line_field(value: Any) -> bool:
    """A title or an owner: one line by the field grammar of design §2a."""
    return isinstance(value, str) and textrules.field_problem(value) is None


def _quoted_text(value: Any) -> bool:
    """A worktree path or a branch name as majordomus stores one: no raw control or line break (C-quoted)."""
    return _text(value) and bool(value) and textrules.unquoted_problem(value) is None


def _optional(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: value is None or check(value)


# §4: the identity every record carries, key by key (`changed_files_omitted` only when some were left out).
_IDENTITY: dict[str, Callable[[Any], bool]] = {
    "schema_version": lambda v: _is_int(v) and v == records.SCHEMA_VERSION,
    "kind": lambda v: v in RECORD_KINDS.values(),
    "timestamp": clock.is_iso,
    "task": names.is_task_id,
    "profile": names.is_profile_name,
    "owner": _line_field,
    "repo_id": _optional(_is_oid),
    "worktree": _quoted_text,
    "branch": _optional(_quoted_text),
    "head": _optional(_is_oid),
    "worktree_state": lambda v: v in ("clean", "dirty"),
    "changed_files": lambda v: isinstance(v, list) and all(_text(p) and _quoted_text(p) for p in v),
    "changed_files_omitted": lambda v: _is_int(v, 1),
}
_HANDOFF: dict[str, Callable[[Any], bool]] = {
    "previous_handoff": _optional(lambda v: names.is_record_pointer(v, "handoffs")),
    "checkpoints": lambda v: isinstance(v, list) and all(names.is_record_pointer(p, "checkpoints") for p in v),
}


def _flat_value(value: Any) -> bool:
    """What `emit_yaml` writes: a scalar, or a list of scalars (a run's argv)."""
    def scalar(v: Any) -> bool:
        return bool(v is None or isinstance(v, bool) or _text(v)
                  or (isinstance(v, int) and -MAX_INT * MAX_INT < v < MAX_INT * MAX_INT))
    return scalar(value) or (isinstance(value, list) and all(scalar(item) for item in value))


def front_matter(directory: str, meta: dict[str, Any], parsed: names.RecordName) -> str | None:
    """Why this front matter is not what majordomus writes for a record of `directory`, or None."""
    expected = RECORD_KINDS[directory]
    if meta.get("kind") != expected:
        return f"a record of kind `{str(meta.get('kind'))[:40]}` does not belong in {directory}/"
    for key, check in _IDENTITY.items():
        if key not in meta:
            if key == "changed_files_omitted":
                continue
            return f"its front matter has no `{key}`"
        if not check(meta[key]):
            return f"its front matter `{key}` is not of the type design §4 gives it"
    extra = {k: v for k, v in meta.items() if k not in _IDENTITY}
    if directory == "handoffs":
        for key in _HANDOFF_KEYS:
            if key not in extra:
                return f"its front matter has no `{key}`"
            if not _HANDOFF[key](extra[key]):
                return f"its front matter `{key}` is not of its type (record paths in {key_dir(key)}/)"
    allowed = _HANDOFF_KEYS if directory == "handoffs" else ()
    for key, value in extra.items():
        if directory == "runs" and key.isascii() and key.isidentifier() and _flat_value(value):
            continue  # a run's own fields (§17): flat values, as `emit_yaml` writes them
        if key not in allowed:
            return f"its front matter has an unknown key `{key[:40]}`"
    if clock.compact_of(meta["timestamp"]) != parsed.timestamp:
        return "its name's timestamp is not its front matter's"
    if parsed.slug != names.branch_slug(meta["branch"]) or parsed.head7 != (meta["head"] or "0" * 7)[:7]:
        return "its name's branch or head is not its front matter's"
    return None


def key_dir(key: str) -> str:
    return "handoffs" if key == "previous_handoff" else "checkpoints"


def _caps(directory: str, config: Config) -> tuple[int | None, int]:
    """(line cap, byte cap) of a body, as this machine's configuration sets them for a local write."""
    return records.body_caps(directory, config)


def body(directory: str, text: str, config: Config) -> str | None:
    """Why a stored body breaks the body rules of §6 (control characters, caps, identity fields), or None."""
    max_lines, max_bytes = _caps(directory, config)
    try:
        normal = records.normalise(text.encode("utf-8"), what=RECORD_KINDS[directory], max_lines=max_lines,
                                   max_bytes=max_bytes)
    except MajordomusError as exc:
        return "its body breaks the body rules: " + exc.message.replace("; nothing was written", "")
    if normal.text != text:
        return "its body is not stored as majordomus stores one (blank edges, CR or a byte-order mark)"
    return None


def check_record(directory: str, name: str, data: bytes, config: Config) -> str | None:
    """Why a record may not enter the store (or leave this machine), or None."""
    return inspect_record(directory, name, data, config)[0]


def inspect_record(directory: str, name: str, data: bytes, config: Config) -> tuple[str | None, dict[str, Any]]:
    """`check_record`'s answer, and the front matter it read (empty when it could not)."""
    parsed = names.RecordName.parse(name)
    if parsed is None:
        return "not a record name", {}
    if len(data) > MAX_RECORD_BYTES:
        return f"{len(data)} bytes, over the {MAX_RECORD_BYTES}-byte bound of a record", {}
    actual = records.sha256(data)
    if actual[:16] != parsed.digest:
        return (f"its content does not match its name (the name says {parsed.digest}, "
                f"the content hashes to {actual[:16]})"), {}
    try:
        meta, text = records.split(data)
    except Exception as exc:
        return f"its front matter is unreadable ({_short(exc)})", {}
    return front_matter(directory, meta, parsed) or body(directory, text, config), meta


def check_task(name: str, data: bytes) -> str | None:
    """Why a task record may not enter the store (or leave this machine), or None."""
    task_id = name[: -len(".yaml")] if name.endswith(".yaml") else ""
    if not names.is_task_id(task_id):
        return "not a task record name"
    if len(data) > tasks.MAX_BYTES:
        return f"{len(data)} bytes, over the {tasks.MAX_BYTES}-byte bound of a task record"
    try:
        task = tasks.Task.from_dict(records.parse_yaml(data.decode("utf-8")))
    except Exception as exc:
        return f"unreadable ({_short(exc)})"
    if task.id != task_id:
        return f"it names task `{task.id}`, not `{task_id}`"
    if not names.is_profile_name(task.profile):
        return "its `profile` is not a profile name"
    for key in ("title", "owner"):
        problem = textrules.field_problem(getattr(task, key))
        if problem is not None:
            return f"its `{key}` {problem}"
    for key in ("worktree", "branch"):
        problem = textrules.unquoted_problem(getattr(task, key) or "")
        if problem is not None:
            return f"its `{key}` {problem}"
    for n, claim in enumerate(task.claims, 1):  # a claim's fields are held to the same grammars
        for key in ("owner", "host", "ended_by"):
            problem = textrules.field_problem(claim[key]) if claim.get(key) is not None else None
            if problem is not None:
                return f"its claim {n}: `{key}` {problem}"
        for key in ("worktree", "branch"):
            problem = textrules.unquoted_problem(claim.get(key) or "")
            if problem is not None:
                return f"its claim {n}: `{key}` {problem}"
    for key in ("title", "objective", "owner"):  # an owner is held to the secret rule from every source
        what = secretscan.looks_secret(getattr(task, key))
        if what is not None:
            return f"its `{key}` looks like it carries a secret ({what})"
    for key, directory in (("checkpoint", "checkpoints"), ("handoff", "handoffs")):
        pointer = getattr(task, key)
        if pointer is not None and not names.is_record_pointer(pointer, directory):
            return f"its `{key}` is not a record in {directory}/"
    return None


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:160] if text.strip() else type(exc).__name__
