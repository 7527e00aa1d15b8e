"""Which checkpoints are "since the latest handoff" is decided by the order in which records arrived here
(design §9): the task's index, the ledger's events, the order a pull imports in — never by comparing times
that different clocks wrote. Real clones of one bare remote; each machine's clock is its own freeze_time. A
record another machine never shared is said to be not shared here, not deleted, and brief and doctor agree
on what is missing."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from freezegun import freeze_time
from helpers import HANDOFF_BODY, listed_dirs, run_here, state_dir
from helpers.sync import clone, events

from majordomus import brief, tasks
from majordomus.store import listing
from majordomus.workspace import Workspace

NOW = "2026-03-02T09:00:00Z"  # the true time, on the machine whose clock is right


def session_context(repo: Path) -> str:
    payload = json.dumps({"session_id": "s1", "source": "compact"}).encode()
    done = run_here("hook", "session-start", cwd=repo, input=payload)
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"])


def since_section(text: str) -> str:
    """The briefing's checkpoints section ('' without one)."""
    start = text.find("\n# Checkpoints")
    if start < 0:
        return ""
    end = text.find("\n# Last recorded facts", start)
    return text[start:end]


def ok(result: Any) -> Any:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


@pytest.mark.parametrize("ahead", ["2026-03-02T09:00:10Z", "2026-03-02T09:01:10Z", "2099-06-01T00:00:00Z"],
                         ids=["same-second", "60s-ahead", "years-ahead"])
def test_a_handoff_from_a_clock_running_ahead_hides_no_later_checkpoint(cli: Any, repo: Path, remote: Path,
                                                                        tmp_path: Path, ahead: str) -> None:
    b = clone(tmp_path, remote, "b")
    with freeze_time(ahead):  # A's clock
        ok(cli("task", "start", "t1"))
        ok(cli("checkpoint", input="a-note"))
        ok(cli("handoff", input=HANDOFF_BODY))
        ok(cli("sync", "push", "--checkpoints"))
    with freeze_time("2026-03-02T09:00:10Z"):  # B's clock is right
        ok(cli("sync", "pull", cwd=b))
        ok(cli("task", "resume", "t1", cwd=b))
        ok(cli("checkpoint", input="b-note", cwd=b))
        text = ok(cli("brief", cwd=b)).stdout
        context = session_context(b)
    assert "b-note" in since_section(text) and "a-note" not in text  # a-note: the handoff took it in
    assert "# Checkpoints since the latest handoff" in text and "(complete:" in text
    assert "b-note" in since_section(context) and "(complete:" in context
    assert "- last record: checkpoint at 2026-03-02T09:00:10Z" in text
    # And back on A (its index, the pull appended to it): B's checkpoint is since the handoff there too.
    ok(cli("sync", "push", "--checkpoints", cwd=b))
    with freeze_time(ahead):
        ok(cli("sync", "pull"))
        back = ok(cli("brief", "t1")).stdout
    assert "b-note" in since_section(back) and "a-note" not in back and "(complete:" in back


@pytest.mark.parametrize("behind", ["2026-03-02T08:59:59Z", "2020-01-01T00:00:00Z"], ids=["1s-behind", "years-behind"])
def test_a_clock_running_behind_brings_no_old_checkpoint_back(cli: Any, repo: Path, remote: Path, tmp_path: Path,
                                                              behind: str) -> None:
    b = clone(tmp_path, remote, "b")
    with freeze_time(NOW):
        ok(cli("task", "start", "t1"))
        ok(cli("checkpoint", input="one-note"))
        ok(cli("handoff", input=HANDOFF_BODY.replace("half done", "HANDOFF-ONE")))
        ok(cli("sync", "push", "--checkpoints"))
    with freeze_time(behind):  # B's clock
        ok(cli("sync", "pull", cwd=b))
        ok(cli("task", "resume", "t1", cwd=b))
        written = ok(cli("checkpoint", input="two-note", cwd=b)).stdout.strip()
        ok(cli("handoff", input=HANDOFF_BODY.replace("half done", "HANDOFF-TWO"), cwd=b))
        ok(cli("sync", "push", "--checkpoints", cwd=b))
        on_b = ok(cli("brief", "t1", cwd=b)).stdout
    # B's handoff took in B's checkpoint, by the order of events there, whatever its clock said.
    handoff = json.loads(ok(cli("task", "show", "t1", "--json", cwd=b)).stdout)["handoff"]
    front = (state_dir(b) / handoff).read_text()
    assert "checkpoints/" + Path(written).name in front
    with freeze_time("2026-03-02T09:05:00Z"):
        ok(cli("sync", "pull"))
        on_a = ok(cli("brief", "t1")).stdout
    for text in (on_a, on_b):
        assert "HANDOFF-TWO" in text and since_section(text) == ""
        assert "one-note" not in text and "two-note" not in text and "(complete:" in text
    # What B writes next is since that handoff, on both machines.
    with freeze_time(behind):
        ok(cli("task", "resume", "t1", cwd=b))
        ok(cli("checkpoint", input="three-note", cwd=b))
        ok(cli("sync", "push", "--checkpoints", cwd=b))
    with freeze_time("2026-03-02T09:06:00Z"):
        ok(cli("sync", "pull"))
        on_a = ok(cli("brief", "t1")).stdout
    assert "three-note" in since_section(on_a) and "two-note" not in on_a and "one-note" not in on_a


