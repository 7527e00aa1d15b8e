"""`majordomus search` (design §22): every record and pin holding all the words, newest first."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from helpers import HANDOFF_BODY, as_written, assert_refused, import_probe, on_a_terminal, run, start_task, state_dir

from majordomus import continuity_doc, search, search_names
from majordomus.workspace import Workspace


def hits(cli: Any, *args: str) -> list[dict[str, Any]]:
    result = cli("search", *args, "--json")
    assert result.exit_code in (0, 1), result
    found: list[dict[str, Any]] = json.loads(result.stdout)
    assert (result.exit_code == 0) == bool(found)
    return found


@pytest.fixture
def store(cli: Any, repo: Path) -> Path:
    """Two tasks: a checkpoint, a run, a pin and a handoff, each a second apart (a frozen clock that ticks:
    record names begin with their UTC second, so name order is the order written)."""
    from freezegun import freeze_time

    with freeze_time("2026-09-03T10:00:00Z") as clock:
        start_task(cli, "alpha")
        assert cli("checkpoint", input="The Parser streams now\nnext: the lexer").exit_code == 0
        clock.tick(1)
        assert cli("run", "--label", "tests", "--", "sh", "-c", "echo parser tests green").exit_code == 0
        clock.tick(1)
        assert cli("context", "pin", "constraint", "never buffer the parser input").exit_code == 0
        clock.tick(1)
        start_task(cli, "beta")
        assert cli("handoff", input=HANDOFF_BODY.replace("normalise()", "the parser's normalise()")).exit_code == 0
    return repo


def test_all_words_case_insensitive_newest_first(cli, store):
    found = hits(cli, "PARSER")
    assert [(h["task"], h["kind"]) for h in found] == [("beta", "handoff"), ("alpha", "pin"), ("alpha", "run"),
                                                       ("alpha", "checkpoint")]
    for h in found:
        assert {"task", "kind", "at", "path", "line"} <= h.keys() and (store / h["path"]).is_file()
    assert found[3]["line"] == "The Parser streams now"
    assert found[1]["line"] == "never buffer the parser input"
    # both words, on two lines: the line shown is the first with the first word
    assert [(h["kind"], h["line"]) for h in hits(cli, "parser", "lexer")] == [("checkpoint", "The Parser streams now")]
    assert hits(cli, "parser", "nowhere") == []


def test_the_matching_line_is_the_one_with_every_word(cli, store):
    [found] = hits(cli, "the", "lexer")
    assert found["line"] == "next: the lexer"


def test_only_the_text_is_searched_not_the_front_matter(cli, store):
    assert hits(cli, "alpha") == []  # the task id is in every record's front matter, never in a body
    assert hits(cli, "schema_version") == []


def test_kind_and_task_narrow_it(cli, store):
    assert [h["kind"] for h in hits(cli, "parser", "--kind", "run")] == ["run"]
    assert [h["kind"] for h in hits(cli, "parser", "--kind", "pin")] == ["pin"]
    assert {h["task"] for h in hits(cli, "parser", "--task", "alpha")} == {"alpha"}
    assert [h["kind"] for h in hits(cli, "parser", "--task", "beta")] == ["handoff"]


def test_a_regular_expression_with_e(cli, store):
    assert [h["kind"] for h in hits(cli, "-E", r"stream(s|ing)\b")] == ["checkpoint"]
    assert [h["line"] for h in hits(cli, "-E", "^NEXT: the LEX")] == ["next: the lexer"]


def test_text_output_one_line_each_and_exit_codes(cli, store):
    result = cli("search", "parser")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert len(lines) == 4
    at, task, kind, path, line = lines[-1].split("  ", 4)
    assert (task, kind.strip(), line) == ("alpha", "checkpoint", "The Parser streams now")
    assert at.endswith("Z") and path.endswith(".md")
    none = cli("search", "nowhere")
    assert none.exit_code == 1 and none.stdout == ""


def test_non_ascii_words_fold_case_too(cli, repo):
    start_task(cli, "t1")
    assert cli("checkpoint", input="Le CAFÉ est fermé\nnext: the cafe").exit_code == 0
    assert [h["line"] for h in hits(cli, "café")] == ["Le CAFÉ est fermé"]
    assert [h["line"] for h in hits(cli, "-E", "caf.")] == ["Le CAFÉ est fermé"]
    assert [h["line"] for h in hits(cli, "CAFE", "next")] == ["next: the cafe"]  # ASCII words, a non-ASCII record


def test_stored_text_is_escaped(cli, repo):
    start_task(cli, "t1")
    assert cli("checkpoint", input="plain words").exit_code == 0
    [record] = (state_dir(repo) / "checkpoints").iterdir()
    record.write_bytes(record.read_bytes().replace(b"plain", b"\x1b]0;owned\x07plain\xe2\x80\xae"))
    as_written(record)
    text = cli("search", "words").stdout
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "\\x1b]0;owned\\x07plain\\u202e words" in text


def test_a_link_or_fifo_among_the_records_is_skipped_and_named(cli, repo, tmp_path):
    start_task(cli, "t1")
    assert cli("checkpoint", input="the real one").exit_code == 0
    outside = tmp_path / "outside.md"
    outside.write_text("---\ntask: \"t1\"\n---\nthe fake one\n")
    checkpoints = state_dir(repo) / "checkpoints"
    (checkpoints / "20990101T000000Z--main--0000000--0000000000000000.md").symlink_to(outside)
    os.mkfifo(checkpoints / "20990101T000001Z--main--0000000--0000000000000001.md")
    result = cli("search", "one")
    assert result.exit_code == 0 and "the real one" in result.stdout and "fake" not in result.stdout
    assert "is a symbolic link" in result.stderr and "FIFO" in result.stderr


def test_results_stream_one_record_at_a_time(cli, repo):
    from freezegun import freeze_time

    with freeze_time("2026-09-03T10:00:00Z") as clock:
        start_task(cli, "t1")
        for i in range(3):
            assert cli("checkpoint", input=f"note {i}").exit_code == 0
            clock.tick(1)
    ws = Workspace.open(str(repo))
    found = search.search(ws, search.Query(["note"]))
    assert next(found).line == "note 2"
    for record in (state_dir(repo) / "checkpoints").iterdir():  # what is not read yet is read when reached
        record.unlink()
    assert list(found) == []


@pytest.mark.parametrize(("args", "code", "words"), [
    (("search", "-E", "parser("), 2, ("`parser(` is not a valid regular expression", "missing )")),
    (("search", "-E", "a", "b"), 2, ("-E takes one regular expression, not 2 words",)),
    (("search", ""), 2, ("an empty WORD matches everything",)),
    (("search", "x", "--task", "nope"), 2, ("no task `nope`",)),
    (("search", "x", "--task", "Bad/Id"), 2, ("is not a valid task id",)),
])
def test_refusals_write_nothing(cli, store, args, code, words):
    assert_refused(cli, store, args, code, *words)


def test_click_refusals(cli, store):
    for args, message in ((("search",), "Missing argument 'WORD...'"), (("search", "x", "--kind", "note"), "'note' is not one of")):
        result = cli(*args)
        assert result.exit_code == 2 and message in result.stderr and result.stdout == ""


def test_the_mcp_tool_returns_the_same_matches(cli, store):
    ws = Workspace.open(str(store))
    assert search.tool(ws, ["parser"], kind="pin")["matches"] == hits(cli, "parser", "--kind", "pin")
    with pytest.raises(search.UsageError):
        search.tool(ws, ["x"], kind="note")


# ---------------------------------------------------------------- the process


def test_exit_codes_pager_and_colour_through_the_console_script(cli, store, tmp_path):
    assert run("search", "parser", cwd=store).returncode == 0
    none = run("search", "nowhere", cwd=store)
    assert (none.returncode, none.stdout) == (1, b"")
    bad = run("search", "-E", "(", cwd=store)
    assert bad.returncode == 2 and bad.stderr.startswith(b"majordomus: `(` is not a valid regular expression")
    paged = tmp_path / "paged.txt"
    piped = run("search", "lexer", cwd=store, env={"MAJORDOMUS_PAGER": f"cat > {paged}"})
    assert b"next: the lexer" in piped.stdout and b"\x1b" not in piped.stdout and not paged.exists()
    on_a_terminal(["search", "lexer"], store, {"MAJORDOMUS_PAGER": f"cat > {paged}"})
    assert "\x1b[1;31mlexer\x1b[0m" in paged.read_text()
    plain = on_a_terminal(["search", "lexer"], store, {"MAJORDOMUS_PAGER": "cat", "NO_COLOR": "1"})
    assert b"next: the lexer" in plain and b"\x1b" not in plain


def test_a_page_of_lines_is_escaped_line_by_line_when_one_needs_it(cli, repo):
    """Lines are written in blocks; a block with one line to escape escapes that line alone, as ever."""
    from freezegun import freeze_time

    with freeze_time("2026-09-03T10:00:00Z") as clock:
        start_task(cli, "t1")
        for n in range(3):
            assert cli("checkpoint", input=f"words number {n}").exit_code == 0
            clock.tick(1)
    first = sorted((state_dir(repo) / "checkpoints").iterdir())[1]
    first.write_bytes(first.read_bytes().replace(b"number 1", b"number\x1b[2J 1"))
    as_written(first)
    lines = cli("search", "words").stdout.splitlines()
    assert [line.rsplit("  ", 1)[1] for line in lines] == ["words number 2", "words number\\x1b[2J 1",
                                                           "words number 0"]


def test_odd_names_among_the_records(cli, repo):
    """A name with a line break in it is no record, whatever its last line looks like; a directory under a
    record's name is skipped and named; an empty file holds nothing to find."""
    start_task(cli, "t1")
    assert cli("checkpoint", input="the real one").exit_code == 0
    checkpoints = state_dir(repo) / "checkpoints"
    [real] = checkpoints.iterdir()
    (checkpoints / f"junk\n{real.name}").write_bytes(real.read_bytes())
    (checkpoints / "20990101T000000Z--main--0000000--0000000000000000.md").mkdir()
    (checkpoints / "20990101T000001Z--main--0000000--0000000000000001.md").write_bytes(b"")
    result = cli("search", "real")
    assert result.exit_code == 0 and result.stdout.count("the real one") == 1, result
    assert result.stderr.count("majordomus: skipped") == 1 and "is a directory" in result.stderr


