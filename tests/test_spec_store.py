"""The lite layer's grammars and safe reads, and the store's write discipline, held at the unit level with
the design's rules written out (§2, §2a, §6 step 6): a fast test that fails first is what keeps `make mutation`
short, and what tells a reader which rule broke."""

from __future__ import annotations

import errno
import json
import os
import socket
import stat
from pathlib import Path

import pytest

from majordomus.errors import EnvironmentProblem
from majordomus.lite import active, names, safeio
from majordomus.store import files

UUID = "0f8fad5b-d9cb-469f-a165-70867728950e"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """An empty directory of its own (the hermetic fixture puts HOME and more in pytest's tmp_path)."""
    path = tmp_path / "t"
    path.mkdir()
    return path


# ---------------------------------------------------------------- identifiers: a full match, never `$` (§2a)


@pytest.mark.parametrize("value,ok", [(UUID, True), (UUID.upper(), False), (UUID + "\n", False), (UUID[:-1], False),
                                      (UUID + "0", False), (UUID.replace("-", ""), False), (None, False), (7, False)])
def test_pin_id_is_a_whole_lowercase_uuid(value, ok):
    assert names.is_pin_id(value) is ok


@pytest.mark.parametrize("value,ok", [("default", True), ("Reviewer.v2_x-y", True), ("a" * 64, True),
                                      ("a" * 65, False), ("-x", False), (".hidden", False), ("x\n", False),
                                      ("../x", False), ("a/b", False), ("", False), (None, False)])
def test_profile_name_grammar(value, ok):
    assert names.is_profile_name(value) is ok


@pytest.mark.parametrize("value,ok", [("t", True), ("0", True), ("a" * 64, True), ("a" * 65, False), ("t\n", False),
                                      ("T", False), ("_t", False), ("t/x", False), (1, False), (None, False)])
def test_task_id_grammar(value, ok):
    assert names.is_task_id(value) is ok


# ---------------------------------------------------------------- record names (§6 step 6)

DIGEST = "0123456789abcdef" * 4


@pytest.mark.parametrize("branch,slug", [("main", "main"), ("feature/x y", "feature-x-y"), ("ä", "-"),
                                         ("v1.2_rc-3", "v1.2_rc-3"), (None, "detached"), ("b" * 70, "b" * 64)])
def test_branch_slug(branch, slug):
    assert names.branch_slug(branch) == slug
    name = names.record_name("20260903T194500Z", branch, "abcdef0123", DIGEST)
    assert name == f"20260903T194500Z--{slug}--abcdef0--0123456789abcdef.md"


def test_an_unborn_head_is_seven_zeros_and_the_name_parses_back():
    name = names.record_name("20260903T194500Z", "main", None, DIGEST)
    assert name == "20260903T194500Z--main--0000000--0123456789abcdef.md"
    parsed = names.RecordName.parse(name)
    assert parsed is not None
    assert (parsed.timestamp, parsed.slug, parsed.head7, parsed.digest) == (
        "20260903T194500Z", "main", "0000000", "0123456789abcdef")
    assert names.name_digest(name) == "0123456789abcdef"


@pytest.mark.parametrize("name", ["../20260903T194500Z--main--0000000--0123456789abcdef.md",
                                  "20260903T194500Z--main--0000000--0123456789abcdef.md\n",
                                  "20260903T194500Z--ma/in--0000000--0123456789abcdef.md",
                                  "20260903T194500Z--main--000000--0123456789abcdef.md",
                                  "20260903T194500Z--main--0000000--0123456789abcdeF.md",
                                  "20260903T194500Z--main--0000000--0123456789abcdef.txt",
                                  "2026090T194500Z--main--0000000--0123456789abcdef.md", "", None])
def test_anything_else_is_not_a_record_name(name):
    assert names.RecordName.parse(name) is None and names.name_digest(name) is None


def test_a_record_pointer_is_directory_slash_record_name():
    name = names.record_name("20260903T194500Z", "main", None, DIGEST)
    assert names.is_record_pointer(f"checkpoints/{name}", "checkpoints")
    assert not names.is_record_pointer(f"handoffs/{name}", "checkpoints")
    assert not names.is_record_pointer(f"checkpoints/x/{name}", "checkpoints")
    assert not names.is_record_pointer(f"checkpoints{name}", "checkpoints")
    assert not names.is_record_pointer("checkpoints/notes.md", "checkpoints")
    assert not names.is_record_pointer(None, "checkpoints")


