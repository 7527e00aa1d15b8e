"""`majordomus completion bash|zsh|fish`: print a shell completion script.

The scripts are small: at each TAB they ask `majordomus completion --complete SHELL -- WORDS…` (the words
after `majordomus`, the one being completed last) for the candidates. The answer is worked out here from
what the commands declare — the command table (`majordomus.commands`), each command's `params`
declarations, and the `argv.Spec` each of the others parses with, never their `--help` text — so it stays true as
commands change, and the dynamic values come from the state as it is now: task ids, pin ids, profiles,
and git's remotes. It only reads.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from majordomus.cli.argv import Spec

SHELLS = ("bash", "zsh", "fish")
USAGE = """usage: majordomus completion bash|zsh|fish

Print the completion script of a shell: commands, subcommands, options and their values, task ids,
pin ids, profiles and remotes. To enable it, add one line to the shell's start-up file:

  bash  (~/.bashrc)                  eval "$(majordomus completion bash)"
  zsh   (~/.zshrc, after compinit)   eval "$(majordomus completion zsh)"
  fish  (~/.config/fish/config.fish) majordomus completion fish | source

options:
  -h, --help  show this help
"""

BASH = r"""# majordomus completion for bash: eval "$(majordomus completion bash)"
_majordomus() {
    local cur="${COMP_WORDS[COMP_CWORD]}" out line
    COMPREPLY=()
    out=$(command majordomus completion --complete bash -- "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return 0
    if [[ $out == ":dirs" ]]; then
        compopt -o filenames 2>/dev/null
        while IFS= read -r line; do COMPREPLY+=("$line"); done < <(compgen -d -- "$cur")
        return 0
    fi
    [[ -n $out ]] || return 0
    while IFS= read -r line; do COMPREPLY+=("$line"); done <<< "$out"
}
complete -F _majordomus majordomus
"""

ZSH = r"""#compdef majordomus
# majordomus completion for zsh: eval "$(majordomus completion zsh)" (after compinit)
_majordomus() {
    local -a lines candidates
    lines=("${(@f)$(command majordomus completion --complete zsh -- "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    if [[ ${lines[1]} == ":dirs" ]]; then
        _path_files -/
        return
    fi
    candidates=(${lines:#})
    (( ${#candidates} )) && _describe -t majordomus 'majordomus' candidates
}
compdef _majordomus majordomus
"""

FISH = r"""# majordomus completion for fish: majordomus completion fish | source
function __majordomus_complete
    set -l words (commandline -opc) (commandline -ct)
    set -e words[1]
    set -l out (command majordomus completion --complete fish -- $words 2>/dev/null)
    if test "$out[1]" = ":dirs"
        __fish_complete_directories (commandline -ct)
        return
    end
    printf '%s\n' $out
end
complete -c majordomus -f -a '(__majordomus_complete)'
"""

SCRIPTS = {"bash": BASH, "zsh": ZSH, "fish": FISH}
# Parameter names (each command's declared ones) whose values come from the state or from git.
DYNAMIC = {"task_id": "task", "from_task": "task", "pin_id": "pin", "remote": "remote", "profile": "profile"}
HELP = {"-h": "show help", "--help": "show help"}
GLOBAL = {"-C": "run as if started in DIR", "--version": "print the version", "--help": "show help"}


def main(argv: list[str]) -> int:
    if argv[:1] == ["--complete"]:
        from majordomus import commands

        return _complete(argv[1:], commands.summaries(), commands.lookup)
    if argv[:1] in (["-h"], ["--help"]):
        sys.stdout.write(USAGE)
        return 0
    if len(argv) != 1 or argv[0] not in SCRIPTS:
        from majordomus.errors import UsageError

        got = f"`{' '.join(argv)}`" if argv else "nothing"
        raise UsageError(f"completion needs one shell: bash, zsh or fish (got {got})",
                         "eval \"$(majordomus completion bash)\" in ~/.bashrc; see `majordomus completion --help`")
    sys.stdout.write(SCRIPTS[argv[0]])
    return 0


class Node:
    """What one command or subcommand accepts: options (name -> (takes a value, values kind, help)),
    subcommands (name -> help, and how to get each), and the kinds of its positional arguments."""

    def __init__(self) -> None:
        self.options: dict[str, tuple[bool, Any, str]] = dict.fromkeys(HELP, (False, None, "show help"))
        self.subcommands: dict[str, str] = {}
        self.arguments: list[Any] = []  # a kind ("task", …), a tuple of choices, or None (free text)
        self.variadic = False  # the last argument takes any number of words
        self.child: Callable[[str], Node | None] | None = None  # name -> Node, when there are subcommands


def command_node(name: str, commands: dict[str, str], lookup: Callable[[str], Any]) -> Node | None:
    """The node of a top-level command, from what the module that serves it declares: a `params` command or
    group, an `argv.Spec` (`OPTIONS`), or one Spec per subcommand (`SUBCOMMANDS`)."""
    if name not in commands:
        return None
    if name == "completion":
        node = Node()
        node.arguments = [SHELLS]
        return node
    module = sys.modules[lookup(name).__module__]
    spec = getattr(module, "OPTIONS", None)
    if spec is not None:
        return spec_node(spec)
    subcommands = getattr(module, "SUBCOMMANDS", None)
    if subcommands is not None:
        return specs_node(subcommands)
    from majordomus.cli import params

    for value in vars(module).values():
        if isinstance(value, (params.Command, params.Group)) and value.name == name:
            return declared_node(value)
    return None


def declared_node(declared: Any) -> Node:
    """A command's node from what it declares in `params`: its options, arguments and subcommands."""
    from majordomus.cli import params

    node = Node()
    if isinstance(declared, params.Group):
        node.subcommands = {sub: _short_help(cmd.help) for sub, cmd in declared.commands.items()}
        node.child = lambda sub: declared_node(declared.commands[sub]) if sub in declared.commands else None
        return node
    for param in declared.params:
        choices = param.type.choices if isinstance(param.type, params.Choice) else None
        kind = choices or DYNAMIC.get(param.dest)
        if isinstance(param, params.Option):
            takes = not param.is_flag
            for opt in param.names:
                node.options[opt] = (takes, kind if takes else None, param.help.split("\n")[0])
        else:
            node.arguments.append(kind)
            node.variadic = param.nargs == -1
    return node


def _short_help(text: str | None, limit: int = 70) -> str:
    """A subcommand's line, as its group's --help lists it: the first sentence of the first paragraph, or
    as many of its words as fit in `limit` columns followed by `...`."""
    words = (text or "").split("\n\n")[0].split()
    if words[:1] == ["\b"]:
        words = words[1:]
    kept: list[str] = []
    for word in words:
        if len(" ".join([*kept, word])) > limit:
            while kept and len(" ".join(kept)) + 3 > limit:
                kept.pop()
            return " ".join(kept) + "..."
        kept.append(word)
        if word.endswith("."):
            break
    return " ".join(kept)


def spec_node(spec: Spec) -> Node:
    """A command's options, from the `argv.Spec` it parses with."""
    node = Node()
    for flag in spec.flags:
        node.options[flag] = (False, None, spec.described.get(flag, ""))
    for option, values in spec.choices.items():
        node.options[option] = (True, tuple(values), spec.described.get(option, ""))
    if spec.argument is not None:
        node.arguments.append(spec.argument_kind)
    return node


def specs_node(specs: dict[str, Spec]) -> Node:
    """A command of subcommands (`hook`), one `argv.Spec` each; the first line of each says what it is."""
    node = Node()
    node.subcommands = {sub: _summary(spec) for sub, spec in specs.items()}
    node.child = lambda sub: spec_node(specs[sub]) if sub in specs else None
    return node


def _summary(spec: Spec) -> str:
    lines = [line for line in spec.usage.splitlines()[1:] if line.strip()]
    return lines[0] if lines else ""


def state_values(kind: str, dirs: list[str]) -> list[tuple[str, str]]:
    """(value, description) of a dynamic kind where the command would run (`-C` DIRS applied); nothing
    when the state cannot be read."""
    try:
        cwd = os.getcwd()
        for directory in dirs:
            cwd = os.path.join(cwd, os.path.expanduser(directory.strip("'\"")))
        from majordomus import api
        from majordomus.workspace import Workspace

        inner = Workspace.open(cwd)
        found = _VALUES[kind](api.Workspace(inner), inner)
    except Exception:
        return []
    # a value goes onto the command line as it is: nothing a shell or a terminal would act on
    # (a name that is not printable is left out, as one a shell would split); its description is escaped
    from majordomus.lite.textrules import escape

    return [(v, escape(d)) for v, d in found if v.isprintable() and not any(c.isspace() for c in v)]


def _tasks(ws: Any, inner: Any) -> list[tuple[str, str]]:
    return [(t["id"], f"{t['status']}: {t['title']}") for t in ws.tasks()]


def _pins(ws: Any, inner: Any) -> list[tuple[str, str]]:
    from majordomus import continuity

    active = ws.active_task()
    doc = continuity.load(inner, active["id"]) if active else None
    if doc is None:
        return []
    kinds = (("decisions", "decision"), ("constraints", "constraint"), ("openItems", "open-item"),
             ("nextActions", "next-action"))
    return [(pin["id"], f"{kind}: {pin['text']}") for key, kind in kinds for pin in doc.get(key, [])]


def _remotes(ws: Any, inner: Any) -> list[tuple[str, str]]:
    from majordomus.git import status

    return [(name, "git remote") for name in status.remotes(inner.place)]


def _profiles(ws: Any, inner: Any) -> list[tuple[str, str]]:
    from majordomus.lite import names

    place = inner.place
    found: set[str] = set()
    for root in (place.config_root, place.worktree):
        try:
            entries = os.listdir(os.path.join(root, ".ai", "profiles"))
        except OSError:
            continue
        found.update(e[:-3] for e in entries if e.endswith(".md") and names.is_profile_name(e[:-3]))
    return [(name, "profile") for name in sorted(found)]


_VALUES = {"task": _tasks, "pin": _pins, "remote": _remotes, "profile": _profiles}


def _complete(argv: list[str], commands: dict[str, str], lookup: Callable[[str], Any]) -> int:
    """Print the candidates for the last word of a command line, one per line, in the shell's format."""
    try:
        shell, words = argv[0], argv[1:]
        if words[:1] == ["--"]:
            words = words[1:]
        joined = _join_equals(words) if shell == "bash" else words
        # bash split `--opt=value` at the `=` (COMP_WORDBREAKS): it replaces only what follows it
        bare = bool(words) and joined[-1] != words[-1] and "=" in joined[-1]
        found = candidates(joined or [""], commands, lookup)
    except Exception:
        return 0
    if found == [":dirs"]:
        sys.stdout.write(":dirs\n")
        return 0
    from majordomus.output import escape

    lines = []
    for value, help_text in found:
        if bare and "=" in value:
            value = value.split("=", 1)[1]
        help_text = escape(help_text)[:80]
        if shell == "zsh":
            lines.append(value.replace("\\", "\\\\").replace(":", "\\:") + (f":{help_text}" if help_text else ""))
        elif shell == "fish":
            lines.append(value + (f"\t{help_text}" if help_text else ""))
        else:
            lines.append(value)
    sys.stdout.write("".join(f"{line}\n" for line in lines))
    return 0


def _join_equals(words: list[str]) -> list[str]:
    """bash splits `--runtime=codex` into `--runtime`, `=`, `codex` (`=` is in COMP_WORDBREAKS)."""
    out: list[str] = []
    i = 0
    while i < len(words):
        if words[i] == "=" and out and out[-1].startswith("--"):
            out[-1] += "=" + (words[i + 1] if i + 1 < len(words) else "")
            i += 2
            continue
        out.append(words[i])
        i += 1
    return out


def candidates(words: list[str], commands: dict[str, str], lookup: Callable[[str], Any]) -> Any:
    """[(value, description)] for the last of `words` (the words after `majordomus`), or [":dirs"]."""
    dirs: list[str] = []
    *before, current = words
    i = 0
    while i < len(before) and before[i].startswith("-"):
        if before[i] == "-C":
            if i + 1 < len(before):
                dirs.append(before[i + 1])
            i += 2
        else:
            if before[i].startswith("-C"):
                dirs.append(before[i][2:])
            i += 1
    if i > len(before):  # the current word is the directory of `-C`
        return [":dirs"]
    if i == len(before):
        if current.startswith("-"):
            return _matching(GLOBAL.items(), current)
        return _matching(commands.items(), current)
    node = command_node(before[i], commands, lookup)
    return [] if node is None else _in_command(node, before[i + 1:], current, dirs)


def _in_command(node: Node, before: list[str], current: str, dirs: list[str]) -> list[tuple[str, str]]:
    position = 0
    options_end = False
    expecting: tuple[bool, Any, str] | None = None
    for word in before:
        if expecting is not None:
            expecting = None
        elif word == "--" and not options_end:
            options_end = True
        elif word.startswith("-") and not options_end and word != "-":
            option = node.options.get(word.split("=", 1)[0])
            expecting = option if option and option[0] and "=" not in word else None
        elif node.child is not None and not node.arguments and position == 0:
            found = node.child(word)
            if found is None:
                return []
            node = found
        else:
            position += 1
    if expecting is not None:
        return _values(expecting[1], current, dirs)
    if current.startswith("-") and not options_end:
        name, eq, value = current.partition("=")
        if eq:
            option = node.options.get(name)
            return [(f"{name}={v}", d) for v, d in _values(option[1], value, dirs)] if option else []
        return _matching(((o, h) for o, (_t, _k, h) in node.options.items()), current)
    if node.child is not None and node.subcommands:
        return _matching(node.subcommands.items(), current)
    if position < len(node.arguments):
        return _values(node.arguments[position], current, dirs)
    if node.variadic and node.arguments:
        return _values(node.arguments[-1], current, dirs)
    return []


def _values(kind: Any, prefix: str, dirs: list[str]) -> list[tuple[str, str]]:
    if kind is None:
        return []
    if kind == "command":
        from majordomus import commands

        return _matching(commands.summaries().items(), prefix)
    if isinstance(kind, tuple):
        return _matching(((v, "") for v in kind), prefix)
    return _matching(state_values(kind, dirs), prefix)


def _matching(pairs: Any, prefix: str) -> list[tuple[str, str]]:
    return [(value, help_text) for value, help_text in pairs if value.startswith(prefix)]
