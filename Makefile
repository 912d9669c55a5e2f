# gbdt_plrank: `make help` lists the targets.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# Every round alternates the booster's OpenMP threads and the objective's Numba threads:
# waiting threads spin briefly, then sleep (the package sets the same at import,
# gbdt_plrank._util.threads.OPENMP_WAIT; here it also covers the tools).
export GOMP_SPINCOUNT ?= 1000
export KMP_BLOCKTIME ?= 0

.PHONY: help demo test test-all lint docs bench tables clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

# A pip install, tried up to three times: a download cut off more often than pip resumes it
# (seen with XGBoost's 350 MB NCCL wheel) starts again, and the wheels already downloaded come
# from pip's cache.
define retried
for attempt in 1 2 3; do $(1) && break; [ $$attempt -lt 3 ] || exit 1; sleep 15; done
endef

# gpu: numba-cuda, whose CUDA simulator tests the GPU kernels here.
EXTRAS := dev,catboost,nn,docs,gpu

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(call retried,$(BIN)/pip install --quiet --upgrade pip)
	$(call retried,$(BIN)/pip install --quiet --resume-retries 20 torch==2.13.0)  # the CPU build first, so the nn extra pulls no CUDA wheels
	$(call retried,$(BIN)/pip install --quiet --resume-retries 20 -e '.[$(EXTRAS)]')
	touch $(STAMP)

demo: $(STAMP) ## PL-Rank GBDT next to LambdaMART / LambdaRank on the bundled MQ2008 (a few minutes)
	$(BIN)/gbdt-plrank compare configs/demo.toml

test: $(STAMP) ## run the test suite but the slow tests (subprocess benchmarks, notebooks)
	$(BIN)/python -m pytest -n 2 -q -m "not slow"

test-all: $(STAMP) ## run every test, the slow ones too (CI)
	$(BIN)/python -m pytest -n 2 -q

# What ruff checks and formats: the package, the tests, the benchmarks, the research scripts and
# the docs' configuration.
LINTED := gbdt_plrank tests benchmarks research docs

lint: $(STAMP) ## ruff's rules and its formatter's check, then mypy on the package (pyproject.toml)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/mypy gbdt_plrank

# MathJax served from the site itself, so that the math renders with no network (npm fetches it once).
MATHJAX_VERSION := 3.2.2
MATHJAX := docs/_static/mathjax

$(MATHJAX)/tex-mml-chtml.js:
	rm -rf $(MATHJAX) build/mathjax && mkdir -p build/mathjax $(MATHJAX)
	cd build/mathjax && npm pack --silent mathjax@$(MATHJAX_VERSION) && tar xzf mathjax-$(MATHJAX_VERSION).tgz
	cp -r build/mathjax/package/LICENSE build/mathjax/package/es5/tex-mml-chtml.js build/mathjax/package/es5/input build/mathjax/package/es5/ui build/mathjax/package/es5/a11y $(MATHJAX)/
	mkdir -p $(MATHJAX)/output && cp -r build/mathjax/package/es5/output/chtml $(MATHJAX)/output/

docs: $(STAMP) $(MATHJAX)/tex-mml-chtml.js ## build the documentation site into site/ (Sphinx; a warning or broken reference fails)
	rm -rf docs/api/generated  # the API pages are generated from the docstrings at each build
	$(BIN)/python -m sphinx -E -W --keep-going -n -b html docs site
	$(BIN)/python docs/check_site.py site

bench: $(STAMP) ## run the benchmark suite (minutes; results go to benchmarks/results)
	$(BIN)/python benchmarks/bench_round.py

tables: $(STAMP) ## the research notes' tables (docs/research/comparison-tables.md): every method on MQ2008 and MQ2007-agg, 5 folds x 3 seeds (long; WORKERS=2 runs 2 in parallel)
	$(BIN)/gbdt-plrank compare configs/mq2008.toml $(if $(WORKERS),--workers $(WORKERS))
	$(BIN)/gbdt-plrank compare configs/mq2007-agg.toml $(if $(WORKERS),--workers $(WORKERS))

clean: ## remove the virtual environment, caches and the built site
	rm -rf $(VENV) .pytest_cache .ruff_cache build *.egg-info site jupyter_execute docs/_build docs/api/generated $(MATHJAX)
