"""The test helpers themselves (tests/helpers/): a missing tool fails under CI and skips elsewhere, .ci/run
installs every tool a test requires, and one Result type comes back from both ways of running majordomus."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import PACKAGES, ROOT, Result, require, require_tool, run, run_here


def test_a_missing_tool_skips_on_a_developers_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no-such-tool-here is not installed"):
        require_tool("no-such-tool-here")


@pytest.mark.parametrize("value", ["true", "1"])
def test_a_missing_tool_fails_under_ci(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.fail.Exception, match=r"mandoc-or-not is not installed \(apt-get install"):
        require_tool("mandoc-or-not")
    with pytest.raises(pytest.fail.Exception, match="needs a thing"):
        require(False, "needs a thing")
    require(True, "never said")


def test_a_present_tool_is_its_path() -> None:
    assert Path(require_tool("git")).name == "git"


def test_ci_installs_the_package_of_every_tool_a_test_requires() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    declared = dict(re.findall(r"\[(\w+)\]=([\w.+-]+)", script.split("declare -A PACKAGES=", 1)[1].split("\n", 1)[0]))
    required = set(re.findall(r"require_tool\(\"([\w.+-]+)\"\)", "".join(
        p.read_text() for p in (ROOT / "tests").rglob("*.py") if p.name != "test_helpers.py")))
    always_there = {"git", "bash", "unshare"}  # git and bash run the suite itself; unshare is util-linux (essential)
    assert required - always_there <= set(declared), required - always_there - set(declared)
    assert all(PACKAGES[tool] == package for tool, package in declared.items()), (declared, PACKAGES)
    assert script.rstrip().endswith("make test"), "CI runs exactly the README's test command"


def test_run_and_run_here_return_one_result_type(repo: Path) -> None:
    here, there = run_here("--version", cwd=repo), run("--version", cwd=repo)
    assert type(here) is type(there) is Result
    assert (here.exit_code, here.stdout, here.stderr) == (there.returncode, there.stdout, there.stderr)
    assert isinstance(here.stdout, bytes)
    text = run_here("--version", cwd=repo, text=True)
    assert text.stdout == here.stdout.decode() and text.stdout_bytes == here.stdout


def test_no_test_module_imports_another() -> None:
    """What tests share lives in tests/helpers/ (and the fixtures in conftest.py), never in a test module."""
    import ast

    offenders = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else (
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else [])
            offenders += [f"{path.relative_to(ROOT)}: {name}" for name in names
                          if name.split(".")[-1].startswith("test_")]
    assert offenders == []
