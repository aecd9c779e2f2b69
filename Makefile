# legalir pipelines. The Makefile only wires the `legalir` CLI; logic lives in the package.
#   make demo   set up, then convert -> index -> search -> eval on the embedded sample
#   make test   set up, then run the test suite
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON   ?= python3
VENV     ?= .venv
EXTRAS   ?= cpu,test
DATA_DIR ?= data
THREADS  ?= 2
BIN      := $(VENV)/bin
LEGALIR  := HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/legalir
STAMP    := $(VENV)/.legalir-setup

.PHONY: help setup demo test clean-outputs

help: ## list targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | sort | column -t -s $$'\t'

# ------------------------------------------------------------------ setup
setup: $(STAMP) ## create .venv and install legalir with everything it needs (idempotent)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -q --upgrade pip
	$(BIN)/python -m pip install --disable-pip-version-check -q -e ".[$(EXTRAS)]"
	$(BIN)/python -c "import legalir.jvm as j; j.start(); print('legalir: JVM ok, Java', j.autoclass('java.lang.System').getProperty('java.version'))"
	@touch $@

test: setup ## set up, then run the test suite
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/python -m pytest -q $(PYTEST_ARGS)
