# ltrlib workbench. `make help` lists the targets; every target sets itself up.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

SCALE ?= small
SEED ?= 0
DATASET ?= synthetic
RUN_ID ?=
ARGS ?=

.PHONY: help install reproduce bilambdamart-paper test test-fast bench bench-batch calibrate lab dashboard clean-cache clean-reports

help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)
	@echo ""
	@echo "  Variables: SCALE=$(SCALE) SEED=$(SEED) DATASET=$(DATASET) RUN_ID=<default from the others> ARGS=<extra 'ltrlib run' flags>"

# The virtual environment is rebuilt whenever pyproject.toml changes.
$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP) ## Create .venv and install ltrlib with its dependencies

# $(call debian_package,FOUND,PACKAGE,SKIPS): the recipe of a stamp for a system program a
# test needs. Touches the stamp when the shell test FOUND succeeds; as root installs Debian's
# PACKAGE first; otherwise says which test SKIPS (and leaves no stamp, to check again).
define debian_package
	@if $(1); then \
		touch $@; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(2) \
		&& touch $@; \
	else \
		echo "$(2) not found: $(3) will skip (install it: sudo apt-get install $(2))"; \
	fi
endef

# The shared-study test (tests/train/test_shared_study.py) starts a throwaway PostgreSQL
# server. As root (CI, a fresh container) a missing server is installed from the Debian
# archive; otherwise the test says how to install it and skips. The stamp is written only
# once a server is there, so a later run still installs or reminds.
PG_STAMP := $(VENV)/.postgresql
$(PG_STAMP): | $(STAMP)
	$(call debian_package,command -v pg_ctl >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1,postgresql,the shared-study test)

reproduce: $(STAMP) ## Run every notebook on the synthetic default; writes reports/<run_id>/
	$(PY) -m ltrlib run --dataset $(DATASET) --scale $(SCALE) --seed $(SEED) $(if $(RUN_ID),--run-id $(RUN_ID)) $(ARGS)

# The JupyterLab test (tests/notebooks/test_lab_browser.py) drives Debian's Chromium through
# Playwright; installed the same way as PostgreSQL above.
BROWSER_STAMP := $(VENV)/.chromium
$(BROWSER_STAMP): | $(STAMP)
	$(call debian_package,command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1,chromium,the JupyterLab browser test)

test: $(STAMP) $(PG_STAMP) $(BROWSER_STAMP) ## Run the whole test suite (installs PostgreSQL and Chromium for their tests when root)
	$(PY) -m pytest

test-fast: $(STAMP) ## Run the tests without the notebook smoke tests
	$(PY) -m pytest -m "not slow"

bench: $(STAMP) ## Print the speed and memory figures (parse, reload, metrics, generator, FPDGD, Bi-LambdaMART, tree cost, networks)
	$(PY) bench/bench_parse.py
	$(PY) bench/bench_metrics.py
	$(PY) bench/bench_synthetic.py
	$(PY) bench/bench_foltr.py
	$(PY) bench/bench_bivariate.py
	$(PY) bench/bench_tree_cost.py
	$(PY) bench/bench_neural.py

bench-batch: $(STAMP) ## Time the whole batch at tiny and small, per notebook, with the share outside model fitting
	$(PY) bench/bench_batch.py --scales tiny,small --seed $(SEED)

# Every setting notebook 06's header calls the paper's protocol (a test holds the two alike).
bilambdamart-paper: $(STAMP) ## Notebook 06 at the Bi-LambdaMART paper's protocol (stage 1 tuned, 10 folds, 2000 trees, all features and queries, 20 trials, open λRank settings tuned), outside the batch
	$(PY) -m ltrlib run --dataset $(DATASET) --scale $(SCALE) --seed $(SEED) --only 06_bilambdamart \
		--run-id $(or $(RUN_ID),bilambdamart-paper-$(SCALE)-seed$(SEED)) \
		-p folds 10 -p stage1_max_trees 2000 -p stage1_trials 20 -p stage2_features 0 -p train_queries 0 \
		-p n_trials 20 -p norm tuned -p truncation tuned -p hessian tuned $(ARGS)

calibrate: $(STAMP) ## Print the synthetic twin's data statistics against Istella-S's (SCALE, SEED)
	$(PY) -m ltrlib calibrate --scale $(SCALE) --seed $(SEED)

lab: $(STAMP) ## Open JupyterLab at the project root; the notebooks default to SCALE, SEED, DATASET, RUN_ID
	$(PY) -m ltrlib lab --dataset $(DATASET) --scale $(SCALE) --seed $(SEED) $(if $(RUN_ID),--run-id $(RUN_ID)) $(ARGS)

dashboard: $(STAMP) ## Open optuna-dashboard on run RUN_ID's tuning studies (default: the batch's run of SCALE and SEED)
	$(PY) -m ltrlib dashboard $(or $(RUN_ID),$(DATASET)-$(SCALE)-seed$(SEED)) $(ARGS)

clean-cache: ## Remove the parsed-data cache (data/cache/)
	rm -rf data/cache

clean-reports: ## Remove every report under reports/
	find reports -mindepth 1 -maxdepth 1 ! -name README.md -exec rm -rf {} +
