# Convenience targets; ./run is the entry point README.md documents.
.PHONY: setup repro test bench clean-lab lock
setup repro test bench clean-lab:
	./run $@

## Re-pin Python dependencies after changing pyproject.toml.
lock:
	.venv/bin/pip freeze --exclude-editable | grep -v '^nfvlab' > requirements.lock