# ---------------------------------------------------------------- active.json, the one reader (§2a)


def test_slots_round_trip_and_anything_else_is_not_a_slot():
    assert active.unslot(active.slot("/w", "main")) == ("/w", "main")
    assert active.unslot(active.slot("/w", None)) == ("/w", None)
    for key in ('["/w"]', '["/w","b","c"]', '[1,"b"]', '["/w",2]', '{"a":1}', "not json", '"/w"'):
        assert active.unslot(key) is None, key


def write_index(root: Path, data: object) -> None:
    (root / "active.json").write_text(json.dumps(data) if not isinstance(data, str) else data)


def test_the_index_is_read_whole_or_refused_naming_why(work):
    assert active.read(str(work)) == {}
    assert active.active_id(str(work), "/w", "main") is None
    write_index(work, {active.slot("/w", "main"): "t1", active.slot("/w", None): "t2"})
    assert active.active_id(str(work), "/w", "main") == "t1"
    assert active.active_id(str(work), "/w", None) == "t2"
    assert active.active_id(str(work), "/other", "main") is None
    for data, why in (("{", "not valid JSON"), ([], "not a JSON object"), ({"x": "t1"}, "not a [worktree, branch]"),
                      ({active.slot("/w", "main"): "T1"}, "not a valid task id"),
                      ({active.slot("/w", "main"): 3}, "not a valid task id")):
        write_index(work, data)
        with pytest.raises(active.CorruptIndex) as refused:
            active.read(str(work))
        assert why in refused.value.message and refused.value.code == 12
        assert refused.value.path == str(work / "active.json")
        # what to do next (design §14): look with doctor, move the file away, resume the task
        assert "majordomus doctor" in refused.value.hint and f"mv {work / 'active.json'}" in refused.value.hint
        assert "`majordomus task resume ID`" in refused.value.hint


def test_a_bad_task_id_in_the_index_is_named_in_the_message_and_cut_to_80_characters(work):
    write_index(work, {active.slot("/w", "main"): "Bad Id"})
    with pytest.raises(active.CorruptIndex) as refused:
        active.read(str(work))
    assert "names 'Bad Id'" in refused.value.message
    write_index(work, {active.slot("/w", "main"): "X" * 200})
    with pytest.raises(active.CorruptIndex) as refused:
        active.read(str(work))
    assert f"names '{'X' * 80}'," in refused.value.message
    write_index(work, {"Y" * 200: "t1"})
    with pytest.raises(active.CorruptIndex) as refused:
        active.read(str(work))
    assert refused.value.message.endswith(f"pair: '{'Y' * 80}'; majordomus cannot tell which task is active")


# ---------------------------------------------------------------- safe reads (§2a)


def test_a_file_of_exactly_its_bound_is_read_and_one_byte_more_is_refused(work):
    path = work / "f"
    path.write_bytes(b"x" * 100)
    assert safeio.read(str(path), 100) == b"x" * 100
    path.write_bytes(b"x" * 101)
    with pytest.raises(safeio.UnsafeFile) as refused:
        safeio.read(str(path), 100)
    assert refused.value.code == 12 and "101 bytes" in refused.value.message and str(path) in refused.value.message


def test_a_file_that_grows_after_its_size_was_checked_is_still_refused(work, monkeypatch):
    """The bound holds on what is read, not only on what fstat said (a writer may append in between)."""
    path = work / "f"
    path.write_bytes(b"x" * (3 << 20))
    real = os.fstat

    def before_it_grew(fd: int) -> os.stat_result:
        st = real(fd)
        return os.stat_result((st.st_mode, st.st_ino, st.st_dev, st.st_nlink, st.st_uid, st.st_gid, 10,
                               int(st.st_atime), int(st.st_mtime), int(st.st_ctime)))

    monkeypatch.setattr(os, "fstat", before_it_grew)
    with pytest.raises(safeio.UnsafeFile) as refused:
        safeio.read(str(path), 2 << 20)
    assert refused.value.path == str(path) and refused.value.code == 12
    assert refused.value.message == f"{path} is over the {2 << 20} bytes majordomus ever writes or reads there; " \
                                    "majordomus does not read it"


