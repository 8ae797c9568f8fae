# tmsite — the two commands are `make run` and `make test`; both set themselves up.
# The Python the venv is made with: empty for the first 3.11–3.13 found (scripts/find-python).
PYTHON ?=
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8000
DEMO_PORT ?= 8001
HOST   ?= 127.0.0.1
WORKERS ?= 2
THREADS ?= 8
# serve (python -m tmsite.serve: granian's ASGI workers, every body read in the event loop
# against its deadlines, the rest on THREADS request threads) or gunicorn (gthread workers,
# deploy/gunicorn.conf.py). PORT is the server's, DEMO_PORT the demo static site's.
SERVER ?= serve

.PHONY: run test setup sdk-clients lint typecheck check conformance bench clean which-python

# python3 when it is 3.11, 3.12 or 3.13, else python3.13, python3.12, python3.11; with none of
# them, make stops with one sentence saying what to install.
$(BIN)/python:
	@echo "make: a virtual environment in $(VENV) with the pinned dependencies (once)"
	@python=$$(PYTHON='$(PYTHON)' ./scripts/find-python) && "$$python" -m venv $(VENV)
	@$(BIN)/pip install -q --upgrade pip

which-python:
	@PYTHON='$(PYTHON)' ./scripts/find-python

# Installs the pinned dependencies (constraints.txt pins every transitive package). setuptools'
# warning that a folder named like the package may shadow it is about this very layout (tmsite/
# at the root is the package): nothing a user can act on, so a first make run does not print it.
$(VENV)/.installed: pyproject.toml constraints.txt | $(BIN)/python
	@PYTHONWARNINGS="ignore:Editable installation" $(BIN)/pip install -q -c constraints.txt \
		-e '.[dev]'
	@touch $@

# Each step says what it did itself; its command line is not echoed (a first make run prints
# what happened, not the recipe).
setup: $(VENV)/.installed
	@$(BIN)/python manage.py migrate --noinput -v 0
	@$(BIN)/python manage.py tm_load_records
	@$(BIN)/python manage.py tm_servers ensure-demo
	@$(BIN)/python manage.py tm_search sync

# Serves the whole box on the embedded default: SQLite, this checkout, its repository, with the
# demo static site beside it on DEMO_PORT for the http mount to read (tmsite/demo/run.py). Both
# ports are checked before anything is set up; once the server answers, one banner says where
# everything is. Ctrl-C stops both.
RUN_ARGS = --host $(HOST) --port $(PORT) --demo-port $(DEMO_PORT) --workers $(WORKERS) \
	--threads $(THREADS) --server $(SERVER)
run: $(VENV)/.installed
	@$(BIN)/python -m tmsite.demo.run --check-ports $(RUN_ARGS)
	@$(MAKE) --no-print-directory setup
	@$(BIN)/python -m tmsite.demo.run $(RUN_ARGS)

# The official SDK clients of the 2025 era that tests/clients drives the server with, outside
# what git tracks: the Python SDK 1.x in a venv of its own, $(SDK_VENV) (its pins in
# tests/clients/sdk1), the TypeScript SDK 1.x in tests/clients/ts/node_modules (npm ci from its
# package-lock.json; needs node and npm). Without them those tests skip, saying so.
SDK1     := tests/clients/sdk1
SDK_VENV := .sdk-clients/sdk1
TS       := tests/clients/ts

$(SDK_VENV)/.installed: $(SDK1)/requirements.txt $(SDK1)/constraints.txt
	rm -rf $(SDK_VENV)
	python=$$(PYTHON='$(PYTHON)' ./scripts/find-python) && "$$python" -m venv $(SDK_VENV)
	$(SDK_VENV)/bin/pip install -q -c $(SDK1)/constraints.txt -r $(SDK1)/requirements.txt
	touch $@

$(TS)/node_modules/.installed: $(TS)/package.json $(TS)/package-lock.json
	cd $(TS) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

sdk-clients: $(SDK_VENV)/.installed $(TS)/node_modules/.installed

# The SDK clients are made when they can be: without network their tests skip (under CI=true
# they fail instead, see tests/services.py).
test: $(VENV)/.installed
	@$(MAKE) --no-print-directory sdk-clients || echo "make test: make sdk-clients failed;" \
		"the tests driving the SDK 1.x clients skip" >&2
	$(BIN)/python -m pytest -n 2 --dist loadfile $(PYTEST_ARGS)

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.installed
	TM_SECRET_KEY=$${TM_SECRET_KEY:-typecheck-reads-settings-only} $(BIN)/mypy tmsite

check: lint typecheck test

conformance: $(VENV)/.installed
	$(BIN)/python conformance/run.py

bench: $(VENV)/.installed
	$(BIN)/python bench/mcp_vs_sdk.py

clean:
	rm -rf $(VENV) var .sdk-clients $(TS)/node_modules
