"""Records: the front-matter writer and reader, body normalisation, naming (properties, not examples)."""

from __future__ import annotations

import re as _re

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from majordomus.errors import Refused
from majordomus.store import records

scalars = st.one_of(st.none(), st.integers(min_value=-10**9, max_value=10**9),
                    st.text(st.characters(blacklist_categories=("Cs",)), max_size=40))
values = st.one_of(scalars, st.lists(st.text(st.characters(blacklist_categories=("Cs",)), max_size=20), max_size=4))
# Our keys are fixed identifiers; YAML 1.1 reads these words as booleans or null, so none of them is a key.
# The identifiers `[a-z_][a-z0-9_]{0,12}`, built from their two parts (st.from_regex draws the same set at
# several times the cost).
keys = st.builds(str.__add__, st.sampled_from("abcdefghijklmnopqrstuvwxyz_"),
                 st.text("abcdefghijklmnopqrstuvwxyz0123456789_", max_size=12)).filter(
    lambda k: k not in {"y", "n", "yes", "no", "on", "off", "true", "false", "null"})


@settings(max_examples=200)
@given(st.dictionaries(keys, values, max_size=8))
def test_emitted_front_matter_is_yaml_and_reads_back(mapping):
    text = records.emit_yaml(mapping.items())
    assert yaml.load(text, Loader=yaml.CSafeLoader) == (mapping or None)
    assert records.parse_yaml(text) == mapping


# Text a body may hold: no control characters, and neither `:` nor `-`, so no line can be an identity field
# or a front-matter fence. Such a body is never refused, and nothing of it is lost.
_plain = st.characters(blacklist_categories=("Cc", "Cs", "Cf", "Zl", "Zp"), blacklist_characters=":-")


@settings(max_examples=200)
@given(st.lists(st.text(_plain, max_size=30), max_size=40))
def test_normalise_never_truncates(lines):
    raw = "\n".join(lines).encode()
    body = records.normalise(raw, what="checkpoint", max_lines=40, max_bytes=16384)
    kept = body.text.split("\n") if body.text else []
    stripped = list(lines)
    while stripped and not stripped[0].strip():
        stripped.pop(0)
    while stripped and not stripped[-1].strip():
        stripped.pop()
    assert kept == stripped
    assert body.lines == len(stripped)


