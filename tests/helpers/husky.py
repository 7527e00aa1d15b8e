"""Husky v9 as its 9.1.7 `husky` command writes its files (for the tests of hooks that live beside it)."""

from __future__ import annotations

from pathlib import Path

from helpers import git

# What husky 9's `husky` writes into .husky/_ (shortened from 9.1.7; the parts that run a hook are as is).
H = """#!/usr/bin/env sh
[ "$HUSKY" = "2" ] && set -x
n=$(basename "$0")
s=$(dirname "$(dirname "$0")")/$n
[ ! -f "$s" ] && exit 0
[ "${HUSKY-}" = "0" ] && exit 0
export PATH="node_modules/.bin:$PATH"
sh -e "$s" "$@"
c=$?
[ $c != 0 ] && echo "husky - $n script failed (code $c)"
exit $c
"""
HOOKS = ("pre-commit", "commit-msg", "post-commit", "post-merge", "post-rewrite", "pre-push")


def npx_husky(repo: Path) -> None:
    """What `husky` (run by `prepare` at every `npm install`) does: rewrite every .husky/_/<hook>."""
    underscore = repo / ".husky" / "_"
    underscore.mkdir(parents=True, exist_ok=True)
    (underscore / ".gitignore").write_text("*\n")
    (underscore / "h").write_text(H)
    for name in HOOKS:
        path = underscore / name
        path.write_text('#!/usr/bin/env sh\n. "$(dirname "$0")/h"')
        path.chmod(0o755)
    git(repo, "config", "core.hooksPath", ".husky/_")


