"""Runs the benchmark's commands and reports wall time, CPU time, peak memory and exit code of each.

Started once as `python -S -E spawner.py` and fed requests on stdin, because a child's ru_maxrss starts from
what it inherits from the process that forked it: spawned straight from the benchmark (40 MiB once pygit2 is
imported) every command would report at least that. This process imports builtin modules only, and forks
(never vfork/posix_spawn, whose child would inherit this process's whole high-water mark), so a command's
figure is its own. What even a trivial exec inherits is measured once (`sh -c :`) and sent with every
answer, so that the caller can print "at most" for a figure at or below it.

Protocol, both ways: 8 ASCII digits giving the length, then a marshal'ed value.
Request: {"argv": [absolute path, args...], "cwd": str, "env": {str: str}, "stdin": path | None,
"stderr": path}. Answer: (wall seconds, user+sys seconds, ru_maxrss KiB, exit code, inherited KiB).
"""

from __future__ import annotations

import marshal
import os
import sys
import time

TYPE_CHECKING = False  # not typing's: importing typing would grow what every child inherits
if TYPE_CHECKING:
    import resource


def spawn(argv: list[str], cwd: str, env: dict[str, str], stdin: str | None,
          stderr: str) -> tuple[int, resource.struct_rusage]:
    """fork + exec with stdin from a file, stdout to /dev/null, stderr to a file; returns (status, rusage)."""
    pid = os.fork()
    if pid == 0:  # the child: nothing but file descriptors and exec
        try:
            os.chdir(cwd)
            for fd, path, flags in ((0, stdin or os.devnull, os.O_RDONLY), (1, os.devnull, os.O_WRONLY),
                                    (2, stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
                opened = os.open(path, flags, 0o600)
                os.dup2(opened, fd)
                os.close(opened)
            os.execve(argv[0], argv, env)
        except OSError as exc:
            os.write(2, f"cannot start {argv[0]}: {exc}\n".encode())
        finally:
            os._exit(127)
    _pid, status, usage = os.wait4(pid, 0)
    return status, usage


def main() -> None:
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    shell = "/bin/sh" if os.path.exists("/bin/sh") else "/usr/bin/sh"
    inherited = spawn([shell, "-c", ":"], "/", {}, None, os.devnull)[1].ru_maxrss
    while True:
        head = source.read(8)
        if len(head) < 8:
            return
        request = marshal.loads(source.read(int(head)))
        started = time.perf_counter()
        status, usage = spawn(request["argv"], request["cwd"], request["env"], request["stdin"], request["stderr"])
        seconds = time.perf_counter() - started
        answer = marshal.dumps((seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss,
                                os.waitstatus_to_exitcode(status), inherited))
        sink.write(b"%08d" % len(answer) + answer)
        sink.flush()


if __name__ == "__main__":
    main()
