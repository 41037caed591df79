# Two commands do all the set-up on a fresh machine: `make audit` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: audit test test-quick bench fuzz install clean matrix gpu-check survey surface order

# PYTHONWARNINGS=ignore keeps setuptools' editable-install banner (about folders named like the package) out of the way.
# compileall byte-compiles gradaudit as pip does a regular install (an editable one under PYTHONDONTWRITEBYTECODE=1
# would compile every module from source at each start; docs/performance.md has the measurement).
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	PYTHONWARNINGS=ignore $(BIN)/python -m pip install --quiet -e '.[test,ecosystem]'
	$(BIN)/python -m compileall -q gradaudit
	touch $(STAMP)

install: $(STAMP)

# Exit 1 here means the audit found disagreements (on JAX <= 0.11.2 the seed suite has 11), not a broken install.
audit: $(STAMP)
	$(BIN)/gradaudit run scenarios/

# Lint, formatting and types first (ruff and mypy, configured in pyproject.toml): seconds, and a failure names the line.
# Then the tests on every core (pytest-xdist): most of their time is XLA compiling, which uses one; one worker more
# than cores, since some tests wait out timeouts and sleeping processes while another could compile. The 15
# slowest are listed at the end, so a test that grew slow shows.
TEST_WORKERS ?= $(shell $(PYTHON) -c "import os; print((os.cpu_count() or 1) + 1)")
test: $(STAMP)
	$(BIN)/ruff check gradaudit tests bench
	$(BIN)/ruff format --check gradaudit tests bench
	$(BIN)/mypy
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --durations=15

# The quick loop while editing the judge or the loaders: their tests (not those marked slow) on every core,
# stopping at the first failure; `make test` runs everything.
QUICK_TESTS = tests/test_judge.py tests/test_judge_evidence.py tests/test_classes.py tests/test_fd_trust.py \
	tests/test_refine.py tests/test_scale.py tests/test_rounding.py tests/test_trust.py tests/test_referee.py \
	tests/test_scenario.py tests/test_fuzz.py tests/test_paths.py tests/test_architecture.py
test-quick: $(STAMP)
	$(BIN)/python -m pytest -m "not slow" -x -q -n auto $(QUICK_TESTS)

# Thousands of mutated scenario files through the loader (the normal test run tries 150).
fuzz: $(STAMP)
	GRADAUDIT_FUZZ_EXAMPLES=5000 $(BIN)/python -m pytest tests/test_fuzz.py -q

# Speed against the check_grads loop (bench/run.py); writes reports/bench.json and reports/bench.md. The
# installed-rule (findings-heavy) grid runs at 1,000 and 10,000 scenarios: the two peaks show how memory grows.
bench: $(STAMP)
	$(BIN)/python -m compileall -q gradaudit
	$(BIN)/python bench/run.py --sizes 100 1000 --repetitions 3
	$(BIN)/python bench/run.py --sizes 1000 10000 --repetitions 1 --peer-max 0 --out reports/bench-10000-installed
	$(BIN)/python bench/run.py --sizes 10000 --rule fixed --repetitions 1 --peer-max 0 --out reports/bench-10000-fixed
	$(BIN)/python bench/run.py --grid functions --sizes 1000 --repetitions 1 --out reports/bench-functions
	$(BIN)/python bench/model_loss.py
	$(BIN)/python bench/small_jobs.py
	$(BIN)/python bench/unseen_grid.py

# The catalog ten times in shuffled orders with 0, 1 and 2 workers: one report (bench/order.py writes reports/order.md).
order: $(STAMP)
	$(BIN)/python bench/order.py --runs 10

# JAX's public surface probed anew (gradaudit/survey/surface.py): every public callable of the surveyed modules
# becomes an entry of gradaudit/survey/surface.json or is left out with its reason; a few minutes.
surface: $(STAMP)
	$(BIN)/python -m gradaudit.survey.surface

