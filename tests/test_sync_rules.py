"""The rules an entry passes to enter the store through sync (design §2a, §4, §6), one by one, and the safe
YAML load they stand on: no alias, anchor or merge key is ever expanded."""

from __future__ import annotations

import hashlib

import pytest

from majordomus.config import load as load_config
from majordomus.store import records
from majordomus.sync import rules

HEAD = "abcdef0123456789abcdef0123456789abcdef01"
FRONT = [("schema_version", "1"), ("kind", '"checkpoint"'), ("timestamp", '"2026-03-01T10:00:00Z"'),
         ("task", '"t1"'), ("profile", '"default"'), ("owner", '"ann@example.com"'), ("repo_id", "null"),
         ("worktree", '"/w"'), ("branch", '"main"'), ("head", f'"{HEAD}"'), ("worktree_state", '"clean"'),
         ("changed_files", "[]")]


def record(front: list[tuple[str, str]] = FRONT, body: str = "a note", stamp: str = "20260301T100000Z",
           head7: str = HEAD[:7], slug: str = "main") -> tuple[str, bytes]:
    data = ("---\n" + "".join(f"{k}: {v}\n" for k, v in front) + "---\n" + body + "\n").encode()
    return f"{stamp}--{slug}--{head7}--{hashlib.sha256(data).hexdigest()[:16]}.md", data


def changed(key: str, value: str | None) -> list[tuple[str, str]]:
    out = [(k, value if k == key else v) for k, v in FRONT if not (k == key and value is None)]
    return out if any(k == key for k, _ in out) or value is None else out + [(key, value)]


CONFIG = load_config(None)


def test_a_record_as_majordomus_writes_one_passes():
    name, data = record()
    assert rules.check_record("checkpoints", name, data, CONFIG) is None


@pytest.mark.parametrize("front, reason", [
    (changed("schema_version", "2"), "`schema_version` is not of the type"),
    (changed("schema_version", "true"), "`schema_version` is not of the type"),
    (changed("timestamp", '"yesterday"'), "`timestamp` is not of the type"),
    (changed("task", '"../etc"'), "`task` is not of the type"),
    (changed("profile", '"a/b"'), "`profile` is not of the type"),
    (changed("repo_id", '"not-hex"'), "`repo_id` is not of the type"),
    (changed("worktree_state", '"maybe"'), "`worktree_state` is not of the type"),
    (changed("changed_files", '"a.txt"'), "`changed_files` is not of the type"),
    (changed("changed_files_omitted", "0"), "`changed_files_omitted` is not of the type"),
    (changed("owner", None), "has no `owner`"),
    (changed("mood", '"calm"'), "unknown key `mood`"),
    (changed("kind", '"run"'), "a record of kind `run` does not belong in checkpoints/"),
])
def test_front_matter_keys_and_types(front, reason):
    name, data = record(front)
    assert reason in (rules.check_record("checkpoints", name, data, CONFIG) or "")


@pytest.mark.parametrize("kwargs, reason", [
    ({"stamp": "20260302T100000Z"}, "its name's timestamp is not its front matter's"),
    ({"head7": "1234567"}, "its name's branch or head is not its front matter's"),
    ({"slug": "other"}, "its name's branch or head is not its front matter's"),
])
def test_the_name_matches_the_front_matter(kwargs, reason):
    name, data = record(**kwargs)
    assert rules.check_record("checkpoints", name, data, CONFIG) == reason


@pytest.mark.parametrize("body, reason", [
    ("line\u2028owner: forged", "control character U+2028"),
    ("ok\n**Owner**: forged", "sets the identity field `owner`"),
    ("a\rb", "control character U+000D"),
    ("\n".join(["x"] * 41), "has 41 lines; the limit is 40"),
    ("x" * 16385, "is 16385 bytes; the limit is 16384"),
])
def test_body_rules_with_this_machines_caps(body, reason):
    name, data = record(body=body)
    assert reason in (rules.check_record("checkpoints", name, data, CONFIG) or "")


def test_a_handoff_has_its_own_keys():
    front = [(k, '"handoff"' if k == "kind" else v) for k, v in FRONT]
    ok = front + [("previous_handoff", "null"), ("checkpoints", "[]")]
    name, data = record(ok, body="## State\ns")
    assert rules.check_record("handoffs", name, data, CONFIG) is None
    name, data = record(front, body="## State\ns")
    assert rules.check_record("handoffs", name, data, CONFIG) == "its front matter has no `previous_handoff`"
    bad = front + [("previous_handoff", '"handoffs/../x"'), ("checkpoints", "[]")]
    name, data = record(bad, body="## State\ns")
    assert "`previous_handoff` is not of its type" in (rules.check_record("handoffs", name, data, CONFIG) or "")


@pytest.mark.parametrize("text, reason", [
    ("a: &x 1\nb: *x\n", "alias or anchor"),
    ("base: &b {k: 1}\nother:\n  <<: *b\n", "alias or anchor"),
    ("other:\n  <<: {k: 1}\n", "merge key"),
])
def test_yaml_with_aliases_anchors_or_merge_keys_is_refused_unexpanded(text, reason):
    with pytest.raises(ValueError, match=reason):
        records.load_yaml(text)
    with pytest.raises(ValueError, match=reason):
        records.parse_yaml(text)


def test_plain_yaml_still_loads():
    assert records.parse_yaml("id: t1\ntitle: [a, b]\n") == {"id": "t1", "title": ["a", "b"]}
