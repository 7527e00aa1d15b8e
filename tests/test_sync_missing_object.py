"""A synced tree that would name an object the repository does not hold (design §13, §14): libgit2 refuses the
entry, and that is an environment problem naming it, exit 12, never a traceback and exit 70."""

from __future__ import annotations

import subprocess

import pytest
from helpers import start_task

from majordomus.errors import ENVIRONMENT, EnvironmentProblem
from majordomus.git import odb
from majordomus.workspace import Workspace

MISSING = "1234567890abcdef1234567890abcdef12345678"


def test_a_tree_entry_naming_a_missing_blob_is_exit_12_naming_the_entry(cli, repo):
    start_task(cli, "t1")
    ws = Workspace.open(str(repo))
    writer = odb.TreeWriter(ws.repo, None)
    writer.put(("tasks", "ok.yaml"), odb.Entry(odb.write_blob(ws.repo, b"ok\n"), odb.BLOB))
    writer.put(("tasks", "b1.yaml"), odb.Entry(MISSING, odb.BLOB))
    with pytest.raises(EnvironmentProblem) as caught:
        writer.write()
    assert caught.value.code == ENVIRONMENT == 12
    assert "`tasks/b1.yaml`" in caught.value.message and "does not have" in caught.value.message
    assert "run the command again" in caught.value.hint


def test_a_base_tree_that_names_a_missing_blob_is_kept_as_it_is(cli, repo):
    # `git mktree --missing` writes a tree that names an absent blob, as a half-fetched object store would
    start_task(cli, "t1")
    listing = f"100644 blob {MISSING}\tgone.yaml\n"
    base = subprocess.run(["git", "mktree", "--missing"], cwd=repo, input=listing.encode(), capture_output=True,
                          check=True).stdout.decode().strip()
    ws = Workspace.open(str(repo))
    writer = odb.TreeWriter(ws.repo, base)
    writer.put(("new.yaml",), odb.Entry(odb.write_blob(ws.repo, b"new\n"), odb.BLOB))
    tree = writer.write()  # libgit2 checks the entries inserted, not the ones the base tree already had
    names = subprocess.run(["git", "ls-tree", "--name-only", tree], cwd=repo, capture_output=True,
                           check=True).stdout.decode().split()
    assert names == ["gone.yaml", "new.yaml"]
