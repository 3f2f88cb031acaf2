# The two commands of the README. Both work on a fresh Debian machine with Python 3.11+.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
DEMO_OUT ?= demo

.PHONY: demo test lint venv venv-test system-deps clean

demo: $(VENV)/.installed
	$(BIN)/cardhours demo --out $(DEMO_OUT)

test: $(VENV)/.installed-test system-deps lint
	$(BIN)/python -m pytest

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

venv: $(VENV)/.installed

$(VENV)/bin/python:
	scripts/ensure-venv.sh $(PYTHON) $(VENV)

$(VENV)/.installed: pyproject.toml $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

system-deps:
	scripts/install-system-deps.sh

clean:
	rm -rf $(VENV) $(DEMO_OUT) .pytest_cache
