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
# deploy/gunicorn.conf.py).
SERVER ?= serve

.PHONY: run test setup lint typecheck check conformance bench clean which-python

# python3 when it is 3.11, 3.12 or 3.13, else python3.13, python3.12, python3.11; with none of
# them, make stops with one sentence saying what to install.
$(BIN)/python:
	python=$$(PYTHON='$(PYTHON)' ./scripts/find-python) && "$$python" -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

which-python:
	@PYTHON='$(PYTHON)' ./scripts/find-python

# Installs the pinned dependencies (constraints.txt pins every transitive package).
$(VENV)/.installed: pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/pip install -q -c constraints.txt -e '.[dev]'
	touch $@

setup: $(VENV)/.installed
	$(BIN)/python manage.py migrate --noinput -v 0
	$(BIN)/python manage.py tm_load_records
	$(BIN)/python manage.py tm_servers ensure-demo

# Serves the whole box on the embedded default: SQLite, this checkout, its repository.
# The demo static site runs beside it, for the http mount to read.
run: setup
	@echo "tmsite: http://$(HOST):$(PORT)/api/mcp"
	$(BIN)/python -m tmsite.demo.static_site demo_sites/demo.tinymachines.ai \
		--port $(DEMO_PORT) & demo=$$!; trap "kill $$demo" EXIT INT TERM; \
	export TM_FRONT_DOOR=http://$(HOST):$(PORT) TM_DEMO_FRONT_DOOR=http://127.0.0.1:$(DEMO_PORT); \
	case "$(SERVER)" in \
	serve) $(BIN)/python -m tmsite.serve --host $(HOST) --port $(PORT) \
		--workers $(WORKERS) --threads $(THREADS) ;; \
	gunicorn) $(BIN)/gunicorn tmsite.wsgi --config deploy/gunicorn.conf.py \
		--bind $(HOST):$(PORT) --workers $(WORKERS) --threads $(THREADS) ;; \
	*) echo "SERVER must be serve or gunicorn, not $(SERVER)" >&2; exit 2 ;; \
	esac

test: $(VENV)/.installed
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
	rm -rf $(VENV) var
