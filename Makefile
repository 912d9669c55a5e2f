# gbdt_plrank: `make help` lists the targets.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: help demo test lint bench bench-smoke clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,catboost]'
	touch $(STAMP)

demo: $(STAMP) ## train PL-Rank GBDT next to LambdaMART on the bundled MQ2008 data
	$(BIN)/python -m gbdt_plrank demo

test: $(STAMP) ## run the whole test suite
	$(BIN)/python -m pytest -n 2 -q

lint: $(STAMP) ## ruff on the package, tests and benchmarks
	$(BIN)/ruff check gbdt_plrank tests benchmarks

bench: $(STAMP) ## run the benchmark suite (minutes; results go to benchmarks/results)
	$(BIN)/python benchmarks/bench_round.py

clean: ## remove the virtual environment and caches
	rm -rf $(VENV) .pytest_cache .ruff_cache build *.egg-info
