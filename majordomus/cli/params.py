"""What each command takes, declared once, and the parser that reads the usual forms without click.

The commands declare their options and arguments with decorators shaped like click's (`command`, `group`,
`option`, `argument`, with the same words). Loading click costs more than most commands do, so a run is
parsed here when its words are of the forms commands are run with: a known `--option`, `--option=value`
or `--option value`, a known short option alone (`-n 5`, `-E`), positional arguments, `--`. Anything else —
`-h`/`--help`, an unknown option, a missing or extra argument, a value that starts with `-`, a number in any
spelling but plain digits, a value not among the choices — goes to click, built from the same declarations:
its help, and its usage errors in the one format (`clickrun.run`). So the two can only disagree where this
parser takes a form, and there it reads what click reads (a test walks the forms of every command).
Completion reads the same declarations.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing is not free: most commands are mostly start-up
if TYPE_CHECKING:
    from typing import Any, Callable

CONTEXT: dict[str, Any] = {"help_option_names": ["-h", "--help"]}


class _Declined(Exception):
    """A form this parser leaves to click."""


# ---------------------------------------------------------------- the types of values


class Choice:
    def __init__(self, choices: list[str] | tuple[str, ...]) -> None:
        self.choices = tuple(choices)

    def fast(self, value: str) -> str:
        if value not in self.choices:
            raise _Declined
        return value

    def to_click(self) -> Any:
        import click

        return click.Choice(list(self.choices))


class IntRange:
    """A whole number within [min, max] (click's IntRange): read here only in plain digits."""

    point = False  # whether one `.` between digits is read too (FloatRange)

    def __init__(self, min: float | None = None, max: float | None = None) -> None:
        self.min, self.max = min, max

    def fast(self, value: str) -> Any:
        """The spellings int() and float() read one way only: digits, and for a float one `.` between them."""
        whole, dot, fraction = value.partition(".")
        if not (whole.isdigit() and whole.isascii() and (not dot or (self.point and fraction.isdigit()
                                                                      and fraction.isascii()))):
            raise _Declined
        try:
            number = float(value) if self.point else int(value)
        except ValueError:  # more digits than int() converts (4300): click says what is wrong
            raise _Declined from None
        if (self.min is not None and number < self.min) or (self.max is not None and number > self.max):
            raise _Declined
        if self.point and number == float("inf"):  # 400 digits: no finite number, click says so
            raise _Declined
        return number

    def to_click(self) -> Any:
        import click

        if self.point:
            return _finite_range(click)(self.min, self.max)
        return click.IntRange(None if self.min is None else int(self.min), None if self.max is None else int(self.max))


class FloatRange(IntRange):
    """A number within [min, max] (click's FloatRange), and finite: click's own lets `nan` through (every
    comparison with it is false), and a `--timeout nan` waited for ever."""

    point = True


def _finite_range(click: Any) -> Any:
    """click's FloatRange that refuses `nan` (and, past no bound, `inf`): one rule for every number option."""
    import math

    class Finite(click.FloatRange):  # type: ignore[misc]
        def convert(self, value: Any, param: Any, ctx: Any) -> Any:
            number = super().convert(value, param, ctx)
            if not math.isfinite(number):
                self.fail(f"{value!r} is not a finite number.", param, ctx)
            return number

    return Finite


class Directory:
    """A directory's path (click's `Path(file_okay=False)`): click looks at what is there, so always click."""

    def fast(self, value: str) -> str:
        raise _Declined

    def to_click(self) -> Any:
        import click

        return click.Path(file_okay=False)


class _Unprocessed:
    """The words as they are (`run -- CMD ARGS…`)."""

    def fast(self, value: str) -> str:
        return value

    def to_click(self) -> Any:
        import click

        return click.UNPROCESSED


UNPROCESSED = _Unprocessed()
_OPTION_WORDS = frozenset(("is_flag", "type", "default", "multiple", "required", "metavar", "help",
                           "show_default", "callback"))
_ARGUMENT_WORDS = frozenset(("metavar", "required", "nargs", "type"))


# ---------------------------------------------------------------- the declarations


class Option:
    def __init__(self, decls: tuple[str, ...], attrs: dict[str, Any]) -> None:
        unknown = set(attrs) - _OPTION_WORDS
        assert not unknown, f"not declared here: {unknown}"
        self.decls, self.attrs = decls, attrs
        self.names = tuple(d for d in decls if d.startswith("-"))
        named = [d for d in decls if not d.startswith("-")]
        longs = [n for n in self.names if n.startswith("--")] or list(self.names)
        self.dest = named[0] if named else longs[0].lstrip("-").replace("-", "_").lower()  # as click names it
        self.is_flag = bool(attrs.get("is_flag"))
        self.multiple = bool(attrs.get("multiple"))
        self.required = bool(attrs.get("required"))
        self.type = attrs.get("type")
        self.default = attrs.get("default")
        self.callback: Callable[[Any, Any, Any], Any] | None = attrs.get("callback")
        self.help = str(attrs.get("help") or "")

    def value(self, text: str) -> Any:
        return text if self.type is None else self.type.fast(text)

    def missing(self) -> Any:
        if self.required:
            raise _Declined
        return () if self.multiple else (False if self.is_flag else self.default)

    def to_click(self) -> Any:
        import click

        attrs = dict(self.attrs)
        if self.type is not None:
            attrs["type"] = self.type.to_click()
        return click.Option(list(self.decls), **attrs)


class Argument:
    def __init__(self, dest: str, attrs: dict[str, Any]) -> None:
        unknown = set(attrs) - _ARGUMENT_WORDS
        assert not unknown, f"not declared here: {unknown}"
        self.dest, self.attrs = dest, attrs
        self.nargs = int(attrs.get("nargs", 1))
        self.required = bool(attrs.get("required", self.nargs > 0))  # click's default
        self.type = attrs.get("type")

    def value(self, text: str) -> Any:
        return text if self.type is None else self.type.fast(text)

    def to_click(self) -> Any:
        import click

        attrs = dict(self.attrs)
        if self.type is not None:
            attrs["type"] = self.type.to_click()
        return click.Argument([self.dest], **attrs)


class Command:
    """One command: its function, its parameters in the order declared, its help (the docstring)."""

    def __init__(self, name: str, function: Callable[..., Any], settings: dict[str, Any]) -> None:
        self.name, self.function, self.settings = name, function, settings
        self.params: list[Option | Argument] = list(reversed(getattr(function, "__params__", [])))
        self.help = function.__doc__
        self.options = {n: p for p in self.params if isinstance(p, Option) for n in p.names}
        self.arguments = [p for p in self.params if isinstance(p, Argument)]
        self.interspersed = settings.get("allow_interspersed_args", True)
        self._click: Any = None

    def parse(self, argv: list[str]) -> dict[str, Any]:
        """The function's keyword arguments, as click would give them; _Declined for a form left to click."""
        given: dict[str, Any] = {}
        words: list[str] = []
        i, n = 0, len(argv)
        while i < n:
            arg = argv[i]
            i += 1
            if arg == "--":
                words.extend(argv[i:])
                break
            if arg[:1] != "-" or len(arg) == 1:
                words.append(arg)
                if not self.interspersed:
                    words.extend(argv[i:])
                    break
                continue
            name, eq, text = arg.partition("=") if arg.startswith("--") else (arg, "", "")
            option = self.options.get(name)
            if option is None or (option.is_flag and eq):  # -h, --help, unknown, `-Ex`, `--flag=x`: click's
                raise _Declined
            if option.is_flag:
                given[option.dest] = True
                continue
            if not eq:
                if i >= n or argv[i][:1] == "-":  # none, or one click would take as the value: click says
                    raise _Declined
                text = argv[i]
                i += 1
            value = option.value(text)
            if option.multiple:
                given.setdefault(option.dest, []).append(value)
            else:
                given[option.dest] = value  # given twice: the last, as click
        kwargs = self._arguments(words)
        for param in self.params:
            if isinstance(param, Option):
                found = given[param.dest] if param.dest in given else param.missing()
                value = tuple(found) if param.multiple else found
                kwargs[param.dest] = value if param.callback is None else param.callback(None, param, value)
        return kwargs

    def _arguments(self, words: list[str]) -> dict[str, Any]:
        """The positional words to the arguments: the fixed ones from both ends, the variadic one the rest."""
        args = self.arguments
        variadic = [i for i, a in enumerate(args) if a.nargs == -1]
        out: dict[str, Any] = {}
        if variadic:
            at = variadic[0]
            fixed_after = len(args) - at - 1
            if len(words) < len(args) - 1:
                raise _Declined
            middle = words[at:len(words) - fixed_after]
            if args[at].required and not middle:
                raise _Declined
            for a, word in zip(args[:at], words):
                out[a.dest] = a.value(word)
            out[args[at].dest] = tuple(args[at].value(w) for w in middle)
            for a, word in zip(args[at + 1:], words[len(words) - fixed_after:]):
                out[a.dest] = a.value(word)
            return out
        if len(words) > len(args):
            raise _Declined
        for k, a in enumerate(args):
            if k < len(words):
                out[a.dest] = a.value(words[k])
            elif a.required:
                raise _Declined
            else:
                out[a.dest] = None
        return out

    def to_click(self) -> Any:
        """The same command as click declares it (made once): its --help and its usage errors."""
        if self._click is None:
            import click

            function = self.function

            def callback(**kwargs: Any) -> Any:
                return function(**kwargs)

            self._click = click.Command(self.name, callback=callback, params=[p.to_click() for p in self.params],
                                        help=self.help, context_settings=dict(CONTEXT, **self.settings))
        return self._click


class Group:
    """A command of subcommands (`task start`, `sync push`): its docstring is its help."""

    def __init__(self, name: str, function: Callable[..., Any]) -> None:
        self.name, self.help = name, function.__doc__
        self.commands: dict[str, Command] = {}
        self._click: Any = None

    def command(self, name: str, **settings: Any) -> Callable[[Callable[..., Any]], Command]:
        def register(function: Callable[..., Any]) -> Command:
            made = Command(name, function, _settings(settings))
            self.commands[name] = made
            return made

        return register

    def to_click(self) -> Any:
        if self._click is None:
            import click

            group = click.Group(self.name, help=self.help, context_settings=dict(CONTEXT))
            for name, sub in self.commands.items():
                group.add_command(sub.to_click(), name)
            self._click = group
        return self._click


def _settings(settings: dict[str, Any]) -> dict[str, Any]:
    given = dict(settings)
    given.pop("context_settings", None)  # click's spelling, when a command passes CONTEXT: the default here
    unknown = set(given) - {"allow_interspersed_args", "ignore_unknown_options"}
    assert not unknown, f"not declared here: {unknown}"
    return given


def command(name: str, **settings: Any) -> Callable[[Callable[..., Any]], Command]:
    return lambda function: Command(name, function, _settings(settings))


def group(name: str) -> Callable[[Callable[..., Any]], Group]:
    return lambda function: Group(name, function)


def option(*decls: str, **attrs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return lambda function: _declare(function, Option(decls, attrs))


def argument(dest: str, **attrs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return lambda function: _declare(function, Argument(dest, attrs))


def _declare(function: Callable[..., Any], param: Option | Argument) -> Callable[..., Any]:
    # decorators apply from the bottom up: Command reverses the list into the order they are written in
    function.__dict__.setdefault("__params__", []).append(param)
    return function


json_option = option("--json", "as_json", is_flag=True, help="Print JSON for machines.")


# ---------------------------------------------------------------- running one


def parse(declared: Command | Group, argv: list[str]) -> tuple[Command, dict[str, Any]] | None:
    """(the command to run, its keyword arguments), or None when click is to read these words."""
    try:
        if isinstance(declared, Group):
            if not argv or argv[0] not in declared.commands:  # none, an option (--help), an unknown one
                return None
            sub = declared.commands[argv[0]]
            return sub, sub.parse(argv[1:])
        return declared, declared.parse(argv)
    except _Declined:
        return None


def run(declared: Command | Group, argv: list[str], prog: str) -> int:
    """Run a command as `main(argv) -> int`: parsed here when it can be, else by click."""
    parsed = parse(declared, argv)
    if parsed is None:
        from majordomus.cli import clickrun

        return clickrun.run(declared.to_click(), argv, prog)
    found, kwargs = parsed
    return int(found.function(**kwargs) or 0)


def echo(text: str, err: bool = False) -> None:
    """One line to stdout, or to stderr with `err`."""
    (sys.stderr if err else sys.stdout).write(text + "\n")


def workspace() -> Any:
    from majordomus.workspace import Workspace

    return Workspace.open()