@settings(max_examples=100)
@given(st.lists(st.text(_plain, max_size=10), min_size=41, max_size=80))
def test_more_than_forty_lines_between_non_blank_edges_is_always_refused(lines):
    lines = ["first"] + lines[1:-1] + ["last"]
    with pytest.raises(Refused) as refused:
        records.normalise("\n".join(lines).encode(), what="checkpoint", max_lines=40, max_bytes=16384)
    assert f"{len(lines)} lines; the limit is 40" in refused.value.message


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\x85", "\x7f", "\x9f", "\ufffe"])
def test_yaml_line_breaks_and_non_printables_are_escaped(char):
    """design §2a: U+2028, U+2029 and U+0085 are line breaks to a YAML reader; written raw, one value would
    read back as something else (or not at all). Every loader, libyaml's included, reads the value back."""
    import yaml

    value = f"a{char}b"
    text = records.emit_yaml([("worktree", value), ("changed_files", [value])])
    assert char not in text
    for loader in (yaml.SafeLoader, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        assert yaml.load(text, Loader=loader) == {"worktree": value, "changed_files": [value]}
    assert records.parse_yaml(text) == {"worktree": value, "changed_files": [value]}


def test_split_reads_what_render_writes():
    data = records.render([("kind", "checkpoint"), ("changed_files", ["a", "b"]), ("head", None)], "body\ntext")
    meta, body = records.split(data)
    assert meta == {"kind": "checkpoint", "changed_files": ["a", "b"], "head": None}
    assert body == "body\ntext"


def test_split_reads_hand_written_yaml_too():
    meta, body = records.split(b"---\nkind: checkpoint\ntimestamp: 2026-09-03T19:45:00Z\n---\nhi\n")
    assert meta["kind"] == "checkpoint" and meta["timestamp"].startswith("2026-09-03T19:45:00")
    assert body == "hi"


def test_record_name_and_digest():
    name = records.record_name("20260903T194500Z", "feature/ä+b", None, "ab" * 32)
    assert name == "20260903T194500Z--feature---b--0000000--abababababababab.md"
    assert records.name_digest(name) == "ab" * 8
    assert records.name_digest("notes.md") is None


# design §4's thirteen keys, written out: never taken from `records.IDENTITY_KEYS`, the constant under test.
IDENTITY_KEYS = ("schema_version", "kind", "timestamp", "task", "profile", "owner", "repo_id", "worktree", "branch",
             "head", "worktree_state", "changed_files", "changed_files_omitted")
assert len(IDENTITY_KEYS) == 13

# design §6 step 4 and §2a as a regular expression, the oracle the hand-written matcher must agree with: after
# indentation and an optional `-`/`*`/`+` bullet, a key whose words are joined by `_`, `-` or spaces, in any
# case, wrapped in any Markdown emphasis or code marks, then `:`.
# Any run of list, quote, heading and task-box markers may come first (`> 1. - [x] owner:`).
_ORACLE = _re.compile(
    r"^(?:[ \t\-*+•>#]|\d{1,9}[.)]|\[[ xX]?\])*[*_`~\"' \t]*("
    + "|".join(r"[_\- ]+".join(key.split("_")) for key in IDENTITY_KEYS)
    + r")[*_`~\"' \t]*:", _re.IGNORECASE)
_line_parts = st.sampled_from([" ", "\t", "-", "*", "+", "_", "`", "~", ":", "repo", "id", "Repo", "ID", "task",
                               ">", "#", "1.", "2)", "[ ]", "[x]", "\u2022", '"', "'",
                               "head", "HEAD", "worktree", "state", "changed", "files", "omitted", "x", "Next",
                               "schema", "version", " :", "kind", "profile", "owner", "branch", "timestamp"])


@settings(max_examples=300)
@given(st.lists(_line_parts, max_size=8).map("".join))
def test_identity_matcher_agrees_with_the_spec_regex(line):
    assert (records.identity_field(line) is not None) == bool(_ORACLE.match(line)), line


@pytest.mark.parametrize("key", IDENTITY_KEYS)
def test_every_spec_key_is_an_identity_field_however_it_is_written(key):
    words = key.split("_")
    for written in (key, key.upper(), "-".join(words), " ".join(w.capitalize() for w in words),
                    f"**{key}**", f"`{key}`", f"_{key}_"):
        for line in (f"{written}: x", f"  - {written} : x", f"* {written}:x", f"+\t{written}:"):
            assert records.identity_field(line) is not None, line
            assert records.identity_field(line)[0] == key
    # what a reader sees as the same key (design §2a): a no-break space, a full-width colon, a zero-width space
    for line in (f"{key}\u00a0: x", f"{key}\uff1a x", f"{key[:1]}\u200b{key[1:]}: x", f"\u00a0- {key}: x"):
        assert records.identity_field(line) is not None, ascii(line)
    for line in (f"{key}s: x", f"the {key}: x", f"{key}", f"{key} is: x", f"x{key}: y"):
        assert records.identity_field(line) is None, line


_NAME_ORACLE = _re.compile(r"^(\d{8}T\d{6}Z)--(.+)--([0-9a-f]{7})--([0-9a-f]{16})\.md$", _re.ASCII)
_name_parts = st.sampled_from(["20260903T194500Z", "--", "main", "-", "abcdef0", "0123456789abcdef", ".md", "x", "T",
                               "Z", "1", "feature-x", "ABCDEF0", "g"])


@settings(max_examples=200)
@given(st.lists(_name_parts, max_size=9).map("".join))
def test_name_digest_agrees_with_the_naming_rule(name):
    match = _NAME_ORACLE.match(name)
    assert records.name_digest(name) == (match.group(4) if match else None), name


def test_name_digest_of_real_names():
    name = records.record_name("20260903T194500Z", "feature/x", "abcdef0123", "0123456789abcdef" * 4)
    assert records.name_digest(name) == "0123456789abcdef"


# ---------------------------------------------------------------- the one bound of a stored record


def _record(body: str) -> bytes:
    return records.render([("kind", "checkpoint"), ("task", "t1")], body)


@pytest.mark.parametrize("lines, width, over", [
    (40, 10, None),  # the edge: 40 lines
    (41, 10, "holds a body of 41 lines, over the 40"),
    (1, 16384, None),  # the edge: 16384 bytes
    (1, 16385, "holds a body of 16385 bytes, over the 16384"),
])
def test_a_record_over_its_writers_cap_is_named_at_the_edge_and_past_it(lines, width, over):
    caps = (40, 16384)
    body = "\n".join("x" * width for _ in range(lines))
    found = records.over_cap(_record(body), caps)
    assert found == over or (over is not None and found is not None and found.startswith(over)), found


def test_the_caps_are_the_configured_ones_sync_uses_too():
    class Config:
        def get(self, section: str, key: str) -> int:
            return {"max_body_lines": 3, "max_body_bytes": 100, "max_bytes": 200}[key]

    assert records.body_caps("checkpoints", Config()) == (3, 100)
    assert records.body_caps("handoffs", Config()) == (None, 200)
    assert records.body_caps("runs", Config()) == (3, 200)
    from majordomus.sync import rules

    assert rules._caps("checkpoints", Config()) == records.body_caps("checkpoints", Config())  # type: ignore[arg-type]
    handoff = records.render([("kind", "handoff")], "y" * 200)
    assert records.over_cap(handoff, (None, 200)) is None
    assert records.over_cap(records.render([("kind", "handoff")], "y" * 201), (None, 200)) is not None
    assert records.over_cap(b"no front matter" * 100, (None, 10)) is None  # its readers say so


# The one safe YAML load skips its event pass when the text has no `&`, `*` or `<<`: the pass could find
# nothing there. Walked: YAML-shaped texts from the characters that make anchors, aliases and merge keys
# except those three marks; where YAML parses them, no event is an anchor, an alias or a plain `<<`.
@settings(max_examples=200)
@given(st.text(alphabet="ab: -\n{}[],'\"!?|>#%@`<\\\t", max_size=60))
def test_a_text_without_the_three_marks_holds_no_anchor_alias_or_merge_key(text):
    if "<<" in text:
        text = text.replace("<<", "<")
    try:
        events = list(yaml.parse(text, Loader=yaml.CSafeLoader))
    except yaml.YAMLError:
        return
    for event in events:
        assert not isinstance(event, yaml.AliasEvent) and getattr(event, "anchor", None) is None
        assert not (isinstance(event, yaml.ScalarEvent) and event.value == "<<" and not event.style)


@pytest.mark.parametrize("text", ["base: {a: 1}\nx:\n  <<: {b: 2}\n", "a: &x 1\nb: *x\n"])
@pytest.mark.parametrize("encoding", ["utf-8", "utf-16"])
def test_anchors_aliases_and_merge_keys_are_refused_in_every_encoding_yaml_reads(text, encoding):
    with pytest.raises(ValueError, match=r"merge key|alias or anchor"):
        records.load_yaml(text.encode(encoding))
    with pytest.raises(ValueError, match=r"merge key|alias or anchor"):
        records.load_yaml(text)
    assert records.load_yaml(text.replace("<<", "c").replace("&x ", "").replace("*x", "2").encode(encoding))
