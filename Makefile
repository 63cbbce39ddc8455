# The two commands of the README. Each installs what it needs into .venv first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DATA_DIR ?= data

.PHONY: up test install lint

$(BIN)/murmur: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(BIN)/murmur

install: $(BIN)/murmur

## Everything on the embedded default: store, test workspace, a printed test key, the API.
up: install
	$(BIN)/murmur up --data-dir $(DATA_DIR)

## The whole test suite, then the linters.
test: install
	$(BIN)/python -m pytest -n 2 -q
	$(MAKE) lint

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
