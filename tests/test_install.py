"""Install like a user: `pip install .` (a real, non-editable wheel build) into a fresh venv gives a working
majordomus, with its templates inside and its man pages where `man` finds them."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

import pytest
from helpers import MAN_PAGES, ROOT, git, man_db, require, require_tool


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One install for the module. The wheel is built and installed with `--no-deps`; the dependencies
    come from this test run's own environment through a .pth file (the suite stays offline and fast), and so
    does the build backend (`--no-build-isolation`: the test extra's setuptools, where an isolated build
    would download one at every run). The wheel is the same PEP 517 build a user's `pip install .` makes."""
    base = tmp_path_factory.mktemp("install")
    src = base / "src"
    shutil.copytree(ROOT, src, symlinks=True,
                    ignore=shutil.ignore_patterns(".venv", ".git", "build", "*.egg-info", "__pycache__",
                                                  ".pytest_cache", ".hypothesis", "mutants"))
    venv = base / "venv"
    flags = ["install", "--quiet", "--disable-pip-version-check", "--no-deps", str(src)]
    pip_version = tuple(int(part) for part in metadata.version("pip").split(".")[:2])
    if pip_version >= (22, 3):  # `pip --python` installs into a venv made without pip: seconds faster
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        command = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), *flags,
                   "--no-build-isolation"]
    else:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        command = [str(venv / "bin" / "python"), "-m", "pip", *flags, "--no-build-isolation"]
    _link_dependencies(venv)
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    return venv


def _link_dependencies(venv: Path) -> None:
    """This run's own site-packages on the venv's path (a .pth file): the dependencies, and the backend."""
    site = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "zz-test-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")


def test_pip_install_into_fresh_venv(venv, repo):
    exe = str(venv / "bin" / "majordomus")
    init = subprocess.run([exe, "init"], cwd=repo, capture_output=True, text=True, check=False)
    assert init.returncode == 0, init.stderr
    assert (repo / ".ai" / "config.yaml").read_bytes() == (ROOT / ".ai-template" / "config.yaml").read_bytes()
    assert (repo / ".ai" / "profiles" / "default.md").is_file()
    again = subprocess.run([exe, "init"], cwd=repo, capture_output=True, text=True, check=False)
    assert again.returncode == 0 and "kept" in again.stdout and "created" not in again.stdout
    assert subprocess.run([exe, "task", "start", "t1"], cwd=repo, check=False).returncode == 0
    cp = subprocess.run([exe, "checkpoint"], cwd=repo, input=b"installed\n", capture_output=True, check=False)
    assert cp.returncode == 0, cp.stderr
    site = subprocess.run([str(venv / "bin" / "python"), "-c",
                           "import majordomus, os; print(os.path.dirname(majordomus.__file__))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert site.startswith(str(venv)), "the installed copy, not the source tree"
    assert (Path(site) / "man" / "majordomus-checkpoint.1").is_file()
    assert git(repo, "status", "--porcelain").splitlines() == ["?? .ai/"]


def test_pip_install_puts_the_pages_where_man_finds_them(venv, tmp_path):
    require(man_db() is not None, "man-db's `man` is not installed (apt-get install man-db)")
    installed = venv / "share" / "man" / "man1"
    for page in MAN_PAGES:
        assert (installed / page.name).read_bytes() == page.read_bytes(), page.name
    # man-db finds <prefix>/share/man from <prefix>/bin on PATH: nothing else points it at the venv.
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    names = [page.stem for page in MAN_PAGES]
    found = subprocess.run([man_db(), "-w", *names], capture_output=True, text=True, env=env, check=False)
    assert found.returncode == 0, found.stderr
    assert [Path(line).resolve() for line in found.stdout.split()] == \
        [(installed / f"{name}.1").resolve() for name in names]


def test_majordomus_help_opens_the_page_inside_the_installed_package(venv, repo, tmp_path):
    """What `uv tool install .` leaves (checked by hand, docs/testing.md): no page where `man` looks, and
    `majordomus help` still opens its own. Here the venv's share/man is hidden from man by MANPATH."""
    man = require_tool("man")
    empty = tmp_path / "no-pages"
    empty.mkdir()
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8",
           "MANPATH": str(empty), "MANPAGER": "cat"}
    assert subprocess.run([man, "-w", "majordomus-handoff"], env=env, capture_output=True, check=False).returncode != 0
    shown = subprocess.run([str(venv / "bin" / "majordomus"), "help", "handoff"], cwd=repo, env=env,
                           capture_output=True, text=True, check=False)
    assert shown.returncode == 0 and shown.stderr == "", shown.stderr
    assert re.sub(".\b", "", shown.stdout).lstrip().startswith("MAJORDOMUS-HANDOFF(1)")
    # without man: the --help text, and the page named where it is, inside the venv
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "git").symlink_to(shutil.which("git"))
    plain = subprocess.run([str(venv / "bin" / "majordomus"), "help", "handoff"], cwd=repo,
                           env=dict(env, PATH=str(bare)), capture_output=True, text=True, check=False)
    assert plain.returncode == 0 and plain.stdout.startswith("Usage: majordomus handoff")
    page = plain.stderr.rsplit(" ", 1)[1].strip()
    assert page.startswith(str(venv)) and page.endswith("/majordomus/man/majordomus-handoff.1"), plain.stderr
