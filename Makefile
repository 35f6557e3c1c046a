# ropebook: `make book` builds the whole book (CPU defaults); `make test` runs every test.
# PROFILE=smoke|cpu|gpu picks model sizes; PROFILE=gpu also installs JAX's CUDA build.
PROFILE ?= cpu
# JOBS=N|auto runs N chapters side by side (auto: one per core on a CPU, each with its share of
# the threads; 1.5x on the cpu chapters, benchmarks/README.md); JOBS=1 runs one at a time
JOBS ?= auto
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
CHAPTER ?=
PARAMS ?=
BOOK_FLAGS := -W -n --keep-going
# Each stage of `make book` runs through `ropebook stage NAME --`, which times it into the build's
# records (executed/records/) for the book's build page (chapters/build.py); ROPEBOOK_BUILD names
# this make run there, so a stage make skipped shows as an earlier build's.
ROPEBOOK_BUILD := $(or $(ROPEBOOK_BUILD),$(shell date -u +"make, started %Y-%m-%d %H:%M:%S UTC"))
export ROPEBOOK_BUILD
STAGE = $(PY) -m ropebook stage

.PHONY: book begin setup install assets vendor data proofs machine pull zoo chapters run html check-site test lint sync browser slurm cluster-zoo clean

# A make book that finds the last one unfinished (stopped, failed, killed) resumes it: the build
# page counts both as one build (ropebook.buildrecord). `begin` runs first, before the venv exists.
book: begin setup assets data proofs machine zoo chapters html
	PYTHONPATH=src $(PYTHON) -m ropebook stage --end

begin:
	PYTHONPATH=src $(PYTHON) -m ropebook stage --begin $(PROFILE)

$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@# the wrapper needs only the standard library: it times the install that brings the rest
	PYTHONPATH=src $(STAGE) setup -- $(MAKE) --no-print-directory install
	touch $@

# What setup runs (and times).
install:
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	if [ "$(PROFILE)" = gpu ]; then $(PY) -m pip install --quiet "jax[cuda12]==$$($(PY) -c 'import jax; print(jax.__version__)')"; fi

setup: $(VENV)/.installed

# vega, vega-lite, vega-embed and MathJax at the versions pinned in web/package-lock.json.
assets/vendor/.stamp: web/package.json web/package-lock.json
	$(STAGE) assets -- $(MAKE) --no-print-directory vendor
	touch $@

# What assets runs (and times).
vendor:
	cd web && npm ci --no-audit --no-fund --silent
	rm -rf assets/vendor && mkdir -p assets/vendor
	cp web/node_modules/vega/build/vega.min.js web/node_modules/vega-lite/build/vega-lite.min.js \
	   web/node_modules/vega-embed/build/vega-embed.min.js assets/vendor/
	cp -r web/node_modules/mathjax/es5 assets/vendor/mathjax

assets: assets/vendor/.stamp

data: setup
	$(STAGE) data -- $(PY) -m ropebook data

proofs: setup
	$(STAGE) proofs -- $(PY) -m ropebook proofs

# This machine, the versions, and the lesson model's training speed timed now (~30 s).
machine: setup
	$(STAGE) machine -- $(PY) -m ropebook machine

# The zoo published for this checkout's models (an archive named by `zoo --key`), downloaded,
# verified and installed where one is reachable: ROPEBOOK_ZOO_URL points elsewhere, set empty
# turns it off; offline or refused, one line says so and the zoo stage trains what is missing.
pull: setup data
	$(PY) -m ropebook zoo --profile $(PROFILE) --pull --optional

zoo: setup data pull
	$(STAGE) zoo -- $(PY) -m ropebook zoo --profile $(PROFILE) --workers auto

# Sources to notebooks. Saving from Jupyter (or `jupytext --sync`) rewrites a source byte for
# byte under jupytext.toml (tests/test_jupytext_roundtrip.py), so either side can be edited.
sync: setup
	$(VENV)/bin/jupytext --to ipynb chapters/*.py

chapters: setup sync
	$(STAGE) chapters -- $(PY) -m ropebook run all --profile $(PROFILE) --jobs $(JOBS)

# make run CHAPTER=rope_basics PARAMS="seed=1 head_dim=128"
run: setup pull
	$(PY) -m ropebook run $(CHAPTER) --profile $(PROFILE) $(foreach p,$(PARAMS),-p $(subst =, ,$(p)))

# Build the site from executed/, then check it: no external assets, no error outputs, no broken
# links, and every page opened in headless Chromium (screenshots in _build/screenshots).
html: setup assets browser
	$(STAGE) html -- sh -c '$(VENV)/bin/jupyter-book build . $(BOOK_FLAGS) && \
	  $(PY) -m ropebook check-site _build/html --browser'

# Debian's Chromium for the browser checks (playwright's own browser download cannot work here),
# and a Chinese font (WenQuanYi Micro Hei, 5 MB) for the Daodejing prompt the frequency chapter
# prints: without one, the screenshots show boxes (check-site fails on text no font draws).
BROWSER_PACKAGES := chromium fonts-wqy-microhei
browser:
	(command -v chromium && fc-list :lang=zh | grep -q .) >/dev/null 2>&1 || \
	  (apt-get update -qq && apt-get install -y -qq $(BROWSER_PACKAGES) >/dev/null)

# Debian's Slurm (22.05) and munge for tests/test_cluster.py, which brings up a one-node cluster
# (cluster/slurm up) and trains the smoke zoo on it with the job script users submit.
SLURM_PACKAGES := slurmctld slurmd slurm-client munge
slurm:
	command -v slurmctld slurmd sbatch munged >/dev/null 2>&1 || \
	  (apt-get update -qq && apt-get install -y -qq --no-install-recommends $(SLURM_PACKAGES) >/dev/null)

# make cluster-zoo PROFILE=cpu TASKS=16: the profile's zoo as one Slurm job array (cluster/submit).
TASKS ?= 16
cluster-zoo: setup data
	cluster/submit --profile $(PROFILE) --tasks $(TASKS)

# Tests run on TEST_WORKERS pytest-xdist workers, a file's tests on one worker so its module
# fixtures (trained models, a smoke build) run once (2 on 2 cores: 19 against 27 min, benchmarks/README.md).
TEST_WORKERS ?= 2
test: setup assets browser slurm
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile

lint: setup
	$(VENV)/bin/ruff check src tests chapters benchmarks && $(VENV)/bin/ruff format --check src tests chapters benchmarks

clean:
	rm -rf _build executed
