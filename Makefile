# Set-up and the two everyday jobs. `make simulate` runs the embedded default scenario;
# `make test` runs lint, type checks and the test suite (what CI runs, via .ci/run).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: simulate test test-deps lint setup clean wasm-guests lock

# pyproject.toml gives compatible ranges; requirements.lock pins the exact versions installed here (and
# so in CI, which runs `make test`) and in the Docker image.
$(BIN)/.installed: pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c requirements.lock -e '.[dev,rescheduler]'
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

# Re-pin requirements.lock to what the ranges resolve to today (in a throwaway environment).
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/pip install --quiet '.[dev,rescheduler]'
	{ sed -n '1,2p' requirements.lock; .lock-venv/bin/pip freeze --exclude-editable | grep -v '^harmonic' | LC_ALL=C sort -f; } > requirements.lock.new
	mv requirements.lock.new requirements.lock && rm -rf .lock-venv

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
