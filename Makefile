# The two commands a fresh machine needs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint pytest lit bench clean system-deps

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed

$(VENV)/.installed-bench: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[bench]'
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

pytest: system-deps $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q

lit: $(VENV)/.installed-dev
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/lit -s tests/lit

# pyright checks the package through build/pyright-src, the import layout of
# [tool.setuptools] package-dir as symlinks, which the script rebuilds first.
lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python .ci/pyright_tree.py --run

test: lint pytest lit

# Side by side with numpy, onnxruntime, PyTorch and apache-tvm (the bench extra).
bench: $(VENV)/.installed-bench
	$(BIN)/python benchmarks/matmul.py
	$(BIN)/python benchmarks/conv2d.py
	$(BIN)/python benchmarks/call_overhead.py
	$(BIN)/python benchmarks/models.py
	$(BIN)/python benchmarks/rpc.py

clean:
	rm -rf $(VENV) build *.egg-info
