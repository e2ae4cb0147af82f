# The README's two commands: `make test` and `make bench`. Both set everything up first,
# then rebuild only what changed since the last build.
PYTHON ?= python3
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c

.PHONY: install test bench lint format

# 1. The requirements: pip fetches nothing when they are all there (the GPU machine).
# 2. The extension, built in place with ninja, which compiles only the files that changed
#    (or whose headers did) and the ones a new torch or new flags affect; a first build
#    takes ~80 s on 2 cores with CUDA. Its [done/total] lines and the link line are
#    shortened to the file compiled or linked; compiler errors pass through whole.
# 3. Once per checkout (again when setup.py or pyproject.toml change; `rm -r build` to
#    force it), an editable install, so that `import warpreduce_torch` finds this
#    checkout from anywhere; setup.py points its build at the same ninja folder, so it
#    compiles nothing that step 2 already did.
install:
	$(PYTHON) -m pip install -q -r requirements.txt
	PYTHONUNBUFFERED=1 $(PYTHON) setup.py build_ext --inplace 2>&1 \
	  | sed -u -E -e 's/^(\[[0-9]+\/[0-9]+\]) .* (\S+\.(cpp|cu)) .*/\1 compiling \2/' \
	    -e 's/^\S*[gc]\+\+ .* -shared .* -o (\S+) .*/linking \1/'
	@$(MAKE) -s --no-print-directory build/.editable-install

build/.editable-install: setup.py pyproject.toml
	@echo "$(PYTHON) -m pip install -q --no-build-isolation --no-deps -e ."
	@$(PYTHON) -m pip install -q --no-build-isolation --no-deps -e .
	@touch $@

# -rs: the reason for each skipped test (the CUDA tests skip without a GPU).
test: install
	$(PYTHON) -m pytest -q -rs tests

bench: install
	$(PYTHON) -m warpreduce_torch.bench

# The style checks CI runs: ruff (lint and format, configured in pyproject.toml) on the
# Python, clang-format (.clang-format) on the C++ and CUDA. `make format` applies both.
# The tools are pinned: another version formats differently. clang-format is the binary
# its wheel ships (the wheel's console script may not be on PATH).
LINTERS := ruff==0.17.6 clang-format==23.1.5
CXX_SOURCES = $(shell git ls-files 'csrc/*.h' 'csrc/*.cpp' 'csrc/*.cu' 'csrc/*.cuh')
CLANG_FORMAT = $(shell $(PYTHON) -c 'import clang_format, os; \
  print(os.path.join(os.path.dirname(clang_format.__file__), "data", "bin", "clang-format"))')

.PHONY: lint-tools
lint-tools:
	$(PYTHON) -m pip install -q $(LINTERS)

lint: lint-tools
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	$(CLANG_FORMAT) --dry-run --Werror $(CXX_SOURCES)

format: lint-tools
	$(PYTHON) -m ruff check --fix .
	$(PYTHON) -m ruff format .
	$(CLANG_FORMAT) -i $(CXX_SOURCES)