# JAX's differentiable surface surveyed unaided (docs/survey.md): the report and a reproducer file per kind in
# reports/survey/. Cold (a fresh compilation cache), one shard per core side by side (each with one worker: a draw
# that crashes costs a worker, not the survey), merged into the report one process would write; the wall time
# and where it went (bench/survey_time.py: by phase, timeouts, the slowest) go to reports/survey/TIME.md.
# SURVEY_SHARDS=... picks another split.
SURVEY_SHARDS ?= $(shell nproc 2>/dev/null || echo 2)
SURVEY_OPTIONS ?= --budget 30 --seed 0
survey: $(STAMP)
	rm -rf reports/survey/found reports/survey/shards .gradaudit/survey-cache
	mkdir -p reports/survey/shards
	started=$$(date +%s); pids=""; \
	for k in $$(seq 1 $(SURVEY_SHARDS)); do \
		$(BIN)/gradaudit survey $(SURVEY_OPTIONS) --shard $$k/$(SURVEY_SHARDS) --jobs 1 --exit-zero --color never \
			--cache-dir .gradaudit/survey-cache --out reports/survey/found --json reports/survey/shards/$$k.json \
			> reports/survey/shards/$$k.log 2>&1 & pids="$$pids $$!"; \
	done; \
	for pid in $$pids; do wait $$pid || { echo "a survey shard failed: see reports/survey/shards/*.log"; exit 2; }; done; \
	$(BIN)/gradaudit merge reports/survey/shards/*.json -o reports/survey/survey.json \
		--defects reports/survey/DEFECTS.md --exit-zero; \
	finished=$$(date +%s); \
	printf '%s\n' "# How long \`make survey\` took" "" \
		"$$(( (finished - started) / 60 )) min $$(( (finished - started) % 60 )) s wall, cold (a fresh compilation cache)," \
		"$(SURVEY_SHARDS) shards side by side on $$(nproc) cores ($$(uname -m), $$($(BIN)/python -c 'import platform, jax; \
		print(f"Python {platform.python_version()}, JAX {jax.__version__}")')), finished $$(date -u +%Y-%m-%dT%H:%MZ)." \
		> reports/survey/TIME.md
	printf '\n' >> reports/survey/TIME.md
	$(BIN)/python bench/survey_time.py reports/survey/survey.json >> reports/survey/TIME.md
	rm -rf reports/survey/shards/*.json .gradaudit/survey-cache
	cat reports/survey/TIME.md

# The supported JAX range, oldest and newest, each in its own virtual environment under .matrix/:
# the tests, then the seed suite, whose findings must equal the committed report's (gradaudit diff
# both ways) and which --rule fixed must clear. MATRIX=... picks other releases.
MATRIX ?= 0.9.0.1 newest
matrix: $(addprefix matrix-,$(MATRIX))

matrix-%:
	test -x .matrix/$*/bin/python || $(PYTHON) -m venv .matrix/$*
	.matrix/$*/bin/python -m pip install --quiet --upgrade pip
	.matrix/$*/bin/python -m pip install --quiet -e '.[test]' $(if $(filter newest,$*),--upgrade jax jaxlib,jax==$* jaxlib==$*)
	.matrix/$*/bin/python -c "import jax, jaxlib; print('JAX', jax.__version__, 'jaxlib', jaxlib.__version__)"
	.matrix/$*/bin/python -m pytest -n auto -q -p no:cacheprovider
	mkdir -p reports/matrix
	.matrix/$*/bin/gradaudit run scenarios/select_n/ -q --exit-zero --json reports/matrix/select_n-jax-$*.json
	.matrix/$*/bin/gradaudit diff reports/select_n-jax-0.10.2-cpu.json reports/matrix/select_n-jax-$*.json -q
	.matrix/$*/bin/gradaudit diff reports/matrix/select_n-jax-$*.json reports/select_n-jax-0.10.2-cpu.json -q
	.matrix/$*/bin/gradaudit run scenarios/select_n/ -q --rule fixed

# Where a GPU is lent: the catalog on every GPU device, the report written to reports/ with the device named.
gpu-check:
	PYTHONPATH=. python3 -m gradaudit run scenarios/ --backend gpu --devices all -q --exit-zero \
		--json reports/catalog-gpu.json --no-cache
	PYTHONPATH=. python3 -m gradaudit run scenarios/select_n/ --backend gpu --devices all -q --rule fixed --no-cache

clean:
	rm -rf $(VENV) .matrix build *.egg-info .pytest_cache .gradaudit
