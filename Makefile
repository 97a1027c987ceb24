# One entry point per task; every target creates the virtualenv it needs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PACKAGES := libs/contracts libs/runtime libs/citations services/gateway services/retrieval services/verifier services/discovery services/staging
PYPROJECTS := $(addsuffix /pyproject.toml,$(PACKAGES))

.PHONY: run test test-fast bench lint fmt schemas docs clean plugin plugin-deps browser train-relevance train-verifier deploy-rehearsal

$(STAMP): $(PYPROJECTS) requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet $(addprefix -e ,$(PACKAGES)) -r requirements-dev.txt
	touch $(STAMP)

run: $(STAMP) plugin-deps
	$(PY) -m zocrates_runtime.stack

# Two workers, each test file on one (its module fixtures built once): most tests wait on the
# processes they start, so the suite takes about three quarters of the time on two cores.
test: $(STAMP) plugin-deps browser
	cd plugin && node --test test/*.test.js
	$(PY) -m pytest -n 2 --dist loadfile

test-fast: $(STAMP)
	$(PY) -m pytest -m "not slow"

bench: $(STAMP)
	$(PY) -m bench

# The lab deployment built and run under podman, end to end (deploy/rehearsal/rehearse.sh;
# needs podman, runc and mmdebstrap: docs/deploy.md, "What was rehearsed").
deploy-rehearsal: $(STAMP)
	PY=$(abspath $(PY)) deploy/rehearsal/rehearse.sh

# The answer-relevance cross-encoder (not yet used by the answer writer; docs/answer-relevance.md).
train-relevance: $(STAMP)
	$(PY) -m tools.train_relevance --out data/models/answer-relevance

# The verifier's default model (docs/verifier-model.md): train on bench/data/verifier, calibrate,
# evaluate, and write the float16 weights the verifier loads (45 min of training and ~15 of
# evaluation on 2 shared cores with VERIFIER_TRAIN_FLAGS="--threads 1"; a GPU: "--device cuda
# --epochs 3 --max-length 256 --domain-epochs 3").
VERIFIER_TRAIN_FLAGS ?=
train-verifier: $(STAMP)
	$(PY) -m tools.train_verifier --out data/models/verifier \
		--ship services/verifier/src/zocrates_verifier/model $(VERIFIER_TRAIN_FLAGS)

schemas: $(STAMP)
	$(PY) -m zocrates_contracts.export
	$(PY) -m tools.pluginlimits

docs: $(STAMP)
	$(PY) -m tools.configdoc

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

fmt: $(STAMP)
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

clean:
	rm -rf $(VENV) data
	# the rehearsal's podman storage (images, layers, volumes) lives in the clone
	if [ -f .rehearsal/storage.conf ]; then CONTAINERS_CONF=deploy/rehearsal/containers.conf \
	  CONTAINERS_STORAGE_CONF=.rehearsal/storage.conf podman system reset --force; fi
	rm -rf .rehearsal

# The Zotero plugin (issue 7): npm packages (and the vendored markdown-it and KaTeX) from the
# committed package-lock.json, then build/zocrates.xpi.
PLUGIN_DEPS := plugin/node_modules/.zocrates-installed

$(PLUGIN_DEPS): plugin/package.json plugin/package-lock.json
	cd plugin && npm ci --no-audit --no-fund
	touch $(PLUGIN_DEPS)

plugin-deps: $(PLUGIN_DEPS)

plugin: $(PLUGIN_DEPS)
	cd plugin && node scripts/build.mjs ../build/zocrates.xpi

# The web UI's end-to-end test drives Debian's chromium (tests/ui): install it when absent.
browser:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium)
