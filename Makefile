# Two entry points that work from a fresh clone with only Python and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test lint bench clean clear-jit-cache

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Editable installs: a marker per extra so `make run` then `make test` installs only what is missing.
$(VENV)/.installed-base: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $@ $(VENV)/.installed-base

run: $(VENV)/.installed-base
	$(BIN)/silva demo

test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .

bench: $(VENV)/.installed-dev
	$(BIN)/python -m pip install --quiet lightgbm
	$(BIN)/python benchmarks/bench_tree.py

# numba's on-disk cache notices edits to a function's own file only: after changing one
# engine module, functions in the others that call it keep their stale compiled code.
clear-jit-cache:
	find silva -name __pycache__ -type d -prune -exec rm -rf {} +

clean: clear-jit-cache
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
