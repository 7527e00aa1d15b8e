"""The one small parser of the hot commands (`checkpoint`, `check`, `hook`).

They run in commit hooks and at every agent session start, where argparse's import and its gettext
and locale set-up cost more than the rest of the command. They take a handful of flags, so this parses
exactly those: `--flag`, `--opt VALUE` / `--opt=VALUE` with a fixed set of values, `-h`/`--help`.
A usage error exits 2, as everywhere (design §14).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    pass


class Spec:
    """The options of one command: flags (True when given) and options with their allowed values."""

    def __init__(self, usage: str, flags: tuple[str, ...] = (), choices: dict[str, tuple[str, ...]] | None = None,
                 exclusive: tuple[str, ...] = ()) -> None:
        self.usage = usage
        self.flags = flags
        self.choices = choices or {}  # "--runtime" -> ("claude", "codex"); the first is the default
        self.exclusive = exclusive  # at most one of these flags


class Usage(Exception):
    pass


def parse(spec: Spec, argv: list[str]) -> dict[str, object] | None:
    """{"show": True, "runtime": "claude", …}, or None after printing the help (the caller exits 0)."""
    if "-h" in argv or "--help" in argv:
        sys.stdout.write(spec.usage)
        return None
    got: dict[str, object] = {f[2:].replace("-", "_"): False for f in spec.flags}
    got.update({o[2:].replace("-", "_"): values[0] for o, values in spec.choices.items()})
    i = 0
    try:
        while i < len(argv):
            name, eq, value = argv[i].partition("=")
            if name in spec.flags and not eq:
                got[name[2:].replace("-", "_")] = True
            elif name in spec.choices:
                if not eq:
                    i += 1
                    if i >= len(argv):
                        raise Usage(f"{name} needs a value: {' or '.join(spec.choices[name])}")
                    value = argv[i]
                if value not in spec.choices[name]:
                    raise Usage(f"{name} must be {' or '.join(spec.choices[name])}, not `{value}`")
                got[name[2:].replace("-", "_")] = value
            else:
                raise Usage(f"unexpected argument `{argv[i]}`")
            i += 1
        given = [f for f in spec.exclusive if got[f[2:].replace("-", "_")]]
        if len(given) > 1:
            raise Usage(f"{' and '.join(given)} do not go together")
    except Usage as exc:
        from majordomus.errors import UsageError

        raise UsageError(f"{exc}", spec.usage.splitlines()[0]) from None
    return got
