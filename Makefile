# The two commands of README.md:  make repro  (the whole pipeline)  and  make test.
# Both run the idempotent set-up first.
SHELL := /bin/bash
VENV  := $(CURDIR)/.venv
export PATH := $(VENV)/bin:$(PATH)

.PHONY: setup repro test test-fast bench clean-lab lock

setup:
	@bash scripts/setup.sh

## The main job: every DVC stage (reference figures; measured experiments as they land).
repro: setup
	dvc repro

## The test suite (needs root: the lab tests build real namespaces).
test: setup
	pytest -q

## Tests that need no lab (pure Python).
test-fast: setup
	pytest -q -m "not lab"

## Benchmarks print measured figures; see bench/README.md.
bench: setup
	python bench/measurement_core.py

## Remove whatever a killed run left behind (only nfvlab's own resources).
clean-lab: setup
	nfvlab lab clean

## Re-pin Python dependencies after changing pyproject.toml.
lock:
	$(VENV)/bin/pip freeze --exclude-editable | grep -v '^nfvlab' > requirements.lock
