"""A remote's majordomus refs as this machine fetched them: which are machines, which is the folded state,
and which are refused before anything of them is read (not a commit, a newer format, a bad name)."""

from __future__ import annotations

from dataclasses import dataclass, field

from majordomus.errors import EnvironmentProblem, NotFound
from majordomus.git import odb
from majordomus.lite import textrules
from majordomus.sync import layout, machine, transport
from majordomus.sync.layout import Refusal
from majordomus.workspace import Workspace


@dataclass
class RemoteRef:
    name: str  # as the remote calls it: refs/majordomus/machines/ID or refs/majordomus/state
    machine: str | None  # the machine id; None for the folded state
    commit: odb.Commit
    view: odb.TreeView
    fmt: int


@dataclass
class Seen:
    remote: str
    refs: list[RemoteRef] = field(default_factory=list)
    broken: list[Refusal] = field(default_factory=list)  # refs that cannot be read at all: exit 12
    refused: list[Refusal] = field(default_factory=list)  # refs refused by name: exit 10
    ignored: list[str] = field(default_factory=list)  # other refs under refs/majordomus/ (not ours to read)

    def mine(self, machine_id: str | None) -> RemoteRef | None:
        return next((r for r in self.refs if machine_id is not None and r.machine == machine_id), None)

    @property
    def state(self) -> RemoteRef | None:
        return next((r for r in self.refs if r.machine is None), None)


def resolve_remote(ws: Workspace, name: str | None) -> str:
    """REMOTE, else the branch's upstream remote, else `origin`; a remote that is not configured is an error."""
    names = odb.remote_names(ws.repo)
    if name:
        if name not in names:
            raise NotFound(f"no remote named `{name}` in this repository",
                           "list the remotes with `git remote -v`, or add one with `git remote add NAME URL`")
        return _utf8(name)
    candidate = odb.upstream_remote(ws.repo) or "origin"
    if candidate in names:
        return _utf8(candidate)
    if not names:
        raise NotFound("this repository has no remote to sync with",
                       "add one with `git remote add origin URL`, then run the command again")
    raise NotFound(f"no remote `{candidate}` (the default) in this repository; it has: {', '.join(names)}",
                   "name the remote: `majordomus sync push REMOTE`")


def _utf8(name: str) -> str:
    """A remote's name goes into the ledger's events, which are UTF-8 text: a name git keeps that is not
    UTF-8 is exit 12 before anything is fetched or pushed (as a branch name that is not)."""
    problem = textrules.not_utf8(name)
    if problem is not None:
        raise EnvironmentProblem(f"the remote name {textrules.escape(name)} {problem}, and majordomus keeps it as "
                                 "UTF-8 text in its ledger; nothing was fetched or pushed",
                                 "rename the remote to a UTF-8 name (`git remote rename OLD NEW`), then run the "
                                 "command again")
    return name


def fetch(ws: Workspace, remote: str) -> None:
    """Every ref under refs/majordomus/ of the remote, in one fetch."""
    out = transport.fetch_all(ws.place, remote)
    if not out.ok:
        from majordomus.git import run

        raise EnvironmentProblem(f"cannot fetch refs/majordomus/* from {remote}:", detail=transport.said(out.detail), hint=
                                 run.lock_left(out.detail) or
                                 f"check the remote and your access to it (`git fetch {remote}`), then try again")


def read(ws: Workspace, remote: str, name: str, oid: str) -> tuple[RemoteRef | None, Refusal | None]:
    """The remote ref `name` (fetched, at `oid`) if it can be read; else why not, and how badly."""
    what = odb.kind(ws.repo, oid)
    if what != "commit":
        return None, Refusal(name, f"points at a {what or 'missing object'}, not a commit; nothing of it was read")
    found = odb.commit(ws.repo, oid)
    view = odb.tree(ws.repo, found.tree) if found is not None else None
    if found is None or view is None:
        return None, Refusal(name, "its commit has no readable tree")
    try:
        fmt = layout.format_of(view)
    except layout.NotAFormat as exc:
        return None, Refusal(name, f"its `format` file ({exc}) is not one majordomus writes; nothing of it was read")
    except layout.NewerFormat as exc:
        return None, Refusal(name, f"written by a newer majordomus (format {str(exc)!r}); upgrade majordomus "
                                   "on this machine to read it")
    mid = name[len(machine.PREFIX):] if name.startswith(machine.PREFIX) else None
    return RemoteRef(name, mid, found, view, fmt), None


def seen(ws: Workspace, remote: str) -> Seen:
    """The remote's refs as fetched last (`fetch` first for the remote's refs as they are now)."""
    prefix = transport.tracking_prefix(remote)
    out = Seen(remote)
    for local, oid in sorted(odb.refs_under(ws.repo, prefix).items()):
        name = transport.NAMESPACE + local[len(prefix):]
        if name != machine.STATE_REF and not name.startswith(machine.PREFIX):
            out.ignored.append(name)
            continue
        if name.startswith(machine.PREFIX) and not machine.is_machine_id(name[len(machine.PREFIX):]):
            out.refused.append(Refusal(name, "not a machine id (a-z, 0-9 and `-`); nothing of it was read"))
            continue
        ref, problem = read(ws, remote, name, oid)
        if ref is not None:
            out.refs.append(ref)
        elif problem is not None:
            out.broken.append(problem)
    return out


def refs_problem(found: Seen) -> EnvironmentProblem | None:
    """Exit 12 for refs that could not be read at all, after everything else was done."""
    if not found.broken:
        return None
    lines = "\n".join(f"  {r.path}: {r.reason}" for r in found.broken)
    return EnvironmentProblem(f"{found.remote} has majordomus refs this machine cannot read:\n{lines}",
                              "ask whoever can push to the remote to fix or delete them "
                              f"(`git push {found.remote} :REF`); everything else was synced")
