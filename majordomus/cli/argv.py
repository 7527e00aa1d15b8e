"""The one small parser of the commands that do not load click (`checkpoint`, `check`, `hook`, `help`).

They run in commit hooks and at every agent session start, where argparse's import and its gettext
and locale set-up cost more than the rest of the command. They take a handful of flags, so this parses
exactly those: `--flag`, `--opt VALUE` / `--opt=VALUE` with a fixed set of values, at most one positional
argument, `-h`/`--help`. The options are declared once, with their help: `--help` shows them, `parse`
accepts them and completion offers them. A usage error is `majordomus: …` then `hint: …`, exit 2, as
everywhere (design §14).
"""

from __future__ import annotations

import sys

HELP_LINE = "show this help"


class Spec:
    """The options of one command: flags (True when given), options with their allowed values (the first is
    the default), at most one positional argument, and one line of help for each."""

    def __init__(self, usage: str, flags: dict[str, str] | tuple[str, ...] = (),
                 choices: dict[str, tuple[str, ...]] | None = None, exclusive: tuple[str, ...] = (),
                 described: dict[str, str] | None = None, argument: str | None = None,
                 argument_kind: str | None = None) -> None:
        self.flags = tuple(flags)
        self.choices = choices or {}  # "--runtime" -> ("claude", "codex")
        self.exclusive = exclusive  # at most one of these flags
        # option -> its one line; given as the values of `flags` or in `described` (for choice options)
        self.described = {**(flags if isinstance(flags, dict) else {}), **(described or {})}
        self.argument = argument  # "COMMAND": one optional positional argument, stored as "command"
        self.argument_kind = argument_kind  # what completion offers for it ("command": the command names)
        self.usage = usage + self._options()  # what --help prints: the text, then every option's line

    def _options(self) -> str:
        rows = [(f"{o} {'|'.join(self.choices[o])}" if o in self.choices else o, self.described.get(o, ""))
                for o in (*self.flags, *self.choices)] + [("-h, --help", HELP_LINE)]
        width = max(len(label) for label, _text in rows)
        return "\noptions:\n" + "".join(f"  {label:<{width}}  {text}\n" for label, text in rows)


class Usage(Exception):
    pass


def _key(option: str) -> str:
    return option.lstrip("-").replace("-", "_").lower()


def parse(spec: Spec, argv: list[str]) -> dict[str, object] | None:
    """{"show": True, "runtime": "claude", …}, or None after printing the help (the caller exits 0)."""
    if "-h" in argv or "--help" in argv:
        sys.stdout.write(spec.usage)
        return None
    got: dict[str, object] = {_key(f): False for f in spec.flags}
    got.update({_key(o): values[0] for o, values in spec.choices.items()})
    if spec.argument is not None:
        got[_key(spec.argument)] = None
    i = 0
    try:
        while i < len(argv):
            name, eq, value = argv[i].partition("=")
            if name in spec.flags and not eq:
                got[_key(name)] = True
            elif name in spec.choices:
                if not eq:
                    i += 1
                    if i >= len(argv):
                        raise Usage(f"{name} needs a value: {' or '.join(spec.choices[name])}")
                    value = argv[i]
                if value not in spec.choices[name]:
                    raise Usage(f"{name} must be {' or '.join(spec.choices[name])}, not `{value}`")
                got[_key(name)] = value
            elif spec.argument is not None and got[_key(spec.argument)] is None and not argv[i].startswith("-"):
                got[_key(spec.argument)] = argv[i]
            else:
                raise Usage(f"unexpected argument `{argv[i]}`")
            i += 1
        given = [f for f in spec.exclusive if got[_key(f)]]
        if len(given) > 1:
            raise Usage(f"{' and '.join(given)} do not go together")
    except Usage as exc:
        from majordomus.errors import UsageError

        line = spec.usage.splitlines()[0]
        path = []
        for word in line.split()[1:]:
            if not word.replace("-", "").isalpha() or not word.islower() or word.startswith("-"):
                break
            path.append(word)
        raise UsageError(f"{exc}", f"{line}; see `{' '.join(path)} --help`") from None
    return got
