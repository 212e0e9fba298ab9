# confab — the two commands a newcomer needs are `make demo` and `make test` (see README).
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test bench lint-imports venv clean

venv: $(STAMP)

# (Re)install when pyproject.toml changes. The interpreter is probed, not assumed.
$(STAMP): pyproject.toml
	@set -e; \
	if [ ! -x $(PY) ]; then \
		python=$$(scripts/find-python); \
		echo "Creating $(VENV) with $$python"; \
		"$$python" -m venv $(VENV); \
	fi
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

## Run the whole test suite (unit, integration, consumers, e2e) and the import contracts.
test: $(STAMP)
	$(VENV)/bin/lint-imports
	$(PY) -m pytest

lint-imports: $(STAMP)
	$(VENV)/bin/lint-imports

## Benchmarks against the named peers (on demand; not part of `make test`).
bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	@set -e; for bench in tests/benchmarks/bench_*.py; do \
		module=$${bench%.py}; echo "== $$module"; $(PY) -m $${module//\//.}; \
	done

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
