"""Feature commands, one click module each, loaded lazily by `majordomus.cli.RootGroup`.

A module here defines click commands named in `cli.LAZY_COMMANDS` and uses `majordomus.cli.Group` as
the `cls` of its groups (so MajordomusError becomes a message and an exit code). It imports the core
modules it needs inside each command function, never at the top, to keep start-up cheap.
"""
