"""The manual pages: lint-clean, one date and footer, 80 columns wide, and installed where `man` finds them."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from helpers import MAN_PAGES, ROOT, require_tool

MAN = ROOT / "majordomus" / "man"
PAGES = MAN_PAGES
TH = re.compile(r'^\.TH (\S+) (\S+) (.*)$', re.M)


def test_there_are_pages():
    assert MAN / "majordomus.1" in PAGES and len(PAGES) > 1


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_mandoc_lint_is_silent(page: Path):
    result = subprocess.run([require_tool("mandoc"), "-Tlint", "-W", "warning", str(page)], capture_output=True, text=True, check=False)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_page_fits_an_80_column_terminal(page: Path):
    text = subprocess.run([require_tool("mandoc"), "-Tascii", str(page)], capture_output=True, text=True, check=True).stdout
    plain = re.sub(".\b", "", text).expandtabs()  # overstrike (bold, underline) takes no column
    wide = [line for line in plain.splitlines() if len(line) > 80]
    assert wide == [], f"{page.name}: lines wider than 80 columns:\n" + "\n".join(wide)


def test_one_title_line_style_on_every_page():
    styles = set()
    for page in PAGES:
        found = TH.search(page.read_text(encoding="utf-8"))
        assert found, f"{page.name}: no .TH line"
        name, section, rest = found.groups()
        assert name.replace("\\-", "-") == page.stem.upper() and section == "1", page.name
        date = rest.split()[0].strip('"')
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", date), f"{page.name}: date {date!r} is not YYYY-MM-DD"
        styles.add(rest)
    assert len(styles) == 1, f"every page shares one date, source and manual name: {sorted(styles)}"

