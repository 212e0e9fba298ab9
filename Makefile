# confab — the two commands a newcomer needs are `make demo` and `make test` (see README).
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench chaos conformance lint-imports messages venv system-deps clean

venv: $(STAMP)

# Debian packages the tests use for real (never mocked): bubblewrap sandboxes the Bash tool;
# chromium is the browser the Playwright tests drive (Playwright's own download is not used).
# Installed when missing and we may (root with apt-get); otherwise the tests that need them say why.
SYSTEM_PACKAGES := bubblewrap:bwrap chromium:chromium
system-deps:
	@missing=""; for entry in $(SYSTEM_PACKAGES); do \
		command -v "$${entry#*:}" >/dev/null 2>&1 || missing="$$missing $${entry%%:*}"; \
	done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "Installing$$missing"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
		else \
			echo "warning: missing system packages:$$missing (install them to run every test)" >&2; \
		fi; \
	fi

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

## The server with a demo team, on 127.0.0.1 (SQLite, in-memory layer, the offline model).
HOST ?= 127.0.0.1
PORT ?= 8000
FAKELLM_PORT ?= 8001
demo: $(STAMP)
	$(PY) manage.py migrate --no-input -v0
	CONFAB_FAKELLM_URL=http://$(HOST):$(FAKELLM_PORT) $(PY) manage.py demo
	@echo "Open http://$(HOST):$(PORT)/ (admin: http://$(HOST):$(PORT)/admin/)"
	CONFAB_FAKELLM_URL=http://$(HOST):$(FAKELLM_PORT) $(PY) manage.py serve --host $(HOST) \
		--port $(PORT) --fakellm-port $(FAKELLM_PORT)

## Run the whole test suite (unit, integration, consumers, e2e) and the import contracts.
test: $(STAMP) system-deps
	$(VENV)/bin/ruff check apps tests config
	$(VENV)/bin/lint-imports
	$(PY) -m pytest

lint-imports: $(STAMP)
	$(VENV)/bin/lint-imports

## Translations: re-extract every marked string into locale/zh_Hans/LC_MESSAGES/{django,djangojs}.po
## (new entries come out empty: translate them), then compile the .mo files that are committed
## beside them. Strings no longer in the code are dropped (--no-obsolete: the catalog tests
## refuse obsolete entries). Needs gettext's tools (Debian: gettext); serving the pages does not.
MESSAGES_FLAGS := -l zh_Hans --add-location file --no-obsolete -i 'tests/*' -i 'docs/*' \
	-i 'scripts/*' -i '$(VENV)/*' -i 'apps/*/static/vendor/*'
messages: $(STAMP)
	$(PY) manage.py makemessages $(MESSAGES_FLAGS)
	$(PY) manage.py makemessages -d djangojs $(MESSAGES_FLAGS)
	$(PY) manage.py compilemessages -l zh_Hans -i '$(VENV)/*'

## Benchmarks against the named peers (on demand; not part of `make test`).
bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	@set -e; for bench in tests/benchmarks/bench_*.py; do \
		module=$${bench%.py}; echo "== $$module"; $(PY) -m $${module//\//.}; \
	done

## The chaos suite (tests/chaos, on demand; not part of `make test`, which ignores it like the
## benchmarks): faults, floods and fuzz against the real stack; prints one table at the end.
chaos: $(STAMP) system-deps
	$(PY) -m pytest -o addopts="-ra --strict-markers" -p no:cacheprovider tests/chaos

## The MCP conformance suite's client scenarios against confab's MCP client (on demand): the
## pinned suite and a Node 22 from the npm registry into .cache/ (the suite needs fs.globSync).
CONFORMANCE := .cache/conformance
CONFORMANCE_VERSION := 0.1.16
NODE_VERSION := 22.23.5
NODE_PACKAGE := node-linux-$(if $(filter aarch64 arm64,$(shell uname -m)),arm64,x64)
conformance: $(STAMP)
	@mkdir -p $(CONFORMANCE)
	npm install --prefix $(CONFORMANCE) --no-audit --no-fund --silent --save-exact \
		$(NODE_PACKAGE)@$(NODE_VERSION) @modelcontextprotocol/conformance@$(CONFORMANCE_VERSION)
	$(PY) scripts/conformance.py --root $(CONFORMANCE)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
