"""Many machines, one remote (design §13): eight clones push at the same moment, as real processes, and all of
them land; after one pull each (in this process: a pull writes nothing to the remote), every clone holds
every record and task of all eight."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from helpers import HANDOFF_BODY, MAJORDOMUS, state_dir
from helpers.sync import clone, remote_refs

CLONES = 8
CHECKPOINTS = 3


def _at_once(dirs: list[Path], *args: str, go: Path) -> list[subprocess.CompletedProcess[bytes]]:
    """`majordomus ARGS` in every directory, each process waiting on one file so that all start together."""
    wait = f'while [ ! -e "{go}" ]; do sleep 0.005; done; exec "{MAJORDOMUS}" "$@"'
    procs = [subprocess.Popen(["sh", "-c", wait, "sh", *args], cwd=d, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for d in dirs]
    try:
        time.sleep(0.2)  # every shell is waiting
        go.touch()
        outs = [p.communicate(timeout=240) for p in procs]
    finally:  # a failure here leaves no shell polling for a file that never comes
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return [subprocess.CompletedProcess(p.args, p.returncode, o, e) for p, (o, e) in zip(procs, outs)]


def test_eight_clones_push_at_the_same_moment_and_all_land(cli, repo, remote, tmp_path):
    clones = [clone(tmp_path, remote, f"m{i:02d}") for i in range(CLONES)]
    for i, where in enumerate(clones):
        assert cli("task", "start", f"t{i:02d}", cwd=where).exit_code == 0
        for k in range(CHECKPOINTS):
            assert cli("checkpoint", input=f"clone {i} note {k}", cwd=where).exit_code == 0
        assert cli("handoff", input=HANDOFF_BODY, cwd=where).exit_code == 0
    every = {"tasks": sorted(f"t{i:02d}.yaml" for i in range(CLONES)),
             "checkpoints": sorted(set().union(*(_names(w, "checkpoints") for w in clones))),
             "handoffs": sorted(set().union(*(_names(w, "handoffs") for w in clones)))}
    assert len(every["checkpoints"]) == CLONES * CHECKPOINTS and len(every["handoffs"]) == CLONES

    pushed = _at_once(clones, "sync", "push", "--checkpoints", "--json", go=tmp_path / "go-push")
    assert [p.returncode for p in pushed] == [0] * CLONES, [p.stderr for p in pushed if p.returncode]
    reports = [json.loads(p.stdout) for p in pushed]
    assert all(r["pushed"] and r["attempts"] == 1 for r in reports)  # one ref each: nothing to race for
    assert len([r for r in remote_refs(remote) if r.startswith("refs/majordomus/machines/")]) == CLONES

    # A pull writes nothing to the remote: one after another, in this process, shows what each clone gets.
    for where in clones:
        assert cli("sync", "pull", "--json", cwd=where).exit_code == 0
    for where in clones:
        for directory, names in every.items():
            assert sorted(_names(where, directory)) == names, (where, directory)
    for where in (clones[0], clones[-1]):
        status = cli("sync", "status", "--json", "--no-fetch", cwd=where)
        assert json.loads(status.stdout)["behind"]["tasks"] == []


def _names(where: Path, directory: str) -> set[str]:
    path = state_dir(where) / directory
    return {p.name for p in path.iterdir()} if path.exists() else set()
