# Two commands for a newcomer: `make run` and `make test` (see README.md); `make help` lists all.
PYTHON ?= python3
# four test workers on two cores: the suite mostly waits (on peers, hubs and deadlines it
# starts), so two workers kept the cores 42% busy; four halved its time (docs/decisions.md)
TEST_WORKERS ?= 4
ROOT := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
VENV := $(ROOT)/.venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# Bytecode is cached outside the source tree, under the venv (git and `make clean` ignore or
# remove it): with none written (PYTHONDONTWRITEBYTECODE, which some machines set), every test
# worker compiled and assertion-rewrote every module again, 28 s of each one's collection instead
# of 14, and each `hub serve` a test starts compiled the hub again (docs/decisions.md, stop 55).
unexport PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX := $(VENV)/pycache

.PHONY: help run test lint format bench clean peers
.DEFAULT_GOAL := help

## help: list the targets (this text)
help:
	@awk '/^## [a-z-]+: / { line = substr($$0, 4); i = index(line, ": "); \
		printf "  make %-8s %s\n", substr(line, 1, i - 1), substr(line, i + 2) }' $(MAKEFILE_LIST)

# Silent, and chatty on stderr only: `make run` prints the platform admin's key alone on stdout.
$(STAMP): $(ROOT)/pyproject.toml
	@echo "make: creating $(VENV) and installing the hub (first run, or pyproject.toml changed)" >&2
	@$(PYTHON) -m venv $(VENV) >&2
	@$(BIN)/pip install --quiet --upgrade pip >&2
	@$(BIN)/pip install --quiet -e '$(ROOT)[dev]' >&2
	@touch $(STAMP)

## run: migrate the embedded SQLite database, bootstrap on first start, serve on HUB_HOST:HUB_PORT
run: $(STAMP)
	@$(BIN)/hub db upgrade
	@$(BIN)/hub bootstrap --if-absent
	@$(BIN)/hub serve

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
# worksteal: a worker that runs out takes queued tests from the other (tests last from
# milliseconds to over a minute, so a fixed share left one worker idle at the end)
test: lint peers
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal --durations=25 $(PYTEST_ARGS)

## format: apply ruff's formatting and safe fixes
format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

## bench: benchmarks, each printing ratios against a baseline measured in the same run
bench: $(STAMP)
	$(BIN)/python -m bench

## clean: remove .venv, the development database and secrets under .hub, and tool caches
clean:
	rm -rf $(VENV) $(ROOT)/.hub $(ROOT)/.mypy_cache $(ROOT)/.ruff_cache
