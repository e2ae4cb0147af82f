# The README's two commands: `make test` and `make bench`. Both set everything up first.
PYTHON ?= python3

.PHONY: install test bench

install:
	$(PYTHON) -m pip install -q -r requirements.txt
	$(PYTHON) -m pip install -q --no-build-isolation -e .

test: install
	$(PYTHON) -m pytest -q tests

bench: install
	$(PYTHON) -m warpreduce_torch.bench