# ---------------------------------------------------------------- what the fast path must not change


def test_a_search_loads_no_click_pygit2_or_yaml_but_help_is_clicks(store):
    """design §16: a search is held to grep's cost, so its path loads none of them (the probe can fail:
    `--help` and a usage error are click's and load it)."""
    assert import_probe(store, "search", "parser", "--kind", "pin") == {"code": 0, "heavy": []}
    assert import_probe(store, "search", "nowhere", "-E", "--json") == {"code": 1, "heavy": []}
    assert "click" in import_probe(store, "search", "--help")["heavy"]
    assert "click" in import_probe(store, "search", "x", "--kind", "note")["heavy"]


def test_the_lazy_name_grammar_is_the_one_grammar():
    from majordomus.lite import names

    stamp, tail = "20260903T100000Z", "--0123abc--0123456789abcdef.md"
    candidates = [stamp + "--main" + tail, stamp + "--a--b--c" + tail, stamp + "--" + "s" * 64 + tail,
                  stamp + "--" + "s" * 65 + tail, stamp + "--" + tail, stamp + "--x--0123abc" + tail,
                  stamp + "--main--0123ABC--0123456789abcdef.md", stamp + "--main" + tail + "\n",
                  "2026090XT100000Z--main" + tail, stamp + "--ma/in" + tail, stamp + "--main--0123abc--0123.md"]
    for name in candidates:
        assert bool(search_names.RECORD_NAME.fullmatch(name)) == bool(names.RECORD_NAME.fullmatch(name)), name


