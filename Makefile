# InstantStart — `make run` starts the portal on the sandbox; `make test` runs the whole suite.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 3099
STAMP := $(VENV)/.installed

.PHONY: install run test lint format bench fuzz clean skills

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -U pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

## run: the portal at http://127.0.0.1:$(PORT) with worker, sweep and sandbox (Ctrl-C stops all)
run: install
	$(PY) -m instantstart.standalone --port $(PORT)

## test: the whole suite on PostgreSQL + Redis at 127.0.0.1 (pytest exits non-zero when no test ran).
## The sandbox's own tests run apart: moto keeps one world per process, and the product's tests
## share one sandbox for their whole run. Each run is TEST_PROCESSES processes (pytest-xdist; 0: one):
## the tests mostly wait for workers and the sandbox's clock (one process used half a core here).
## A test file stays in one process, so its tests still share their sandbox cluster. The fuzz test
## runs in one process: Schemathesis gives every operation's test one node id, and xdist ran 1 of 74.
TEST_PROCESSES ?= 2
XDIST = -n $(TEST_PROCESSES) --dist loadfile --durations=15
test: install
	@status=0; \
	$(PY) -m pytest $(XDIST) --ignore=tests/sandbox --ignore=tests/hardening/test_fuzz.py $(PYTEST_ARGS) || status=1; \
	$(PY) -m pytest tests/hardening/test_fuzz.py $(PYTEST_ARGS) || status=1; \
	$(PY) -m pytest $(XDIST) tests/sandbox $(PYTEST_ARGS) || status=1; \
	exit $$status

## skills: generate .claude/skills/ from .kiro/skills/ (the one source of the agent skills)
skills:
	$(PY) -m agent_tools.skills

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/cfn-lint deploy/cloudformation/*.yaml deploy/instantstart-role.yaml

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

## fuzz: Schemathesis over the whole API with many more generated cases than the suite's run
## (FUZZ_EXAMPLES per operation; the suite's run uses 8).
FUZZ_EXAMPLES ?= 200
fuzz: install
	FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest tests/hardening/test_fuzz.py -p no:cacheprovider $(PYTEST_ARGS)

bench: install
	INSTANTSTART_MODE=test DJANGO_SETTINGS_MODULE=instantstart.test_settings $(PY) bench/engine.py
	$(PY) bench/sandbox.py

clean:
	rm -rf var .pytest_cache
