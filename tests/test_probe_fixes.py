"""Handoff sections and their configuration, `init` on a linked profile, `help` with a subcommand, and
`search -E` on what Python only warns about: each refusal with its exit code, message, and nothing written."""

from __future__ import annotations

import os
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


@pytest.mark.parametrize("kind", ["dangling", "to a file", "directory"])
def test_init_refuses_a_template_path_that_is_a_link_or_not_a_file(cli: Any, repo: Path, tmp_path: Path,
                                                                    kind: str) -> None:
    profiles = repo / ".ai" / "profiles"
    profiles.mkdir(parents=True)
    target = profiles / "default.md"
    if kind == "directory":
        target.mkdir()
    else:
        outside = tmp_path / "outside.md"
        if kind == "to a file":
            outside.write_text("# injected\n")
        target.symlink_to(outside)
    what = "is not a regular file" if kind == "directory" else "is a symbolic link"
    result = assert_refused(cli, repo, ("init",), 12, f"{target} {what}", "nothing was written")
    assert "kept" not in result.stderr and not (repo / ".ai" / "config.yaml").exists()


def test_one_past_init_keeps_a_regular_profile_and_says_so(cli: Any, repo: Path) -> None:
    profiles = repo / ".ai" / "profiles"
    profiles.mkdir(parents=True)
    (profiles / "default.md").write_text("# mine\n")
    result = cli("init")
    assert result.exit_code == 0 and f"kept: {profiles / 'default.md'}" in result.stdout, result
    assert (profiles / "default.md").read_text() == "# mine\n"


@pytest.mark.parametrize(("args", "words", "hint"), [
    (("help", "nonexist"), "`nonexist` is not a majordomus command", "hint: see `majordomus --help`"),
    (("help", "chekpoint"), "`chekpoint` is not a majordomus command", "hint: did you mean `majordomus help checkpoint`?"),
    (("help", "task", "nope"), "unexpected argument `nope`: `majordomus task` has no such subcommand (it has "
     "done, list, release, resume, show, start)", "hint: usage: majordomus help [COMMAND [SUBCOMMAND]]"),
    (("help", "brief", "x"), "`majordomus brief` has no subcommands", "hint: usage: majordomus help"),
    (("nonexist",), "`nonexist` is not a majordomus command", "hint: see `majordomus --help`"),
])
def test_help_suggests_only_alike_names_and_checks_a_subcommand(cli: Any, repo: Path, args: tuple[str, ...],
                                                                words: str, hint: str) -> None:
    result = assert_refused(cli, repo, args, 2, words)
    assert result.stderr.splitlines()[1].startswith(hint), result.stderr


def test_one_past_help_of_a_subcommand_opens_its_command_s_page(cli: Any, repo: Path, tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    os.environ["PATH"], saved = str(empty), os.environ["PATH"]  # no `man`: the subcommand's --help is printed
    try:
        result = cli("help", "task", "start")
    finally:
        os.environ["PATH"] = saved
    assert result.exit_code == 0 and "task start" in result.stdout, result
    assert "majordomus-task.1" in result.stderr


@pytest.mark.parametrize(("pattern", "words"), [
    ("[[:alpha:]]", "uses the POSIX class `[:alpha:]`, which Python's regular expressions do not have"),
    ("x[[:digit:]]+", "the POSIX class `[:digit:]`"),
    ("[[a]", "is ambiguous to Python's regular expressions (possible nested set at position 1)"),
    ("[a--b]", "(possible set difference at position 2)"),
])
def test_search_says_plainly_what_python_only_warns_about(cli: Any, repo: Path, pattern: str, words: str) -> None:
    start_task(cli, "s1")
    assert cli("checkpoint", input="note").exit_code == 0
    result = assert_refused(cli, repo, ("search", "-E", pattern), 2, words)
    assert "Warning" not in result.stderr and "site-packages" not in result.stderr


def test_one_past_search_a_bracket_class_and_an_escaped_bracket_work(cli: Any, repo: Path) -> None:
    start_task(cli, "s1")
    assert cli("checkpoint", input="note [x] 42").exit_code == 0
    for pattern in ("n[a-z]te", r"\[x\]", "[0-9]+", r"\[:alpha:\]"):
        result = cli("search", "-E", pattern)
        assert result.exit_code in (0, 1) and "Warning" not in result.stderr, (pattern, result)
    assert cli("search", "-E", "n[a-z]te").exit_code == 0


@pytest.mark.parametrize(("err", "words"), [
    (28, "is full: free space there, then run the command again"),  # ENOSPC
    (122, "is full: free space there"),  # EDQUOT
    (5, "reported an I/O error"),  # EIO
    (13, "fix its permissions (chmod 700"),  # one past: EACCES is a matter of permissions
])
def test_the_unwritable_hint_names_the_cause_of_its_errno(tmp_path: Path, err: int, words: str) -> None:
    from majordomus.lite.statepaths import unwritable_hint

    assert words in unwritable_hint(str(tmp_path), err)