def test_a_record_whose_front_matter_never_closes_is_skipped_and_named(cli, repo):
    start_task(cli, "t1")
    assert cli("checkpoint", input="the real one").exit_code == 0
    broken = state_dir(repo) / "checkpoints" / "20990101T000000Z--main--0000000--0000000000000000.md"
    broken.write_bytes(b'---\ntask: "t1"\nkind: "checkpoint"\nthe one that never closes\n')
    result = cli("search", "one")
    assert result.exit_code == 0 and result.stdout.count("\n") == 1 and "the real one" in result.stdout
    assert f"skipped .ai/local/state/checkpoints/{broken.name} has no readable front matter" in result.stderr


def test_pins_are_trusted_exactly_as_continuity_trusts_them(cli, store):
    """The search reads pins without loading `continuity` (by continuity_doc's rules): every way
    `continuity.examine` finds a document wrong, as written and with its hash made to fit, `search_pins.intact`
    refuses too."""
    import copy

    from majordomus import continuity, search_pins

    ws = Workspace.open(str(store))
    path = Path(continuity.path_of(ws, "alpha"))
    good = json.loads(path.read_text())
    assert search_pins.intact(good, "alpha", 1024) and continuity.examine(ws, "alpha")[1] == []

    def set_(key: str, value: Any) -> Any:
        return lambda d: d.__setitem__(key, value)

    def on_pin(key: str, value: Any) -> Any:
        return lambda d: d["constraints"][0].__setitem__(key, value)

    keys = ("version", "task", "configHash", "runtime", "createdAt", "updatedAt", "objective", *continuity_doc.PIN_KEYS)
    changes = ([(lambda d, k=k: d.pop(k)) for k in (*keys, "integrity")]
               + [set_("task", "beta"), set_("objective", 1), set_("constraints", "x"), set_("constraints", [1]),
                  set_("integrity", "x"), set_("integrity", {"sha256": 1}), set_("note", "added"),
                  on_pin("source", "nobody"), on_pin("text", 1), set_("objective", "changed"),
                  on_pin("text", "an escape \x1b[31m"), on_pin("text", "two\nlines"), on_pin("id", "x")]
               + [(lambda d, k=k: d["constraints"][0].pop(k)) for k in ("id", "text", "source", "createdAt")]
               + [lambda d: d["decisions"].append(dict(d["constraints"][0], id="0" * 8))])  # a pin more: fine
    for n, change in enumerate(changes):
        for rehash in (False, True):
            doc = copy.deepcopy(good)
            change(doc)
            if rehash and isinstance(doc.get("integrity"), dict):
                doc["integrity"]["sha256"] = continuity.digest(doc)
            path.write_text(json.dumps(doc))
            findings = continuity.examine(ws, "alpha")[1]
            assert search_pins.intact(json.loads(path.read_text()), "alpha", 1024) == (not findings), (n, rehash, findings)