@pytest.mark.parametrize("kept_on", ["b", "a"], ids=["no-index-here", "index-here"])
def test_an_imported_checkpoint_of_a_task_whose_kept_record_points_at_none_is_briefed(
        cli: Any, repo: Path, remote: Path, tmp_path: Path, kept_on: str) -> None:
    """The pull brings a checkpoint, the task changed here too and this machine's record (no checkpoint
    pointer) is kept: the checkpoint is still the task's, briefed and in session-start. On B the task came
    by sync (no index: the ledger tells); on A it started there (its index, which the pull appended to)."""
    b = clone(tmp_path, remote, "b")
    writer, keeper = (repo, b) if kept_on == "b" else (b, repo)
    with freeze_time(NOW):
        ok(cli("task", "start", "t1"))
        ok(cli("sync", "push"))
        ok(cli("sync", "pull", cwd=b))
    with freeze_time("2026-03-02T09:00:30Z"):
        if writer == b:
            ok(cli("task", "resume", "t1", "--force", cwd=b))
        ok(cli("checkpoint", input="imported-note", cwd=writer))
        ok(cli("sync", "push", "--checkpoints", cwd=writer))
    with freeze_time("2026-03-02T09:00:31Z"):
        ok(cli("task", "done", "t1", "--force", cwd=keeper))
        ok(cli("sync", "pull", cwd=keeper))
        text = ok(cli("brief", "t1", cwd=keeper)).stdout
    assert [e["kept"] for e in events(keeper, "sync.conflict")] == ["local"]
    assert json.loads(ok(cli("task", "show", "t1", "--json", cwd=keeper)).stdout)["checkpoint"] is None
    ws = Workspace.open(str(keeper))
    indexed = listing.indexed_names(ws, tasks.load(ws, "t1"))
    assert (indexed is None) == (kept_on == "b")
    assert "imported-note" in since_section(text) and "(complete:" in text
    assert "- last record: checkpoint at 2026-03-02T09:00:30Z" in text
    with freeze_time("2026-03-02T09:00:40Z"):
        ok(cli("task", "resume", "t1", "--reopen", cwd=keeper))
        assert "imported-note" in since_section(session_context(keeper))


def test_three_machines_with_three_clocks_agree_on_what_is_since(cli: Any, repo: Path, remote: Path,
                                                                 tmp_path: Path) -> None:
    """A's clock is right, B's is years ahead, C's years behind; C pulls A's and B's work in one pull."""
    b, c = clone(tmp_path, remote, "b"), clone(tmp_path, remote, "c")
    with freeze_time(NOW):
        ok(cli("task", "start", "t1"))
        ok(cli("checkpoint", input="a1-note"))
        ok(cli("handoff", input=HANDOFF_BODY.replace("half done", "HANDOFF-A")))
        ok(cli("sync", "push", "--checkpoints"))
    with freeze_time("2099-01-01T00:00:00Z"):
        ok(cli("sync", "pull", cwd=b))
        ok(cli("task", "resume", "t1", cwd=b))
        ok(cli("checkpoint", input="b1-note", cwd=b))
        ok(cli("handoff", input=HANDOFF_BODY.replace("half done", "HANDOFF-B"), cwd=b))
        ok(cli("sync", "push", "--checkpoints", cwd=b))
    with freeze_time("2020-01-01T00:00:00Z"):
        ok(cli("sync", "pull", cwd=c))  # a1, A's handoff, b1 and B's handoff arrive together
        first = ok(cli("brief", "t1", cwd=c)).stdout
        ok(cli("task", "resume", "t1", cwd=c))
        ok(cli("checkpoint", input="c1-note", cwd=c))
        ok(cli("sync", "push", "--checkpoints", cwd=c))
    assert "HANDOFF-B" in first and since_section(first) == "" and "(complete:" in first
    with freeze_time("2026-03-02T09:01:00Z"):
        ok(cli("sync", "pull"))
        on_a = ok(cli("brief", "t1")).stdout
    with freeze_time("2099-01-01T00:01:00Z"):
        ok(cli("sync", "pull", cwd=b))
        on_b = ok(cli("brief", "t1", cwd=b)).stdout
    with freeze_time("2020-01-01T00:01:00Z"):
        on_c = ok(cli("brief", "t1", cwd=c)).stdout
    for text in (on_a, on_b, on_c):
        assert "HANDOFF-B" in text and "c1-note" in since_section(text), text
        assert "a1-note" not in text and "b1-note" not in text and "(complete:" in text


