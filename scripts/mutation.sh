#!/bin/sh
# `make mutation`: mutmut over the modules that hold SPEC's rules ([tool.mutmut] in pyproject.toml).
#
# mutmut 3 copies the package into `mutants/` and rewrites each function into a trampoline that calls the
# original or one mutant, chosen by the MUTANT_UNDER_TEST environment variable. It runs the tests in its own
# process with `mutants/` first on sys.path, so in-process tests import the mutated copy; the tests that run
# the real console script in a subprocess would import the installed package instead, so PYTHONPATH points
# them at the copy too (the variable is inherited, and so is MUTANT_UNDER_TEST).
#
# It runs in a scratch copy under build/mutation (ignored by git), so the checkout never holds `mutants/`.
# The last line printed is `mutation score: K killed of N (P%)`, where K counts the mutants a test failed on
# (mutmut's `killed`, and `timeout`: a mutant that hangs is caught) and N every mutant generated.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$ROOT/.venv/bin}
WORK=${MUTATION_DIR:-$ROOT/build/mutation}
CHILDREN=${MUTATION_CHILDREN:-2}

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
PYTHONPATH="$WORK/site:$WORK/mutants"
MAJORDOMUS_MUTATION=1  # tests/conftest.py: a derandomised hypothesis profile without deadlines
PATH="$BIN:$PATH"
export PYTHONPATH MAJORDOMUS_MUTATION PATH

start=$(date +%s)
"$BIN/mutmut" run --max-children "$CHILDREN" >"$WORK/run.log" 2>&1 || {
    tail -n 40 "$WORK/run.log"
    echo "mutmut run failed; its whole output is in $WORK/run.log" >&2
    exit 1
}
"$BIN/mutmut" export-cicd-stats >/dev/null
"$BIN/mutmut" results >"$WORK/survivors.txt"
end=$(date +%s)

"$BIN/python" - "$WORK/mutants/mutmut-cicd-stats.json" "$WORK/survivors.txt" "$((end - start))" <<'PY'
import json
import sys

stats = json.load(open(sys.argv[1]))
survivors = [line.strip() for line in open(sys.argv[2]) if line.strip()]
print(f"not killed ({len(survivors)}; `mutmut show NAME` in build/mutation shows one):")
for line in survivors:
    print(f"  {line}")
seconds = int(sys.argv[3])
print(f"run time: {seconds // 60} min {seconds % 60} s; "
      + ", ".join(f"{key} {stats[key]}" for key in ("killed", "timeout", "survived", "no_tests", "suspicious",
                                                    "skipped", "segfault")))
killed = stats["killed"] + stats["timeout"]
total = stats["total"]
print(f"mutation score: {killed} killed of {total} ({100 * killed / total:.1f}%)")
PY