def test_a_changed_continuity_is_named_and_its_pins_not_shown(cli, store):
    path = state_dir(store) / "context" / "alpha" / "continuity.json"
    path.write_text(path.read_text().replace("never buffer", "always buffer"))
    result = cli("search", "buffer")
    assert result.exit_code == 1 and result.stdout == ""
    assert "skipped the pins of `alpha`: the continuity of task `alpha` cannot be trusted" in result.stderr
    assert "integrity mismatch" in result.stderr


def test_the_names_checked_a_column_at_a_time_are_the_grammars():
    """`_not_records` checks a listing of names of one length column by column: each name that changes one
    character of a record's name (to a character its place does not take) is found, alone or among many."""
    from majordomus.lite import names

    good = "20260903T100000Z--main--0123abc--0123456789abcdef.md"
    variants = [good[:p] + c + good[p + 1:] for p in range(len(good)) for c in "X!-a5"]
    for name in variants:
        assert search_names._not_records([name]) == ({name} if names.RECORD_NAME.fullmatch(name) is None else set()), name
    assert search_names._not_records([good] * 100 + variants) == {v for v in variants if not names.RECORD_NAME.fullmatch(v)}
    assert search_names._not_records(["20260903T100000Z--" + "s" * n + good[-30:] for n in (1, 64)]) == set()
    too_long = "20260903T100000Z--" + "s" * 65 + good[-30:]
    assert search_names._not_records([too_long]) == {too_long}


def test_the_times_of_names_of_one_length_are_each_names_time():
    """`search_names.times` does a block of names of one length a column at a time; any other block name by
    name: the same time as `search._iso` of each name, in order."""
    import random

    rng = random.Random(7)
    stamps = [f"{rng.randrange(2000, 2100)}{rng.randrange(1, 13):02}{rng.randrange(1, 29):02}T"
              f"{rng.randrange(24):02}{rng.randrange(60):02}{rng.randrange(60):02}Z" for _ in range(300)]
    one_length = [s + "--main--0123abc--0123456789abcdef.md" for s in stamps]
    mixed = [s + ("--main" if n % 3 else "--feature-x") + "--0123abc--0123456789abcdef.md" for n, s in enumerate(stamps)]
    for listed in (one_length, mixed, one_length[:1]):
        assert search_names.times(listed) == [search._iso(name) for name in listed]


def test_the_block_check_of_ascii_lines_is_the_one_escaping_rule():
    """`textrules.ascii_plain` answers for ASCII bytes what `escape` does to them as a one-line field, alone
    or line by line (a listing's block of lines, the line breaks apart)."""
    from majordomus.lite import textrules

    for code in range(0x80):
        char = chr(code)
        plain = textrules.escape(f"a{char}b") == f"a{char}b"
        assert textrules.ascii_plain(f"a{char}b".encode()) is plain, code
        assert textrules.ascii_plain(f"x\na{char}b\ny".encode(), lines=True) is (plain or char == "\n"), code
    assert textrules.ascii_plain(b"a\nb") is False and textrules.ascii_plain(b"a\tb", lines=True) is False