@pytest.mark.parametrize("clock", ["2026-03-02T08:00:00Z", "2099-01-01T00:00:00Z"], ids=["set-back", "set-ahead"])
def test_one_machine_whose_clock_moves_keeps_the_order_it_wrote_in(cli: Any, repo: Path, clock: str) -> None:
    with freeze_time(NOW):
        ok(cli("task", "start", "t1"))
        ok(cli("checkpoint", input="before-note"))
    with freeze_time("2026-03-02T09:00:05Z"):
        ok(cli("checkpoint", input="taken-in-note"))
    with freeze_time(clock if clock > NOW else NOW):
        ok(cli("handoff", input=HANDOFF_BODY))
        ok(cli("task", "resume", "t1"))
    with freeze_time(clock if clock < NOW else "2026-03-02T09:00:06Z"):
        ok(cli("checkpoint", input="after-note"))
        text = ok(cli("brief")).stdout
    assert "after-note" in since_section(text)
    assert "before-note" not in text and "taken-in-note" not in text and "(complete:" in text


def test_a_handoff_lists_the_checkpoints_written_before_it_whatever_the_clock(cli: Any, repo: Path) -> None:
    with freeze_time(NOW):
        ok(cli("task", "start", "t1"))
        first = ok(cli("checkpoint", input="first")).stdout.strip()
    with freeze_time("2020-01-01T00:00:00Z"):  # set back by years
        second = ok(cli("checkpoint", input="second")).stdout.strip()
        ok(cli("handoff", input=HANDOFF_BODY))
    [handoff] = list((state_dir(repo) / "handoffs").glob("*.md"))
    front = handoff.read_text().split("\n---\n", 1)[0]
    assert Path(first).name in front and Path(second).name in front


def test_the_index_keeps_the_order_records_arrived_in(cli: Any, repo: Path, remote: Path, tmp_path: Path) -> None:
    """Checkpoints written here and imported ones, and each handoff's place among them."""
    b = clone(tmp_path, remote, "b")
    with freeze_time(NOW):
        ok(cli("task", "start", "t1"))
        mine = Path(ok(cli("checkpoint", input="mine")).stdout.strip()).name
        handed = Path(ok(cli("handoff", input=HANDOFF_BODY)).stdout.strip()).name
        ok(cli("sync", "push", "--checkpoints"))
    with freeze_time("2020-01-01T00:00:00Z"):
        ok(cli("sync", "pull", cwd=b))
        ok(cli("task", "resume", "t1", cwd=b))
        theirs = Path(ok(cli("checkpoint", input="theirs", cwd=b)).stdout.strip()).name
        ok(cli("sync", "push", "--checkpoints", cwd=b))
    with freeze_time("2026-03-02T09:01:00Z"):
        ok(cli("sync", "pull"))
    ws = Workspace.open(str(repo))
    assert Path(listing.index_path(ws, "t1")).read_text().split() == [mine, f"handoffs/{handed}", theirs]
    assert [e["path"] for e in events(repo, "sync.import") if e["kind"] == "checkpoint"] == [f"checkpoints/{theirs}"]


def test_an_imported_task_is_briefed_from_the_ledger_without_listing_the_store(
        cli: Any, repo: Path, remote: Path, tmp_path: Path, monkeypatch: Any) -> None:
    """No index here (the task started elsewhere): the ledger's tail tells what arrived since, flat in the
    store's size — the checkpoints directory is never listed."""
    b = clone(tmp_path, remote, "b")
    with freeze_time("2099-01-01T00:00:00Z"):
        ok(cli("task", "start", "t1"))
        ok(cli("handoff", input=HANDOFF_BODY))
        ok(cli("sync", "push"))
    with freeze_time(NOW):
        ok(cli("sync", "pull", cwd=b))
        ok(cli("task", "resume", "t1", cwd=b))
        ok(cli("checkpoint", input="b-note", cwd=b))
    ws = Workspace.open(str(b))
    task = tasks.load(ws, "t1")
    assert listing.indexed_names(ws, task) is None
    listed = listed_dirs(monkeypatch)
    with freeze_time(NOW):
        result = brief.compose(ws, "t1")
    assert "b-note" in since_section(result.text) and not result.missing
    assert not [p for p in listed if p.endswith("checkpoints")]


