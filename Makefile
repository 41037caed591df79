# Two commands do all the set-up on a fresh machine: `make audit` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: audit test bench fuzz install clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# Exit 1 here means the audit found disagreements (on JAX <= 0.11.2 the seed suite has 11), not a broken install.
audit: $(STAMP)
	$(BIN)/gradaudit run scenarios/

test: $(STAMP)
	$(BIN)/python -m pytest

# Thousands of mutated scenario files through the loader (the normal test run tries 150).
fuzz: $(STAMP)
	GRADAUDIT_FUZZ_EXAMPLES=5000 $(BIN)/python -m pytest tests/test_fuzz.py -q

# Speed against the check_grads loop (bench/run.py); writes reports/bench.json and reports/bench.md.
bench: $(STAMP)
	$(BIN)/python bench/run.py --sizes 100 1000 --repetitions 3
	$(BIN)/python bench/run.py --sizes 10000 --rule fixed --repetitions 1 --peer-max 0 --out reports/bench-10000-fixed

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
