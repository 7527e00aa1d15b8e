"""Handoff sections (design §7): the required sections outside HTML comments, and `handoff.required_sections`
held to the field grammar; each refusal with its exit code, message, and nothing written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import HANDOFF_BODY, assert_refused, records_in, start_task

SECTIONS = "## State\ns\n## Decisions\nd\n## Open items\no\n## Next actions\nn\n"


@pytest.mark.parametrize(("body", "words"), [
    (f"<!--\n{SECTIONS}-->\n", "missing `## State`, `## Decisions`, `## Open items`, `## Next actions`"),
    (SECTIONS.replace("s\n", "<!-- -->\n", 1), "empty `## State`"),
    (SECTIONS.replace("s\n", "<!-- a\nb -->\n", 1), "empty `## State`"),
    (SECTIONS.replace("## Decisions", "<!-- ## Decisions -->"), "missing `## Decisions`"),
])
def test_sections_inside_an_html_comment_do_not_count(cli: Any, repo: Path, body: str, words: str) -> None:
    start_task(cli, "h")
    assert_refused(cli, repo, ("handoff",), 10, words, input=body)


@pytest.mark.parametrize("body", [
    SECTIONS.replace("s\n", "s <!-- and a note -->\n", 1),  # text beside a comment is content
    SECTIONS.replace("s\n", "<!-- a note -->s\n", 1),
    SECTIONS.replace("s\n", "```\n<!--\n```\ns\n", 1),  # `<!--` inside a fence opens no comment
])
def test_one_past_text_outside_a_comment_is_content(cli: Any, repo: Path, body: str) -> None:
    start_task(cli, "h")
    result = cli("handoff", input=body)
    assert result.exit_code == 0, result
    assert len(records_in(repo, "handoffs")) == 1


@pytest.mark.parametrize(("sections", "words"), [
    ('["State", "Next\\nowner: evil"]', "entry 2 holds a line break U+000A"),
    ('["State\\e]0;pwned\\a"]', "entry 1 holds a control character U+001B"),
    ('["State", "\\u202eNext"]', "entry 2 holds a bidi control U+202E"),
    ('["State", " "]', "entry 2 is empty"),
    ("[]", "a list of 1 to 32 section names"),
    ('"State"', "a list of 1 to 32 section names"),
    ("[" + ", ".join(f'"S{i}"' for i in range(33)) + "]", "a list of 1 to 32 section names"),
])
def test_required_sections_are_held_to_the_field_grammar(cli: Any, repo: Path, sections: str, words: str) -> None:
    start_task(cli, "c")
    (repo / ".ai").mkdir(exist_ok=True)
    (repo / ".ai" / "config.yaml").write_text(f"handoff:\n  required_sections: {sections}\n")
    result = assert_refused(cli, repo, ("handoff",), 12, "`handoff.required_sections` must be", words,
                            input=HANDOFF_BODY)
    assert all(line.startswith(("majordomus: ", "hint: ")) for line in result.stderr.splitlines())


def test_one_past_a_list_of_one_line_names_is_taken_at_its_edges(cli: Any, repo: Path) -> None:
    start_task(cli, "c")
    (repo / ".ai").mkdir(exist_ok=True)
    names = ", ".join(f'"S{i}"' for i in range(31)) + ', "Ünïcode ok"'  # 32 entries, the most
    (repo / ".ai" / "config.yaml").write_text(f"handoff:\n  required_sections: [{names}]\n")
    body = "".join(f"## S{i}\nx\n" for i in range(31)) + "## Ünïcode ok\nx\n"
    assert cli("handoff", input=body).exit_code == 0