def test_a_checkpoint_never_shared_is_not_shared_here_not_deleted(cli: Any, repo: Path, remote: Path,
                                                                  tmp_path: Path) -> None:
    """`sync push` without `--checkpoints` sends the task record, whose pointer names a checkpoint that did
    not come: brief says so truthfully (not "deleted", not MISSING RECORDS), `check` and doctor find nothing
    wrong here, and the next pull of it makes the briefing whole."""
    b = clone(tmp_path, remote, "b")
    with freeze_time(NOW):
        ok(cli("task", "start", "t1"))
        written = ok(cli("checkpoint", input="kept on A")).stdout.strip()
        ok(cli("sync", "push"))
        ok(cli("sync", "pull", cwd=b))
    rel = "checkpoints/" + Path(written).name
    text = ok(cli("brief", "t1", cwd=b)).stdout
    assert text.splitlines()[3].startswith(f"NOT SHARED HERE: {rel} — named by `t1`'s records from another machine")
    # which of the two causes is not known here: both are named, never "it never pushed it" alone
    assert "has not pushed it" in text and "or a pull here refused it" in text and "never pushed" not in text
    assert "MISSING RECORDS" not in text and "deleted" not in text and "kept on A" not in text
    assert "(complete:" not in text and "(incomplete: a record was not shared here (named at the top)" in text
    as_json = json.loads(ok(cli("brief", "t1", "--json", cwd=b)).stdout)
    assert as_json["missing"] == [] and as_json["not_shared"] == [rel]
    with freeze_time("2026-03-02T09:00:05Z"):
        doctor = cli("doctor", "--strict", cwd=b)
    assert doctor.exit_code == 0, doctor.stdout
    assert "brief.not-shared: not shared here by the machine that wrote them" in doctor.stdout
    assert rel in doctor.stdout
    with freeze_time("2026-03-02T09:00:10Z"):
        ok(cli("task", "resume", "t1", "--force", cwd=b))
        assert run_here("check", cwd=b).returncode == 0  # nothing here is missing: the record is simply absent
    ok(cli("sync", "push", "--checkpoints"))
    ok(cli("sync", "pull", cwd=b))
    whole = ok(cli("brief", "t1", cwd=b)).stdout
    assert "kept on A" in whole and "NOT SHARED" not in whole and "(complete:" in whole


@pytest.mark.parametrize("ledger", [True, False], ids=["ledger", "ledger-moved-away"])
def test_doctor_fails_what_brief_names_missing(cli: Any, repo: Path, ledger: bool) -> None:
    with freeze_time(NOW):
        ok(cli("task", "start", "t1"))
        older = ok(cli("checkpoint", input="older")).stdout.strip()
    with freeze_time("2026-03-02T09:00:01Z"):
        ok(cli("checkpoint", input="newer"))
    assert cli("doctor").exit_code == 0
    os.unlink(repo / older)
    if not ledger:
        shutil.move(state_dir(repo) / "ledger.jsonl", repo.parent / "ledger.jsonl")
    rel = "checkpoints/" + Path(older).name
    text = ok(cli("brief")).stdout
    assert text.splitlines()[2].startswith(f"MISSING RECORDS: {rel} (deleted)")
    doctor = cli("doctor")
    assert doctor.exit_code == 1
    assert f"brief.missing-record: task `t1` names {rel}, which is deleted" in doctor.stdout
    line = doctor.stdout.split("brief.missing-record:", 1)[1].split("\n")[1]
    assert line.strip().startswith("next: restore the record")
    assert run_here("check", cwd=repo).returncode == 1


@pytest.mark.parametrize("length", [3, 3000])
def test_a_pulled_chain_of_handoffs_is_ordered_by_its_links_however_long(length: int) -> None:
    """Each handoff after its previous one, walked rather than recursed: a chain of thousands (a long-lived
    task pulled at once) is ordered, not an internal error. Given shuffled, they come out in chain order."""
    import random

    from majordomus.sync import arrival
    from majordomus.sync.plan import RecordIn

    def handoff(n: int) -> RecordIn:
        previous = f'"handoffs/h{n - 1:05}.md"' if n else "null"
        data = f'---\nkind: "handoff"\ntask: "t1"\nprevious_handoff: {previous}\ncheckpoints: []\n---\nx\n'.encode()
        return RecordIn("handoffs", f"h{n:05}.md", "0" * 40, data, "refs/x", "t1")

    items = [handoff(n) for n in range(length)]
    shuffled = items[::-1]
    random.Random(7).shuffle(shuffled)
    assert [i.name for i in arrival.order(shuffled)] == [i.name for i in items]
