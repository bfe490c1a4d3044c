# The two set-up commands of the README:
#   make repro      install everything, rebuild the pinned corpus, print the plan, `dvc repro` of the default profile's stages
#   make test       install everything, run the test suite (what CI runs)
#   make test-fast  the same without the tests marked slow (the inner loop)
#   make repro-headline  as make repro, for the headline profile's stages (many more core-hours)
# and, on a fresh clone (no weights), without training:
#   make notebooks  re-execute every notebook from the committed runs and analyses
#   make plan       every run of params.yaml's profile (PROFILE=headline: that one's): done, weights missing, to train, its cost
#   make test-floor the Hugging Face tests against the oldest transformers pyproject.toml allows
#   make html       HTML copies of the executed notebooks (not committed), beside them
#   make site       the results site (not committed): open site/index.html in a browser
# and on a lent GPU, whose machine has no package registry (docs/hardware.md, "A lent GPU"):
#   make gpu-lease DRY=--dry     here: check, price and pack the lease's one call, run it at tiny shapes on the CPU
#   make gpu-lease EXPORT=$OUT   there: the one call (MODE=check, bench or science: one mode)
#   make gpu-import DIR=...      here: what came back from $OUT, under runs/gpu/
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
export DVC_NO_ANALYTICS := 1
export HF_HUB_OFFLINE := 1

.PHONY: install repro repro-headline test test-fast test-floor benchmark notebooks plan html site gpu-lease gpu-import

install: $(VENV)/.installed

# torch first and pinned: an open range would pull a multi-GB CUDA build (pip takes it from a machine's own wheel
# where there is one, which uv would not look for); the rest with uv, which fetches in parallel (docs/measurements.md
# times a fresh install), at constraints.txt's versions, trusting the machine's certificate store as pip does
# (--system-certs: uv's own roots refuse a registry behind a local certificate authority) and compiling bytecode as pip
# does (--compile-bytecode: where PYTHONDONTWRITEBYTECODE is set, as on this project's machines, every process would
# otherwise compile pandas, matplotlib, transformers... again)
$(VENV)/.installed: pyproject.toml constraints.txt requirements-offline.txt jupyter/overrides.d/cod.json
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -c constraints.txt torch==2.13.0 uv==0.13.9
	$(BIN)/uv pip install --quiet --system-certs --compile-bytecode --python $(BIN)/python -c constraints.txt -e ".[dev,hf,pipeline,lab]"
	$(BIN)/uv pip install --quiet --system-certs --compile-bytecode --python $(BIN)/python --no-deps -r requirements-offline.txt
	$(BIN)/python -m cod.report.plots_page  # the offline page template of `dvc plots show` (.dvc/config)
	mkdir -p $(VENV)/share/jupyter/lab/settings/overrides.d  # JupyterLab: a .py file opens as a Jupytext notebook
	cp jupyter/overrides.d/cod.json $(VENV)/share/jupyter/lab/settings/overrides.d/
	touch $@

# `dvc repro` of one profile's stages: the default profile's (make repro) or the headline profile's
# (make repro-headline, many more core-hours: `make plan PROFILE=headline` prices it); the curves and docs stages read
# both profiles' committed files, so they run alone (--single-item) and never train the other profile
DEFAULT_STAGES := prepare failure_lines 'train@*' 'finetune@*' 'analyse@*' 'analyse_open@*' analyse_open_weight_depth 'a[0-9]*' 'b[0-9]*' claims
HEADLINE_STAGES := prepare 'train_headline@*' 'analyse_headline@*' 'h[0-9]*' 'headline_*'
repro: install
	$(BIN)/python -m cod.data.snapshot
	$(BIN)/python -m cod.pipeline.experiments plan --runs todo
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/dvc repro --glob $(DEFAULT_STAGES)
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/dvc repro --single-item curves
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/dvc repro --single-item docs

repro-headline: install
	$(BIN)/python -m cod.data.snapshot
	$(BIN)/python -m cod.pipeline.experiments plan --runs todo --profile headline
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/dvc repro --glob $(HEADLINE_STAGES)
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/dvc repro --single-item curves
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/dvc repro --single-item docs

notebooks: install
	$(BIN)/python -m cod.data.snapshot
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/dvc repro prepare
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m cod.pipeline.notebook --all
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m cod.pipeline docs

plan: install
	$(BIN)/python -m cod.pipeline.experiments plan --runs all $(if $(PROFILE),--profile $(PROFILE))

# one pytest-xdist worker a core; a test file stays on one worker, so its module fixtures are made once;
# files start in the order tests/conftest.py gives them (the longest first), not reordered by their test counts
test: install
	$(BIN)/python -m pytest -q -n auto --dist loadfile --no-loadscope-reorder --durations=15

# the inner loop: every test but those marked slow (pretrained models, the smoke pipeline, subprocess
# runs, sizing; pyproject.toml and tests/conftest.py SLOW)
test-fast: install
	$(BIN)/python -m pytest -q -n auto --dist loadfile --no-loadscope-reorder -m "not slow" --durations=10

# the tests that touch Hugging Face, against the oldest transformers pyproject.toml allows
FLOOR := $(shell sed -n 's/.*"transformers>=\([0-9.]*\)".*/\1/p' pyproject.toml)
test-floor: install
	rm -rf .cache/floor
	$(BIN)/pip install --quiet --target .cache/floor "transformers==$(FLOOR)"
	rm -rf .cache/floor/numpy .cache/floor/numpy-* .cache/floor/numpy.libs  # keep the environment's numpy
	PYTHONPATH=.cache/floor $(BIN)/python -m pytest -q -p no:cacheprovider \
		tests/test_interop.py tests/test_adapters.py tests/test_eval.py tests/test_model.py

benchmark: install
	$(BIN)/python -m cod.tools.benchmark

html: install
	$(BIN)/python -m cod.pipeline.notebook --html

site: install
	$(BIN)/python -m cod.report.site

# no install step: the lent machine has torch but no registry; its python when there is no .venv
MODE ?= lease
LEASE_PYTHON ?= $(if $(wildcard $(BIN)/python),$(BIN)/python,python3)
gpu-lease:
	$(LEASE_PYTHON) -m cod.tools.gpu_lease $(MODE) $(DRY) $(if $(EXPORT),--export $(EXPORT))

gpu-import:
	$(LEASE_PYTHON) -m cod.tools.gpu_lease --import $(DIR)
