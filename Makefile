# make book  -- build the HTML book into _build/html (creates .venv on first use)
# make test  -- lint, then the test suite (unit tests, every chapter in quick mode, the built book in Chromium)
# make test-slow -- the long proofs make test leaves out: every shipped checkpoint on mpe2 (CI runs both)
# make bench -- print the speed benchmarks (ratios measured side by side in one run; the playground's in Chromium)
# make lab   -- open the chapters in JupyterLab with live explorers (installs JupyterLab into .venv)
# make clean -- remove build outputs (keeps .venv)

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
UV_INSTALL := $(VENV)/bin/uv pip install --python $(PY)
SRC    := $(shell find src -type f -not -path '*/__pycache__/*')
IPYW7  := $(VENV)/ipywidgets7

.PHONY: book test test-slow bench lab clean chromium node

# Some machines set PYTHONDONTWRITEBYTECODE: every process (pytest workers, kernels, Ray workers) would then
# compile torch's modules again on import, 5 s of CPU each. Here Python writes bytecode once, into .venv.
unexport PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX := $(CURDIR)/$(VENV)/pycache

# torch first, with pip and without other packages (only uv, which depends on nothing): pip then takes the
# local CPU wheel of exactly the pinned version (a looser spec, or letting another package pull torch in,
# fetches a multi-GB CUDA build). Byte-compiling all of torch at install took 30 of its 42 s; Python compiles
# the modules it imports on first use instead (PYTHONPYCACHEPREFIX above). uv installs the rest, pinned, and
# keeps that torch (2.13.0+cpu satisfies ==2.13.0): 6 s where pip took 105 s on a 2-core machine.
$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --no-compile "$$(grep -E '^torch==' requirements.txt)" uv==0.13.9
	$(UV_INSTALL) --quiet -r requirements.txt
	$(UV_INSTALL) --quiet --no-deps -e .
	touch $@

# Executed chapters are cached by notebook content, and Sphinx re-reads only changed sources; both are
# dropped whenever the package or the environment changes, so the book never shows outputs of older code.
_build/.src-stamp: $(SRC) $(STAMP)
	rm -rf _build/.jupyter_cache _build/.doctrees
	mkdir -p _build && touch $@

book: $(STAMP) _build/.src-stamp node
	$(VENV)/bin/jupyter-book build . --warningiserror --keep-going
	@echo "Open _build/html/index.html"

# Colab runs ipywidgets 7.7: a copy of it on the side lets the tests drive the live explorers with it too.
$(IPYW7)/.installed: $(STAMP)
	$(UV_INSTALL) --quiet --target $(IPYW7) --no-deps ipywidgets==7.7.5 widgetsnbextension==3.6.10 \
	  jupyterlab_widgets==1.1.11 ipython_genutils==0.2.0
	touch $@

chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "Installing Debian's chromium for the browser tests"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium >/dev/null; }

# The build typesets the formulas with MathJax under Node.js (attnmarl.site.mathsvg), so that pages load no MathJax.
node:
	@command -v node >/dev/null 2>&1 || command -v nodejs >/dev/null 2>&1 || { \
	  echo "Installing Debian's nodejs, which the book build typesets its formulas with"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq nodejs >/dev/null; }

# One pytest worker per core; each test file runs whole on one worker (--dist loadfile), so a file's
# module fixtures (a trained agent, the quick-mode book build) are made once. The long proofs about the
# shipped agents (marked slow: every checkpoint on mpe2 episodes) run in test-slow, test by test; CI runs both.
test: $(STAMP) $(IPYW7)/.installed chromium node
	$(VENV)/bin/ruff check
	$(PY) -m pytest -n auto --dist loadfile --durations=15 -m "not slow"

test-slow: $(STAMP)
	$(PY) -m pytest -n auto --dist load --durations=5 -m slow

bench: $(STAMP) chromium
	@for script in bench/bench_*.py; do echo "== $$script"; $(PY) $$script || exit 1; done

# JupyterLab is not needed to build or test the book, so it is installed on first use only.
$(VENV)/bin/jupyter-lab: $(STAMP)
	$(UV_INSTALL) --quiet "jupyterlab>=4,<5"

lab: $(VENV)/bin/jupyter-lab
	$(VENV)/bin/jupyter lab book/

clean:
	rm -rf _build .pytest_cache
	find . -name __pycache__ -not -path './$(VENV)/*' -prune -exec rm -rf {} +
