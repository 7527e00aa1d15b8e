"""The manual pages: lint-clean, one date and footer, 80 columns wide, and installed where `man` finds them."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAN = ROOT / "majordomus" / "man"
PAGES = sorted(MAN.glob("*.1"))
MANDOC = shutil.which("mandoc")
TH = re.compile(r'^\.TH (\S+) (\S+) (.*)$', re.M)


def test_there_are_pages():
    assert MAN / "majordomus.1" in PAGES and len(PAGES) > 1


@pytest.mark.skipif(MANDOC is None, reason="mandoc is not installed (apt-get install mandoc)")
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_mandoc_lint_is_silent(page: Path):
    result = subprocess.run([MANDOC, "-Tlint", "-W", "warning", str(page)], capture_output=True, text=True)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


@pytest.mark.skipif(MANDOC is None, reason="mandoc is not installed (apt-get install mandoc)")
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_page_fits_an_80_column_terminal(page: Path):
    text = subprocess.run([MANDOC, "-Tascii", str(page)], capture_output=True, text=True, check=True).stdout
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


def man_db() -> str | None:
    man = shutil.which("man")
    if man is None:
        return None
    version = subprocess.run([man, "--version"], capture_output=True, text=True)
    return man if version.returncode == 0 and version.stdout.startswith("man ") else None


def install_without_dependencies(src: Path, venv: Path) -> None:
    """`pip install --no-deps SRC` into a new venv: a real wheel build, as a user's `pip install .` makes."""
    flags = ["install", "--quiet", "--disable-pip-version-check", "--no-deps", str(src)]
    pip_version = tuple(int(part) for part in metadata.version("pip").split(".")[:2])
    if pip_version >= (22, 3):  # `pip --python` installs into a venv made without pip: seconds faster
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        command = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), *flags]
    else:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        command = [str(venv / "bin" / "python"), "-m", "pip", *flags]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.skipif(man_db() is None, reason="man-db's `man` is not installed (apt-get install man-db)")
def test_pip_install_puts_the_pages_where_man_finds_them(tmp_path: Path):
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, symlinks=True,
                    ignore=shutil.ignore_patterns(".venv", ".git", "build", "*.egg-info", "__pycache__",
                                                  ".pytest_cache", ".hypothesis"))
    venv = tmp_path / "venv"
    install_without_dependencies(src, venv)
    installed = venv / "share" / "man" / "man1"
    for page in PAGES:
        assert (installed / page.name).read_bytes() == page.read_bytes(), page.name
    # man-db finds <prefix>/share/man from <prefix>/bin on PATH: nothing else points it at the venv.
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    names = [page.stem for page in PAGES]
    found = subprocess.run([man_db(), "-w", *names], capture_output=True, text=True, env=env)
    assert found.returncode == 0, found.stderr
    assert [Path(line).resolve() for line in found.stdout.split()] == \
        [(installed / f"{name}.1").resolve() for name in names]