def test_read_optional_keeps_the_bound(work):
    (work / "f").write_bytes(b"x" * 11)
    assert safeio.read_optional(str(work / "f"), 11) == b"x" * 11
    with pytest.raises(safeio.UnsafeFile):
        safeio.read_optional(str(work / "f"), 10)


def test_a_missing_file_passes_through_and_read_optional_says_none(work):
    with pytest.raises(FileNotFoundError):
        safeio.read(str(work / "nothing"))
    assert safeio.read_optional(str(work / "nothing")) is None
    (work / "empty").write_bytes(b"")
    assert safeio.read_optional(str(work / "empty")) == b""


def test_a_large_regular_file_is_read_whole_in_chunks(work):
    data = os.urandom(3 << 20)
    (work / "big").write_bytes(data)
    assert safeio.read(str(work / "big")) == data


@pytest.mark.parametrize("make,what", [
    (lambda p: p.symlink_to(p.parent / "target"), "is a symbolic link"),
    (lambda p: os.mkfifo(p), "is a FIFO"),
    (lambda p: p.mkdir(), "is a directory"),
])
def test_what_is_not_a_regular_file_is_refused_by_name(work, make, what):
    (work / "target").write_text("secret")
    path = work / "f"
    make(path)
    with pytest.raises(safeio.UnsafeFile) as refused:
        safeio.read(str(path))
    assert what in refused.value.message and refused.value.code == 12
    assert refused.value.path == str(path) and refused.value.what.startswith(what)
    assert refused.value.message == f"{path} {refused.value.what}; majordomus does not read it"
    assert "move it away" in refused.value.hint


def test_a_socket_is_refused(work):
    path = work / "s"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        with pytest.raises(safeio.UnsafeFile) as refused:
            safeio.read(str(path))
        assert refused.value.code == 12 and refused.value.path == str(path)
        assert refused.value.message == f"{path} is a socket or a device; majordomus does not read it"
    finally:
        server.close()


def test_kind_of_names_every_file_type():
    assert safeio.kind_of(stat.S_IFLNK) == "a symbolic link"
    assert safeio.kind_of(stat.S_IFIFO) == "a FIFO"
    assert safeio.kind_of(stat.S_IFDIR) == "a directory"
    assert safeio.kind_of(stat.S_IFCHR) == "a device" and safeio.kind_of(stat.S_IFBLK) == "a device"
    assert safeio.kind_of(stat.S_IFSOCK) == "a socket"
    assert safeio.kind_of(stat.S_IFREG) == "not a regular file"


def test_a_path_that_cannot_be_opened_is_an_environment_problem(work):
    """Not a refusal of the file (exit 12 all the same): a path through a regular file cannot be opened."""
    (work / "file").write_text("x")
    with pytest.raises(EnvironmentProblem) as failed:
        safeio.read(str(work / "file" / "below"))
    assert not isinstance(failed.value, safeio.UnsafeFile)
    assert failed.value.code == 12 and "cannot read" in failed.value.message
    assert failed.value.hint == "check its permissions and the state directory's"  # what to do next


# ---------------------------------------------------------------- the write discipline (§2, §6 step 6, STYLE 4)


def test_link_in_stores_once_with_mode_0600_whatever_the_umask(work):
    old = os.umask(0)
    try:
        path, created = files.link_in(str(work), "r.md", b"record\n")
    finally:
        os.umask(old)
    assert created and path == str(work / "r.md")
    assert Path(path).read_bytes() == b"record\n" and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert os.listdir(work) == ["r.md"]  # the temp name is gone
    again, created_again = files.link_in(str(work), "r.md", b"other bytes\n")
    assert again == path and created_again is False
    assert Path(path).read_bytes() == b"record\n"  # never replaced
    assert os.listdir(work) == ["r.md"]


def test_link_in_never_follows_a_link_at_the_final_name(work):
    target = work / "target"
    (work / "r.md").symlink_to(target)
    _, created = files.link_in(str(work), "r.md", b"x")
    assert created is False and not target.exists()


