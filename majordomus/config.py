"""`.ai/config.yaml`: documented defaults, validation, and the unknown keys doctor warns about."""

from __future__ import annotations

import json
import os

from majordomus.errors import ENVIRONMENT, EnvironmentProblem, MajordomusError
from majordomus.lite import limits, names, safeio
from majordomus.lite.limits import CONFIG_MAX_BYTES, DEFAULTS, MINIMUMS, NUMBER_MAX
from majordomus.lite.statepaths import CONFIG_RELPATH, committed

TYPE_CHECKING = False  # every command reads the configuration: no typing, no dataclasses at run time
if TYPE_CHECKING:
    from typing import Any



def _defaults() -> dict[str, Any]:
    """A fresh copy of the documented defaults (a JSON round trip: no `copy` module on the hot path)."""
    copied: dict[str, Any] = json.loads(json.dumps(DEFAULTS))
    return copied


LIST_MAX = 32  # section names a handoff must carry


class ConfigError(MajordomusError):
    code = ENVIRONMENT


class Config:
    """The validated configuration; `unknown_keys` are kept aside for doctor."""

    __slots__ = ("path", "signature", "unknown_keys", "values")

    def __init__(self, values: dict[str, Any], path: str | None = None, unknown_keys: list[str] | None = None,
                 signature: list[Any] | None = None) -> None:
        self.values = values
        self.path = path
        self.unknown_keys = unknown_keys or []
        # Set when the file was parsed afresh: the stat signature to cache it under (see `remember`).
        self.signature = signature

    def get(self, section: str, key: str) -> Any:
        return self.values[section][key]

    def cache_entry(self, cache_path: str) -> tuple[str, bytes] | None:
        """The validated copy to keep at `cache_path` (path, bytes) when the file was parsed afresh, else
        None: a write that stores state anyway writes it beside its own files (see `remember`)."""
        if self.signature is None:
            return None
        data = json.dumps({"signature": self.signature, "values": self.values, "unknown_keys": self.unknown_keys})
        return cache_path, data.encode("utf-8")

    @property
    def profile(self) -> str:
        return str(self.values["profile"])


def _check(value: Any, default: Any, dotted: str, where: str) -> Any:
    def bad(expected: str) -> ConfigError:
        return ConfigError(
            f"{where}: `{dotted}` must be {expected}, not {value!r}",
            f"fix `{dotted}` in {where} or delete the line to use the default ({default!r})",
        )

    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise bad("true or false")
    elif isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad("a whole number")
        if value < MINIMUMS.get(dotted, 0):
            raise bad(f"at least {MINIMUMS.get(dotted, 0)}" if dotted in MINIMUMS else "zero or more")
        if value > NUMBER_MAX:
            raise bad(f"at most {NUMBER_MAX}")
    elif dotted == "profile":  # an identifier, checked by full match (design §2a): never a path
        if not names.is_profile_name(value):
            raise bad("a profile name of 1–64 characters of A-Z, a-z, 0-9, `.`, `_`, `-`, starting with a "
                      "letter or digit")
    elif isinstance(default, str):
        if not isinstance(value, str) or not value.strip():
            raise bad("a non-empty string")
    elif isinstance(default, list):  # handoff.required_sections: headings, held to the one-line field grammar
        if not isinstance(value, list) or not value or len(value) > LIST_MAX or not all(isinstance(v, str) for v in value):
            raise bad(f"a list of 1 to {LIST_MAX} section names")
        from majordomus.lite.textrules import field_problem

        for number, item in enumerate(value, 1):
            problem = field_problem(item)
            if problem is not None:
                raise bad(f"a list of one-line section names (entry {number} {problem})")
    return value


def parse(data: Any, where: str) -> Config:
    """Validate a loaded document against the defaults; unknown keys are kept aside for doctor."""
    values = _defaults()
    unknown: list[str] = []
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{where}: the file must be a mapping of sections, not {type(data).__name__}",
            "see `man majordomus-init` for the documented layout, or run `majordomus init` in a fresh place",
        )
    for key, value in data.items():
        key = str(key)
        if key not in DEFAULTS:
            unknown.append(key)
            continue
        default = DEFAULTS[key]
        if isinstance(default, dict):
            if value is None:
                continue
            if not isinstance(value, dict):
                raise ConfigError(
                    f"{where}: `{key}` must be a mapping, not {value!r}",
                    f"fix the `{key}:` section in {where}",
                )
            for sub, subvalue in value.items():
                sub = str(sub)
                if sub not in default:
                    unknown.append(f"{key}.{sub}")
                    continue
                values[key][sub] = _check(subvalue, default[sub], f"{key}.{sub}", where)
        else:
            values[key] = _check(value, default, key, where)
    return Config(values=values, path=where, unknown_keys=unknown)


def load(repo_root: str | None, cache_path: str | None = None) -> Config:
    """Load `<repo_root>/.ai/config.yaml`; defaults when the file is absent.

    The file is committed, so anyone who can push wrote it: it is read like a state file (no link, no
    FIFO, at most 64 KiB) and its YAML may not use aliases, anchors or merge keys. With `cache_path`, the
    validated copy that `remember` keeps as JSON beside the state is used while the file's stat signature
    is unchanged: a checkpoint then never pays for a YAML parser.
    """
    if repo_root is None:
        return Config(values=_defaults())
    path = committed(repo_root, CONFIG_RELPATH)  # a linked `.ai` is refused by name, never gone through
    try:
        fd = safeio.open_regular(path, CONFIG_MAX_BYTES)
    except FileNotFoundError:
        return Config(values=_defaults())
    except MajordomusError as exc:
        raise ConfigError(exc.message, exc.hint) from exc
    try:
        st = os.fstat(fd)
        signature = limits.signature(path, st)
        cached = limits.read_cache(cache_path, signature) if cache_path else None
        if cached is not None:
            return Config(values=cached[0], path=path, unknown_keys=cached[1])
        raw = os.read(fd, CONFIG_MAX_BYTES + 1)
    except OSError as exc:  # whatever the file system says of a file every command reads: named, never exit 70
        raise EnvironmentProblem(f"cannot read {path}: {exc.strerror or exc}",
                                 "check the disk or file system the repository is on, then run the command again"
                                 ) from exc
    finally:
        try:
            os.close(fd)
        except OSError:
            pass  # read already, or failed above: a close that fails loses nothing
    config = _parse_yaml(raw, path)
    config.signature = signature
    return config


def remember(config: Config, cache_path: str) -> None:
    """Cache a freshly parsed configuration; called only where the command writes state anyway."""
    entry = config.cache_entry(cache_path)
    if entry is not None:
        _write_cache(*entry)
        config.signature = None


def _parse_yaml(raw: bytes, path: str) -> Config:
    from majordomus.store.records import load_yaml  # the one safe YAML load: no alias, anchor or merge key

    try:
        data = load_yaml(raw)
    except ValueError as exc:
        raise ConfigError(f"{path}: {exc}", "fix it (write each value out in full), or move the file away to use "
                          "the defaults") from exc
    return parse(data, path)


def _write_cache(cache_path: str, data: bytes) -> None:
    """Best effort: only where the state's cache directory already exists; a failure costs a parse."""
    import stat

    from majordomus.store import files

    try:
        if not stat.S_ISDIR(os.lstat(os.path.dirname(cache_path)).st_mode):
            return
    except OSError:
        return
    files.write_derived(cache_path, data)
