"""Doctor's one walk of the state directory: modes, links, leftovers, and every record read and hashed once."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field

from majordomus.doctor.findings import FAIL, WARN, Finding
from majordomus.lite import safeio, textrules
from majordomus.store import files, paths, records
from majordomus.workspace import Workspace

RECORD_DIRS = ("checkpoints", "handoffs")  # the record kinds with a retention setting
CHECKED_DIRS = RECORD_DIRS + ("runs",)  # run records (design §17) are checked like checkpoints


@dataclass
class Scan:
    """What one walk of the state directory saw: findings on the way, and what later checks need."""

    exists: bool = False
    findings: list[Finding] = field(default_factory=list)
    records: dict[str, str | None] = field(default_factory=dict)  # "checkpoints/NAME.md" -> sha256
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CHECKED_DIRS, 0))
    tasks: list[str] = field(default_factory=list)
    continuity: list[str] = field(default_factory=list)  # task ids with a context/ID/continuity.json
    entries: int = 0


class _Walk:
    """One walk of `.ai/local`. Paths are shown only when a finding needs them: the clean path stays cheap."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.scan = Scan()
        self.local = ws.paths.local
        self.local_shown = ws.display(self.local)
        self.record_dirs = {ws.paths.checkpoints: "checkpoints", ws.paths.handoffs: "handoffs", ws.paths.runs: "runs"}
        p = ws.paths  # the files of the state directory itself; the two locks are made again when gone
        self.locks = {p.lock, p.sync_lock}
        self.files = self.locks | {p.ledger, p.active_index, p.claims, p.machine_id}
        self.flat = {p.tasks, p.cache, p.receipts}  # directories of files only (each task's context/ID too)

    def show(self, path: str) -> str:
        if path.startswith(self.local + os.sep):
            return self.local_shown + path[len(self.local):]
        return self.ws.display(path)

    def add(self, level: str, code: str, path: str, message: str, hint: str) -> None:
        shown = self.show(path)
        # A hint's command names the file as a shell reads it: pasted, it acts on the file that is there.
        hint = hint.replace("'{path}'", "{quoted}").format(path=shown, quoted=textrules.shell_quoted(shown))
        self.scan.findings.append(Finding(level, code, message.format(path=shown), shown, hint))

    def mode(self, path: str, st: os.stat_result, want: int, what: str) -> None:
        mode = stat.S_IMODE(st.st_mode)
        if mode != want:
            self.add(FAIL, f"perm.{what}", path, f"{{path}} has mode {mode:04o}; state {'directories' if what == 'directory' else what + 's'} "
                     f"must be {want:04o}",
                     f"chmod {want:o} '{{path}}'")

    def run(self) -> Scan:
        scan = self.scan
        for path in (os.path.dirname(self.local), self.local):
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                return scan
            # `.ai` alone is committed configuration (or what a failed first write left): the state exists
            # once `.ai/local` does.
            scan.exists = path == self.local
            if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
                self.add(FAIL, "state.symlink", path, "{path} is not a real directory (a link?); majordomus refuses "
                         "to use it", "replace it with a real directory")
                return scan
        self.mode(self.local, st, paths.DIR_MODE, "directory")
        stack = [self.local]
        while stack:
            directory = stack.pop()
            try:
                with os.scandir(directory) as entries:
                    if directory in self.record_dirs:
                        self.records(directory, self.record_dirs[directory], entries, stack)
                    else:
                        for entry in entries:
                            if entry.path != self.ws.paths.ignore_file:  # git's file: `check_git` asks of it
                                self.entry(directory, entry, stack)
            except OSError as exc:
                self.add(FAIL, "state.unreadable", directory, f"cannot list {{path}}: {exc.strerror}",
                         "check its owner and mode (0700)")
        return scan

    def records(self, directory: str, kind: str, entries: Iterator[os.DirEntry[str]], stack: list[str]) -> None:
        """The hot loop: one open, fstat, read and close per record; nothing else on the clean path."""
        scan = self.scan
        digests = scan.records
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
        caps = records.body_caps(kind, self.ws.config)  # the one bound every reader holds a record to
        for entry in entries:
            claimed = records.name_digest(entry.name)
            if claimed is None or entry.is_symlink() or not entry.is_file(follow_symlinks=False):
                self.entry(directory, entry, stack)
                continue
            scan.entries += 1
            scan.counts[kind] += 1
            rel = f"{kind}/{entry.name}"
            try:
                fd = os.open(entry.path, flags)
            except OSError as exc:
                digests[rel] = None
                self.add(FAIL, "record.unreadable", entry.path, f"cannot read {{path}}: {exc.strerror}",
                         "check its owner and mode (0600)")
                continue
            try:
                st = os.fstat(fd)
                # Over the bound no record of ours ever is (a torn tail of 100 MiB, say): named, never read.
                data = b"" if st.st_size > records.MAX_RECORD_BYTES else os.read(fd, st.st_size + 1)
                while st.st_size < len(data) <= records.MAX_RECORD_BYTES:  # grew since fstat: up to the bound
                    more = os.read(fd, 65536)
                    if not more:
                        break
                    data += more
            finally:
                os.close(fd)
            if st.st_mode & 0o7777 != paths.FILE_MODE:
                self.mode(entry.path, st, paths.FILE_MODE, "file")
            if max(st.st_size, len(data)) > records.MAX_RECORD_BYTES:
                digests[rel] = None
                self.add(FAIL, "record.oversize", entry.path, f"{{path}} is over the {records.MAX_RECORD_BYTES} bytes "
                         "a record can be; majordomus did not write it and does not read it",
                         "move the file out of the store")
                continue
            digest = hashlib.sha256(data).hexdigest()
            digests[rel] = digest
            if not digest.startswith(claimed):
                self.add(FAIL, "record.digest", entry.path, f"{{path}}: the name claims digest {claimed} but the "
                         f"content hashes to {digest[:16]}: the record was changed after it was written",
                         "records are immutable: restore the original bytes (from a backup or `majordomus sync "
                         "pull`) or move the file out of the store")
            elif not data.startswith(b"---\n") or b"\n---\n" not in data:
                self.add(FAIL, "record.malformed", entry.path, "{path} has no front matter",
                         "move the file out of the store; majordomus did not write it")
            elif (over := records.over_cap(data, caps)) is not None:
                self.add(FAIL, "record.oversize", entry.path, f"{{path}} {over}; majordomus did not write it and "
                         "never shows it, whatever the digest in its name says", "move the file out of the store")

    def entry(self, directory: str, entry: os.DirEntry[str], stack: list[str]) -> None:
        """Anything but a well-named record: links, leftovers, directories, task and continuity files."""
        p = self.ws.paths
        self.scan.entries += 1
        if entry.is_symlink():
            self.add(FAIL, "state.symlink", entry.path, "{path} is a symbolic link; majordomus never follows links "
                     "inside its state", "replace the link with the real file or directory, or remove it")
            return
        if entry.name.startswith(files.TMP_PREFIX):
            try:
                landed = files.landed(entry.stat(follow_symlinks=False))
            except OSError:
                return  # gone since it was listed: a write that finished
            if landed:  # the rule by which the next write of a task's record removes it
                self.add(WARN, "store.temp-file", entry.path, "{path} is a second name of a stored record: its "
                         "write landed, and the temporary name was not removed", "removing it loses nothing: `rm '{path}'`")
            else:
                self.add(WARN, "store.temp-file", entry.path, "{path} is a temporary file left by an interrupted "
                         "write", "when no majordomus command is running, remove it: `rm '{path}'`")
            return
        if entry.is_dir(follow_symlinks=False) and entry.path in self.files:
            self.add(FAIL, "state.not-a-file", entry.path, "{path} is a directory where majordomus keeps a file; "
                     "no command can use it", "remove it: `rmdir '{path}'` (majordomus creates the lock file again)"
                     if entry.path in self.locks else "move it out of the state directory")
            return
        if entry.is_dir(follow_symlinks=False) and directory in self.record_dirs:
            self.add(FAIL, "state.not-a-file", entry.path, "{path} is a directory where only records belong",
                     "move it out of the store")
            return
        if entry.is_dir(follow_symlinks=False) and (directory in self.flat or os.path.dirname(directory) == p.contexts):
            self.add(FAIL, "state.not-a-file", entry.path, "{path} is a directory where majordomus keeps only files; "
                     "a command that reads it refuses it", "move it out of the state directory")
            return
        if entry.is_dir(follow_symlinks=False):
            self.mode(entry.path, entry.stat(follow_symlinks=False), paths.DIR_MODE, "directory")
            stack.append(entry.path)
            return
        if not entry.is_file(follow_symlinks=False):
            what = safeio.kind_of(entry.stat(follow_symlinks=False).st_mode)
            self.add(FAIL, "state.not-a-file", entry.path, f"{{path}} is {what} where only regular files belong; "
                     "nothing majordomus writes is one, and no command reads it", "move it out of the state directory")
            return
        parent = os.path.basename(directory)
        if directory in self.record_dirs and not entry.name.startswith("."):
            self.add(WARN, "record.stray", entry.path, "{path} is not named like a record; majordomus did not "
                     "write it", "move it out of the store")
        elif directory == p.tasks and entry.name.endswith(".yaml"):
            self.scan.tasks.append(entry.name[: -len(".yaml")])
        elif entry.name == "continuity.json" and os.path.dirname(directory) == p.contexts:
            self.scan.continuity.append(parent)
        st = entry.stat(follow_symlinks=False)
        if safeio.linked_elsewhere(st) and directory not in self.record_dirs:
            self.add(FAIL, "state.hard-link", entry.path, f"{{path}} has {st.st_nlink} names (a hard link to another "
                     "file): the commands that write it in place refuse it, and a write through it would change "
                     "that file too", "remove this name: `rm '{path}'` (the next command makes a file of its own)")
        self.mode(entry.path, st, paths.FILE_MODE, "file")


def scan_state(ws: Workspace) -> Scan:
    """One walk of `.ai/local`: modes, links, temp files, and every record read (and hashed) exactly once."""
    return _Walk(ws).run()
