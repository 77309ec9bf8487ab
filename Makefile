# The two commands a fresh machine needs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# pyproject.toml gives the supported ranges, constraints.txt the tested versions:
# every install here takes the latter. setuptools says "Editable installation:
# folders in your working directory with the same name as your package may take
# precedence" on every editable install: ember/__init__.py sees to that case.
PIP_INSTALL := PYTHONWARNINGS="ignore:Editable installation" $(BIN)/pip install \
	--quiet -c constraints.txt

.PHONY: demo test lint pytest lit docs docs-check bench clean system-deps conformance

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) --upgrade pip

$(VENV)/.installed: pyproject.toml constraints.txt | $(BIN)/python
	$(PIP_INSTALL) -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml constraints.txt | $(BIN)/python
	$(PIP_INSTALL) -e '.[dev]'
	touch $@ $(VENV)/.installed

$(VENV)/.installed-bench: pyproject.toml constraints.txt | $(BIN)/python
	$(PIP_INSTALL) -e '.[bench]'
	touch $@ $(VENV)/.installed

# MobileNetV2 from ONNX, compiled ahead of time, raced against onnxruntime (the
# dev extra brings it), then te kernels against numpy.
demo: $(VENV)/.installed-dev
	$(BIN)/python examples/demo.py

# qemu-user, the aarch64/riscv64 cross gcc and wasm-ld, which tests/test_cross_run.py
# runs cross-built code with: installed with apt-get when missing (as root), else
# listed; the tests that need a missing one skip and say why.
system-deps:
	@sh .ci/system_deps.sh

# One pytest worker per core (pytest-xdist), each taking whole test files, so
# a file's fixtures (its compiled models) are built once; the kernel cache
# under XDG_CACHE_HOME is shared by both.
pytest: system-deps $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q -n auto --dist loadfile

lit: $(VENV)/.installed-dev
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/lit -s tests/lit

# pyright checks the package through build/pyright-src, the import layout of
# [tool.setuptools] package-dir as symlinks, which the script rebuilds first.
lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python .ci/pyright_tree.py --run

# The API reference (docs/api.md) and pass reference (docs/passes.md), generated
# from the docstrings; `make test` fails when they are stale.
docs: $(VENV)/.installed-dev
	$(BIN)/python -m ember.tools.docs

docs-check: $(VENV)/.installed-dev
	$(BIN)/python -m ember.tools.docs --check

test: lint docs-check pytest lit

# onnx's backend node tests (single-op and function-expanded) through ember,
# each classified pass / refused / wrong / crash against onnxruntime's baseline
# (tools/conformance.py); fails on any wrong result or crash. `make test`
# runs a quick slice of them (tests/test_onnx_conformance.py).
conformance: $(VENV)/.installed-dev
	$(BIN)/python -m ember.tools.conformance --expanded --report build/conformance.jsonl

# Side by side with numpy, onnxruntime, PyTorch and apache-tvm (the bench extra).
bench: $(VENV)/.installed-bench
	$(BIN)/python benchmarks/matmul.py
	$(BIN)/python benchmarks/conv2d.py
	$(BIN)/python benchmarks/call_overhead.py
	$(BIN)/python benchmarks/models.py
	$(BIN)/python benchmarks/rpc.py
	$(BIN)/python benchmarks/under_load.py

clean:
	rm -rf $(VENV) build *.egg-info
