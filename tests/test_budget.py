"""The cut order of design §8 and the byte budget: whole entries go, oldest first, never a half character."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from majordomus import budget, continuity

KEYS = ("decisions", "constraints", "openItems", "nextActions")
CUT = [("nextActions", 0), ("nextActions", 1), ("nextActions", 2), ("openItems", 0), ("openItems", 1),
       ("openItems", 2), ("objective", 0), ("constraints", 0), ("constraints", 1), ("constraints", 2),
       ("decisions", 0), ("decisions", 1), ("decisions", 2)]


def make_doc(texts: dict[str, list[str]], objective: str = "The objective: ünïcödé 目標 🙂") -> dict[str, Any]:
    doc: dict[str, Any] = {"task": "t1", "objective": objective}
    for key in KEYS:
        doc[key] = [{"id": f"{key}-{i}", "text": t, "source": "agent", "createdAt": f"2026-01-0{i + 1}T00:00:00Z"}
                    for i, t in enumerate(texts.get(key, []))]
    return doc


def every_kind() -> dict[str, Any]:
    # Three pins of every kind, oldest first; multi-byte text in each so a byte cut would show.
    return make_doc({key: [f"{key} #{i} — ‘quoted’ 漢字 🙂 " + "x" * (20 + 7 * i) for i in range(3)] for key in KEYS})


def kept_units(doc: dict[str, Any], text: str) -> list[tuple[str, int]]:
    lines = text.split("\n")
    out = []
    for key, i in CUT:
        if key == "objective":
            if f"> {doc['objective']}" in lines:
                out.append((key, 0))
        elif f"- {doc[key][i]['text']}" in lines:
            out.append((key, i))
    return out


def test_every_budget_drops_a_prefix_of_the_cut_order() -> None:
    doc = every_kind()
    full = continuity.render_doc(doc, "t1", 10**6)
    assert full.dropped == [] and len(kept_units(doc, full.text)) == len(CUT)
    size = len(full.text.encode("utf-8"))
    seen_first_drop = False
    for limit in range(size, -1, -1):
        fitted = continuity.render_doc(doc, "t1", limit)
        data = fitted.text.encode("utf-8")
        assert len(data) <= limit  # never over the byte budget
        data.decode("utf-8")  # never cut mid-character (a str always encodes; the check is the round trip)
        kept = kept_units(doc, fitted.text)
        # What is kept is always a suffix of the cut order: nothing goes before everything ahead of it went.
        assert kept == CUT[len(CUT) - len(kept):], (limit, kept)
        # Every pin text that appears, appears whole.
        for key in KEYS:
            for pin in doc[key]:
                if pin["text"].split(" —")[0] + " —" in fitted.text:
                    assert pin["text"] in fitted.text
        if limit == size - 1:
            assert kept[0] == ("nextActions", 1), "the oldest next action goes first"
            assert fitted.dropped == ["1 next action"]
            seen_first_drop = True
    assert seen_first_drop


def test_decisions_go_last_and_the_objective_goes_whole() -> None:
    doc = every_kind()
    labels = "3 next actions, 3 open items, the objective, 3 constraints, 2 decisions"
    kept = f"# Continuity: t1\n\n## Decisions\n- {doc['decisions'][2]['text']}\n"
    limit = len(kept.encode()) + len(f"\n(dropped to fit 999 bytes: {labels})\n")
    fitted = continuity.render_doc(doc, "t1", limit)
    assert fitted.text == kept + f"\n(dropped to fit {limit} bytes: {labels})\n"
    assert kept_units(doc, fitted.text) == [("decisions", 2)]
    assert fitted.dropped == labels.split(", ")
    one_less = continuity.render_doc(doc, "t1", limit - 1)
    assert kept_units(doc, one_less.text) == [] and "## Decisions" not in one_less.text
    assert one_less.dropped[-1] == "3 decisions"


def test_continuity_show_respects_the_configured_budget(cli: Any, repo: Any) -> None:
    (repo / ".ai").mkdir()
    (repo / ".ai" / "config.yaml").write_text("continuity:\n  render_max_bytes: 512\n")
    cli("task", "start", "t1", "--objective", "Obj")
    for kind in ("decision", "constraint", "open-item", "next-action"):
        for i in range(3):
            assert cli("context", "pin", kind, "--", f"{kind} {i} 🙂 " + "y" * 60).exit_code == 0
    shown = cli("context", "show")
    assert len(shown.stdout.encode("utf-8")) <= 512
    assert "next-action 0" not in shown.stdout and "decision 2" in shown.stdout
    assert "(dropped to fit 512 bytes: 3 next actions" in shown.stdout
    rendered = (repo / ".ai/local/state/context/t1/continuity.md").read_bytes()
    assert rendered == shown.stdout.encode("utf-8")


pin_text = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=60).map(
    continuity.clean_text).filter(bool)


@settings(max_examples=150, deadline=None)
@given(texts=st.fixed_dictionaries({key: st.lists(pin_text, max_size=4) for key in KEYS}),
       objective=pin_text, limit=st.integers(min_value=0, max_value=1200))
def test_render_never_exceeds_the_budget(texts: dict[str, list[str]], objective: str, limit: int) -> None:
    fitted = continuity.render_doc(make_doc(texts, objective), "t1", limit)
    assert len(fitted.text.encode("utf-8")) <= limit


@settings(max_examples=150, deadline=None)
@given(entries=st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=8),
       fixed=st.text(max_size=40), limit=st.integers(min_value=0, max_value=400))
def test_fit_keeps_whole_entries_within_budget(entries: list[str], fixed: str, limit: int) -> None:
    block = budget.Block("\n# H\n", [budget.Entry(e + "\n", "entry") for e in entries])
    order = [(1, j) for j in range(len(entries))]
    fitted = budget.fit([fixed, block], order, limit, lambda labels: f"({', '.join(labels)})" if labels else "")
    assert len(fitted.text.encode("utf-8")) <= limit
    if not fitted.cut:
        assert fitted.text.startswith(fixed)
        dropped = int(fitted.dropped[0].split()[0]) if fitted.dropped else 0
        kept = entries[dropped:]
        assert fitted.text[len(fixed):].startswith(("\n# H\n" + "".join(e + "\n" for e in kept)) if kept else "")


def test_cut_to_never_splits_a_character() -> None:
    text = "a🙂b漢c"
    for n in range(len(text.encode("utf-8")) + 1):
        part = budget.cut_to(text, n)
        assert len(part.encode("utf-8")) <= n and text.startswith(part)


# ---------------------------------------------------------------- the runtime's own units (design §12)


def test_codex_tokens_round_up_at_every_byte_past_a_multiple_of_four() -> None:
    tokens = 2500
    room = budget.Room.codex(1 << 20, tokens)
    for extra, expected in ((0, tokens), (1, tokens + 1), (2, tokens + 1), (3, tokens + 1), (4, tokens + 1)):
        text = "x" * (4 * tokens + extra)
        assert budget.codex_tokens(text) == expected
        assert room.fits(text) is (extra == 0), extra
    # Multi-byte text counts its bytes: 3,333 CJK characters and one letter are 10,000 bytes, 2,500 tokens.
    assert budget.codex_tokens("漢" * 3333 + "x") == 2500 and room.fits("漢" * 3333 + "x")
    assert budget.codex_tokens("漢" * 3333 + "xy") == 2501 and not room.fits("漢" * 3333 + "xy")


def test_claude_counts_utf16_units_not_bytes_nor_code_points() -> None:
    assert budget.utf16_units("漢" * 10) == 10 and budget.utf16_units("🙂" * 10) == 20
    room = budget.Room(1 << 20, 10_000)
    assert room.fits("漢" * 10_000) and not room.fits("漢" * 10_001)
    assert room.fits("🙂" * 5_000) and not room.fits("🙂" * 5_000 + "x")
    assert room.cut("🙂" * 6_000) == "🙂" * 5_000  # never half a surrogate pair
    assert budget.Room(30, 10_000).max_units is None  # a unit limit over the byte limit never binds


def _cjk_task(repo: Any, config: str) -> None:
    from helpers import run_here

    assert run_here("init", cwd=repo).returncode == 0
    (repo / ".ai" / "config.yaml").write_text(config)
    assert run_here("task", "start", "t1", "--objective", "解析器を書く", cwd=repo).returncode == 0
    for n in range(60):
        body = f"检查点 {n}：" + "解析器的状态良好，测试通过，下一步是处理边界情况。" * 12 + "\n"
        assert run_here("checkpoint", cwd=repo, input=body).returncode == 0


def _context(repo: Any, runtime: str) -> str:
    import json

    from helpers import run

    done = run("hook", "session-start", "--runtime", runtime, cwd=repo, input=b"{}")
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"])


def test_an_all_cjk_briefing_fills_claude_codes_units(repo: Any) -> None:
    _cjk_task(repo, "continuity:\n  render_max_bytes: 65536\n")
    context = _context(repo, "claude")
    units = budget.utf16_units(context)
    assert 9_500 <= units <= 10_000, units  # not ~3,300 units, as a byte budget of 10,000 would give
    assert len(context.encode()) <= 65536
    last = context.splitlines()[-1]
    assert last.startswith("(dropped to fit ") and "UTF-16 units" in last and "oldest checkpoints" in last
    # Within the default render_max_bytes (24,576) the bytes bind: nearly all of them are used.
    (repo / ".ai" / "config.yaml").write_text("")
    context = _context(repo, "claude")
    assert 24_576 - 1_500 <= len(context.encode()) <= 24_576  # within one checkpoint (~1 KB) of full and budget.utf16_units(context) <= 10_000


def test_an_all_cjk_briefing_fills_codex_tokens(repo: Any) -> None:
    _cjk_task(repo, "")
    context = _context(repo, "codex")
    assert 2_200 <= budget.codex_tokens(context) <= 2_500, budget.codex_tokens(context)  # within one checkpoint
    assert context.splitlines()[-1].startswith("(dropped to fit ")
