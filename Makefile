# The two commands a fresh machine needs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev

.PHONY: demo test lit pytest clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo.py

pytest: $(STAMP)
	$(BIN)/python -m pytest -q

lit: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/lit -sv tests/lit

test: pytest lit

clean:
	rm -rf $(VENV) build *.egg-info
