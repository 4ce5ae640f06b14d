# Set-up and the two everyday jobs. `make simulate` runs the embedded default scenario;
# `make test` runs lint, type checks and the test suite (what CI runs, via .ci/run).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: simulate test test-deps lint setup clean wasm-guests

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,rescheduler]'
	touch $@

setup: $(BIN)/.installed

# The C guests of examples/wasm, compiled with the ziglang PyPI package (cached by content).
wasm-guests: setup
	$(BIN)/python scripts/build_wasm_guests.py

simulate: setup
	$(BIN)/harmonic simulate

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test-deps:
	scripts/test-deps.sh

test: lint test-deps
	$(BIN)/pytest -n 2

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
