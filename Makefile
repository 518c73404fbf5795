# agent-memory: `make run` serves, `make test` tests; both set up everything first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
AGENT_MEMORY_DEV ?= 1

.PHONY: install run test check fmt schema schema-check bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# the CPU build of torch first, so that sentence-transformers does not pull a CUDA one
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

run: install
	AGENT_MEMORY_DEV=$(AGENT_MEMORY_DEV) $(VENV)/bin/agent-memory serve

test: install
	$(PY) -m pytest

check: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

fmt: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

schema: install
	$(VENV)/bin/agent-memory schema

schema-check: install
	$(VENV)/bin/agent-memory schema --check

clean:
	rm -rf $(VENV) .data .pytest_cache .mypy_cache .ruff_cache