def test_the_text_listing_is_each_rows_line_escaped(cli, repo):
    """The text listing makes the lines of the common case in blocks (search.text_chunks); it is, byte for
    byte, each row's `text_line` escaped, in order: over several blocks, with names of two lengths in one
    block, pins between records, a line to escape (a tab, an ESC, a control at its edge), text that is not
    ASCII, a record not as `records.render` writes it, a record over its cap, and two words."""
    from majordomus.lite.textrules import escape

    with_pin = "2026-09-03T10:05:00Z"
    from freezegun import freeze_time

    with freeze_time(with_pin):
        start_task(cli, "t1")
        assert cli("checkpoint", input="first note").exit_code == 0
        assert cli("context", "pin", "constraint", "a pinned note").exit_code == 0
    checkpoints = state_dir(repo) / "checkpoints"
    [real] = checkpoints.iterdir()
    data = real.read_bytes()
    bodies = [b"plain note %d\nsecond line\n", b"tab\tin a note %d\n", b"\x1cedge note %d\x1c\nx\n",
              b"ESC \x1b[2J note %d\n", "caf\u00e9 note %d\n".encode(), b"note %d\n" + b"l\n" * 45,
              b"two words: note %d and more\nnote alone\n"]
    for n in range(1300):
        body = bodies[n % len(bodies)].replace(b"%d", str(n).encode())
        record = data.replace(b"first note", body.rstrip(b"\n"))
        if n % 11 == 0:  # not as `records.render` writes it: the careful way
            record = record.replace(b"schema_version: 1\n", b"").replace(b"---\n", b"---\nextra: 1\n", 1)
        slug = "main" if n % 5 else "feature-x"
        digest = hashlib.sha256(record).hexdigest()[:16]
        name = f"202609{3 + n // 600:02}T10{n // 60 % 10:02}{n % 60:02}Z--{slug}--0123abc--{digest}.md"
        (checkpoints / name).write_bytes(record)
    ws = Workspace.open(str(repo))
    for words in (["note"], ["NOTE", "two"], ["line"]):
        query = search.Query(words)
        expected = "".join(escape(search.text_line(row)) + "\n" for row in search.rows(ws, query))
        chunks = list(search.text_chunks(ws, query))
        assert "".join(chunks) == expected and all(c.endswith("\n") for c in chunks), words
        assert len(chunks) > 1 or words != ["note"]  # over 512 lines: several blocks
        assert cli("search", *words).stdout == expected
    listed = cli("search", "note").stdout
    assert "  t1  pin         " in listed and "\\x09in a note" in listed and "\\x1b[2J" in listed
    assert "  edge note 2\n" in listed and "café note" in listed and "skipped" in cli("search", "note").stderr


@pytest.mark.parametrize("words", [("EVIL",), ("EVIL", "note"), ("-E", "EV[I]L")], ids=["word", "words", "regex"])
@pytest.mark.parametrize("as_json", [False, True])
def test_a_record_replaced_after_it_was_written_is_named_never_shown(cli: Any, repo: Path, words: tuple[str, ...],
                                                                     as_json: bool) -> None:
    """A match in a record whose bytes no longer hash to the digest in its name is not what majordomus stored:
    it is named on stderr (skipped), never listed. The edge: the same text as written is found."""
    start_task(cli)
    path = repo / cli("checkpoint", input="an EVIL note\n").stdout.strip()
    json_flag = ("--json",) if as_json else ()
    assert cli("search", *words, *json_flag).exit_code == 0
    path.write_text(path.read_text().replace("an EVIL note", "an EVIL  note"))
    found = cli("search", *words, *json_flag)
    assert found.exit_code == 1, found.output
    assert "EVIL" not in found.stdout and path.name in found.stderr
    assert "no longer matches the digest in its name" in found.stderr
    assert search.tool(Workspace.open(str(repo)), list(words[-1:]), regex=words[0] == "-E")["matches"] == []


def test_a_record_that_names_its_task_twice_is_named_never_listed(cli: Any, repo: Path) -> None:
    """Which `task:` counts would be the reader's choice: the record is refused by every reader alike, here
    skipped and named (the edge: the record as written is found, under its one task)."""
    start_task(cli)
    path = repo / cli("checkpoint", input="a twice note\n").stdout.strip()
    assert cli("search", "twice").exit_code == 0
    text = path.read_text()
    first = text.index('task: "')
    path.write_text(text[:first] + 'task: "zz"\n' + text[first:])
    renamed = as_written(path)
    for args in (("search", "twice"), ("search", "twice", "--task", "t1")):
        found = cli(*args)
        assert found.exit_code == 1 and "twice note" not in found.stdout, found.output
        assert renamed.name in found.stderr