def test_temp_names_already_taken_are_skipped(work):
    for attempt in range(3):
        (work / f"{files.TMP_PREFIX}{os.getpid()}-{attempt}").write_text("left by a crash")
    path, created = files.link_in(str(work), "r.md", b"record\n")
    assert created and Path(path).read_bytes() == b"record\n"
    assert sorted(os.listdir(work)) == sorted(["r.md"] + [f"{files.TMP_PREFIX}{os.getpid()}-{i}" for i in range(3)])


def test_replace_is_atomic_and_keeps_the_requested_mode(work):
    path = work / "task.yaml"
    files.replace(str(path), b"one\n")
    assert path.read_bytes() == b"one\n" and stat.S_IMODE(path.stat().st_mode) == 0o600
    files.replace(str(path), b"two\n", mode=0o640)
    assert path.read_bytes() == b"two\n" and stat.S_IMODE(path.stat().st_mode) == 0o640
    assert os.listdir(work) == ["task.yaml"]


def test_replace_without_a_mode_gives_the_users_default(work):
    old = os.umask(0o027)
    try:
        files.replace(str(work / "settings.json"), b"{}", mode=None)
    finally:
        os.umask(old)
    assert stat.S_IMODE((work / "settings.json").stat().st_mode) == 0o640


def test_a_replace_that_fails_leaves_the_old_file_and_no_temp(work):
    path = work / "task.yaml"
    path.write_bytes(b"old\n")
    target = work / "dir"
    target.mkdir()
    (target / "inside").write_text("x")  # a non-empty directory cannot be replaced by a file
    with pytest.raises(EnvironmentProblem) as failed:
        files.replace(str(target), b"new\n")
    assert failed.value.code == 12 and str(target) in failed.value.message
    assert path.read_bytes() == b"old\n"
    assert sorted(os.listdir(work)) == ["dir", "task.yaml"]


def test_a_directory_that_cannot_be_written_is_exit_12(work):
    missing = work / "gone"
    with pytest.raises(EnvironmentProblem) as failed:
        files.link_in(str(missing), "r.md", b"x")
    assert failed.value.code == 12 and "cannot write" in failed.value.message


def test_write_derived_is_best_effort_and_leaves_no_temp(work):
    files.write_derived(str(work / "cache"), b"derived\n")
    assert (work / "cache").read_bytes() == b"derived\n" and os.listdir(work) == ["cache"]
    files.write_derived(str(work / "no" / "cache"), b"x")  # cannot be written: no error, nothing left
    assert os.listdir(work) == ["cache"]


def test_write_derived_truncates_and_never_follows_a_link_at_its_temp_name(work):
    path = work / "cache"
    temp = work / f"cache.{os.getpid()}.tmp"
    temp.write_bytes(b"a much longer leftover from a crashed writer\n")
    files.write_derived(str(path), b"short\n")
    assert path.read_bytes() == b"short\n"
    target = work / "elsewhere"
    target.write_bytes(b"not ours\n")
    temp.symlink_to(target)
    files.write_derived(str(path), b"again\n")
    assert target.read_bytes() == b"not ours\n"


def test_write_derived_that_cannot_rename_leaves_no_temp(work):
    occupied = work / "cache"
    occupied.mkdir()
    (occupied / "inside").write_text("x")
    files.write_derived(str(occupied), b"x")
    assert sorted(os.listdir(work)) == ["cache"]


def test_the_lock_is_exclusive_and_never_a_link(work):
    import fcntl

    lock = work / "lock"
    with files.locked(str(lock)):
        fd = os.open(lock, os.O_RDWR)
        try:
            with pytest.raises(OSError) as busy:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            assert busy.value.errno in (errno.EAGAIN, errno.EWOULDBLOCK)
        finally:
            os.close(fd)
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600
    fd = os.open(lock, os.O_RDWR)  # released on exit
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.close(fd)
    link = work / "link"
    link.symlink_to(lock)
    with pytest.raises(EnvironmentProblem) as refused, files.locked(str(link)):
        pass
    assert "symbolic link" in refused.value.message and refused.value.code == 12
