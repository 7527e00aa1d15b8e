# Two commands from a fresh clone: `make demo` and `make test`. Each builds its own virtual environment.
# The interpreter both venvs are made from: the distribution's own /usr/bin/python3 when it is 3.11 or newer
# and can make a venv, else the python3 on PATH (docs/testing.md "The interpreter"). Debian's is built with
# profile-guided optimisation and libpython linked in; pyenv's default build is neither, and the whole suite
# takes a tenth more CPU under it (pure Python is half again as slow there; most of the suite is git and processes).
# `make test PYTHON=python3.12` chooses another.
PYTHON ?= $(shell for p in /usr/bin/python3 python3; do "$$p" -c 'import ensurepip, sys, venv; sys.exit(sys.version_info < (3, 11))' 2>/dev/null && { echo "$$p"; break; }; done)
VENV ?= .venv
BIN := $(VENV)/bin
SOURCES := pyproject.toml $(shell find majordomus -type f -not -name '*.pyc' 2>/dev/null)

.PHONY: demo test bench mutation clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# A real, non-editable install: what a user gets from `pip install .`, templates and man pages included.
$(VENV)/.installed: $(BIN)/python $(SOURCES)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-cache-dir --force-reinstall --no-deps .
	$(BIN)/python -m pip install --quiet --disable-pip-version-check ".[test,mcp]"
	touch $@

# What the demo needs and no more: majordomus itself, installed as above, with its runtime dependencies only.
$(VENV)/.demo-installed: $(BIN)/python $(SOURCES)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-cache-dir --force-reinstall --no-deps .
	$(BIN)/python -m pip install --quiet --disable-pip-version-check .
	touch $@

demo: $(VENV)/.demo-installed
	PATH="$(CURDIR)/$(BIN):$$PATH" bash scripts/demo.sh

# The suite's scratch repositories go to /dev/shm when it is a writable tmpfs with 2 GiB free: creating,
# fsyncing and deleting thousands of small files costs next to nothing there (docs/testing.md). Elsewhere,
# pytest's usual temporary directory.
TEST_TMPDIR := $(shell test -w /dev/shm && df -Pk -t tmpfs /dev/shm 2>/dev/null | awk 'NR == 2 && $$4 >= 2097152 { print "/dev/shm" }')

# The gates first (a red gate is a red build), then the whole suite.
test: $(VENV)/.installed
	$(BIN)/ruff check majordomus tests benchmarks scripts
	$(BIN)/mypy
	PATH="$(CURDIR)/$(BIN):$$PATH" $(if $(TEST_TMPDIR),TMPDIR=$(TEST_TMPDIR) )$(BIN)/pytest

# `make bench BENCH_ARGS='--quick --json out.json'` passes options on (benchmarks/run.py --help).
bench: $(VENV)/.installed
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python benchmarks/run.py $(BENCH_ARGS)

# Mutation testing (docs/testing.md): not part of `make test`, it takes long. mutmut goes into the test venv
# only here; it is no dependency of the package.
mutation: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet --disable-pip-version-check "mutmut==3.8.1"
	BIN="$(CURDIR)/$(BIN)" MUTATION_MODULES="$(MUTATION_MODULES)" sh scripts/mutation.sh

clean:
	rm -rf $(VENV) build *.egg-info
