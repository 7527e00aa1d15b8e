"""Install like a user: `pip install .` (not editable) into a fresh venv gives a working majordomus."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import git

ROOT = Path(__file__).resolve().parent.parent


def test_pip_install_into_fresh_venv(tmp_path, repo):
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, symlinks=True,
                    ignore=shutil.ignore_patterns(".venv", ".git", "build", "*.egg-info", "__pycache__",
                                                  ".pytest_cache", ".hypothesis"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                          "--disable-pip-version-check", str(src)], capture_output=True, text=True)
    assert pip.returncode == 0, pip.stderr
    exe = str(venv / "bin" / "majordomus")
    init = subprocess.run([exe, "init"], cwd=repo, capture_output=True, text=True)
    assert init.returncode == 0, init.stderr
    assert (repo / ".ai" / "config.yaml").read_bytes() == (ROOT / ".ai-template" / "config.yaml").read_bytes()
    assert (repo / ".ai" / "profiles" / "default.md").is_file()
    again = subprocess.run([exe, "init"], cwd=repo, capture_output=True, text=True)
    assert again.returncode == 0 and "kept" in again.stdout and "created" not in again.stdout
    assert subprocess.run([exe, "task", "start", "t1"], cwd=repo).returncode == 0
    cp = subprocess.run([exe, "checkpoint"], cwd=repo, input=b"installed\n", capture_output=True)
    assert cp.returncode == 0, cp.stderr
    site = subprocess.run([str(venv / "bin" / "python"), "-c",
                           "import majordomus, os; print(os.path.dirname(majordomus.__file__))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert not site.startswith(str(src)), "installed copy must not point back at the source tree"
    assert (Path(site) / "man" / "majordomus-checkpoint.1").is_file()
    assert git(repo, "status", "--porcelain").splitlines() == ["?? .ai/"]
