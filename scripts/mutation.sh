#!/bin/sh
# `make mutation`: mutmut over the modules that hold the design's rules ([tool.mutmut] in pyproject.toml).
#
# mutmut 3 copies the package into `mutants/` and rewrites each function into a trampoline that calls the
# original or one mutant, chosen by the MUTANT_UNDER_TEST environment variable. It runs the tests in its own
# process with `mutants/` first on sys.path, so in-process tests import the mutated copy; the tests that run
# the real console script in a subprocess would import the installed package instead, so PYTHONPATH points
# them at the copy too (the variable is inherited, and so is MUTANT_UNDER_TEST).
#
# It runs in a scratch copy under build/mutation (ignored by git), so the checkout never holds `mutants/`.
# MUTATION_MODULES (space-separated dotted names) picks the modules whose mutants are run; the default is the
# set that finishes in about half an hour on two cores, `all` is every module of [tool.mutmut] only_mutate.
# The last line printed is `mutation score: K killed of N (P%)`, where K counts the mutants a test failed on
# (mutmut's `killed`, and `timeout`: a mutant that hangs is caught) and N every mutant of those modules.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$ROOT/.venv/bin}
WORK=${MUTATION_DIR:-$ROOT/build/mutation}
CHILDREN=${MUTATION_CHILDREN:-2}
DEFAULT_MODULES="majordomus.lite.names majordomus.lite.active majordomus.lite.safeio"
MODULES=${MUTATION_MODULES:-$DEFAULT_MODULES}

rm -rf "$WORK"
mkdir -p "$WORK"
cp -R "$ROOT/majordomus" "$ROOT/tests" "$ROOT/fixtures" "$ROOT/pyproject.toml" "$WORK/"
find "$WORK" -name __pycache__ -prune -exec rm -rf {} +
cd "$WORK"

# mutmut's first pass ("stats") records which test reaches which function, in its own process only; in a
# child it would look for mutmut's configuration in the test's scratch repository and fail. The children
# run the original functions during that pass (they are still run for every mutant afterwards).
mkdir -p "$WORK/site"
cat >"$WORK/site/sitecustomize.py" <<'PY'
import os

if os.environ.get("MUTANT_UNDER_TEST") == "stats":
    os.environ["MUTANT_UNDER_TEST"] = ""
PY
# mutants/ must exist before Python starts: a PYTHONPATH entry that is missing at start-up is cached as
# "nothing here" for the whole process, and the tests would silently import the installed package instead.
mkdir -p "$WORK/mutants"
PYTHONPATH="$WORK/site:$WORK/mutants"
MAJORDOMUS_MUTATION=1  # tests/conftest.py: a derandomised hypothesis profile without deadlines
PATH="$BIN:$PATH"
export PYTHONPATH MAJORDOMUS_MUTATION PATH

set --
if [ "$MODULES" != all ]; then
    for module in $MODULES; do
        set -- "$@" "$module.*"
    done
fi

start=$(date +%s)
"$BIN/mutmut" run --max-children "$CHILDREN" "$@" >"$WORK/run.log" 2>&1 || {
    tr '\r' '\n' <"$WORK/run.log" | tail -n 40
    echo "mutmut run failed; its whole output is in $WORK/run.log" >&2
    exit 1
}
end=$(date +%s)

"$BIN/python" - "$((end - start))" "$MODULES" <<'PY'
import json
import pathlib
import sys

from mutmut.stats import status_by_exit_code

seconds, modules = int(sys.argv[1]), sys.argv[2].split()
counts: dict[str, int] = {}
left: list[tuple[str, str]] = []
for meta in sorted(pathlib.Path("mutants").rglob("*.py.meta")):
    for name, code in json.loads(meta.read_text())["exit_code_by_key"].items():
        if modules != ["all"] and not any(name.startswith(m + ".") for m in modules):
            continue
        status = status_by_exit_code[code]
        counts[status] = counts.get(status, 0) + 1
        if status not in ("killed", "timeout"):
            left.append((status, name))
print(f"not killed ({len(left)}; `mutmut show NAME` in build/mutation shows one):")
for status, name in left:
    print(f"  {status:10} {name}")
print("modules: " + " ".join(modules))
print(f"run time: {seconds // 60} min {seconds % 60} s; "
      + ", ".join(f"{count} {status}" for status, count in sorted(counts.items())))
killed = counts.get("killed", 0) + counts.get("timeout", 0)
total = sum(counts.values())
print(f"mutation score: {killed} killed of {total} ({100 * killed / max(total, 1):.1f}%)")
PY
