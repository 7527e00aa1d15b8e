"""Every shell block of README.md and docs/*.md runs against the installed majordomus, so the docs stay true.

The blocks of one file run in order, one `bash -euo pipefail` process each, starting in an empty scratch
directory under a fresh HOME; the working directory carries over from one block to the next, as it would
for a reader typing them into one terminal (a page that needs a repository makes one in its first block).
A block that cannot run here (an install, `make`, a real remote) has `<!-- not-run: why -->` on the line
just before its fence, and a skip without a reason is a failure.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import BIN

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = {"sh", "bash"}
# Shell-like tags this test would not run: a block must say `sh` (or `bash`) to be run, or `text` for output.
UNRUN_SHELL_TAGS = {"shell", "console", "zsh", "shell-session", "sh-session", "terminal"}
OPENING = re.compile(r"^(`{3,}|~{3,})\s*([^\s`]*)")
NOT_RUN = re.compile(r"^<!--\s*not-run:(.*)-->\s*$")
LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    not_run: str | None  # the reason given in the marker, when there is one

    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def fenced_blocks(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = OPENING.match(lines[i])
        if not opening:
            i += 1
            continue
        fence, lang = opening.groups()
        closing = re.compile(re.escape(fence[0]) + f"{{{len(fence)},}}\\s*$")
        end = i + 1
        while end < len(lines) and not closing.match(lines[end]):
            end += 1
        assert end < len(lines), f"{page.relative_to(ROOT)}:{i + 1}: fence never closed"
        marker = NOT_RUN.match(lines[i - 1]) if i > 0 else None
        text = "\n".join(lines[i + 1:end]) + "\n"
        found.append(Block(page, i + 1, lang.lower(), text, marker.group(1).strip() if marker else None))
        i = end + 1
    return found


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def runnable(page: Path) -> list[Block]:
    return [b for b in fenced_blocks(page) if b.lang in SHELL and b.not_run is None]


# Only the pages that have a block to run: a page without one (docs/design.md) is no test, rather than a
# test that always skips.
RUNNABLE = [page for page in PAGES if runnable(page)]


def test_the_pages_exist():
    assert (ROOT / "README.md").is_file()
    assert len(PAGES) > 1, "docs/ holds the detail the README points at"
    assert ROOT / "README.md" in RUNNABLE and len(RUNNABLE) > 1, "the README and docs show commands that run"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_fence_is_tagged_and_every_skip_has_a_reason(page: Path):
    blocks = fenced_blocks(page)
    for block in blocks:
        assert block.lang, f"{block.where()}: tag the fence (sh for commands, text for output, yaml, …)"
        assert block.lang not in UNRUN_SHELL_TAGS, f"{block.where()}: tag shell as `sh` so that it is run"
        if block.not_run is not None:
            assert block.lang in SHELL, f"{block.where()}: a not-run marker on a block that is never run"
            assert block.not_run, f"{block.where()}: `<!-- not-run: … -->` needs a reason"
    lines = page.read_text(encoding="utf-8").splitlines()
    marked = {b.line - 1 for b in blocks if b.not_run is not None}
    for number, line in enumerate(lines, 1):
        if NOT_RUN.match(line):
            assert number in marked, f"{page_id(page)}:{number}: a not-run marker must sit just before a fence"


@pytest.mark.parametrize("page", RUNNABLE, ids=page_id)
def test_shell_blocks_run(page: Path, tmp_path: Path):
    blocks = runnable(page)
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}",
               MAJORDOMUS_OWNER="ann@example.com", NO_COLOR="1")
    cwd = tmp_path / "scratch"
    cwd.mkdir()
    cwd_file = tmp_path / "cwd-after-block"
    for block in blocks:
        script = (f"cd {shlex.quote(str(cwd))}\n"
                  f"trap 'pwd > {shlex.quote(str(cwd_file))}' EXIT\n" + block.text)
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env,
                                stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, check=False)
        if result.returncode != 0:
            pytest.fail(f"{block.where()}: exit {result.returncode}\n--- block\n{block.text}"
                        f"--- stdout\n{result.stdout[-4000:]}\n--- stderr\n{result.stderr[-4000:]}", pytrace=False)
        if cwd_file.is_file():
            cwd = Path(cwd_file.read_text().strip())


def test_readme_is_a_five_minute_read():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; the detail goes in docs/"
    headings = [line for line in lines if line.startswith("## ")]
    assert headings[-1] == "## Contributing", "the project commands close the README, under their own heading"


def test_relative_links_resolve_and_every_page_is_reachable():
    linked: set[Path] = set()
    for page in PAGES:
        for target, _anchor in LINK.findall(page.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            path = (page.parent / target).resolve()
            assert path.exists(), f"{page_id(page)} links to {target}, which does not exist"
            linked.add(path)
    orphans = [page_id(p) for p in PAGES[1:] if p.resolve() not in linked]
    assert orphans == [], f"pages no other page links to: {orphans}"
