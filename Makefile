# Two commands for a newcomer: `make run` and `make test` (see README.md).
PYTHON ?= python3
TEST_WORKERS ?= 2
ROOT := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
VENV := $(ROOT)/.venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: run test lint format bench clean peers

$(STAMP): $(ROOT)/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '$(ROOT)[dev]'
	touch $(STAMP)

## run: migrate the embedded SQLite database, bootstrap on first start, serve on HUB_HOST:HUB_PORT
run: $(STAMP)
	$(BIN)/hub db upgrade
	$(BIN)/hub bootstrap --if-absent
	$(BIN)/hub serve

## lint: format check, lint, strict typing, layering contracts, no model drift
lint: $(STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m hub.core.migrations_check

## peers: project-local Node tools for the MCP peer tests (server-everything, conformance, Node 22)
peers:
	bash $(ROOT)/tests/peers/node/setup.sh

## test: lint, then the whole suite (PostgreSQL tests run when a server answers)
test: lint peers
	$(BIN)/python -m pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

## format: apply ruff's formatting and safe fixes
format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

## bench: benchmarks, each printing ratios against a baseline measured in the same run
bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) $(ROOT)/.hub $(ROOT)/.mypy_cache $(ROOT)/.ruff_cache
