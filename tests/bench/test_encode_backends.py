"""bench/encode_backends.py at a toy scale: a tiny random BERT on a few STS-B pairs, one round, the toolkit's
graph variants for real, and the sentence-transformers worker started with this environment's Python, which
has no sentence-transformers, so that each of its variants reports its error instead of a number. The real
run (MiniLM, every variant, the reference environment, an idle machine) is outside the test suite."""

import json
import os
import subprocess
import sys

import pytest

from fixtures import write_sts_root
from in_process import run_module

from bench import encode_backends as bench
from common.errors import UserError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_sides_alternate():
    assert bench.interleaved(["a", "b", "c"], ["x"]) == [("toolkit", "a"), ("sentence-transformers", "x"),
                                                         ("toolkit", "b"), ("toolkit", "c")]


def test_summary_ratio_and_table():
    raw = {"toolkit/fp32": {"seconds": [2.0, 1.0, 4.0], "stsb_test": 82.03},
           "toolkit/onnx-int8": {"seconds": [0.5, 0.5, 1.0], "stsb_test": 81.9},
           "sentence-transformers/torch": {"seconds": [2.0, 2.0, 2.0], "stsb_test": 82.03},
           "sentence-transformers/onnx": {"error": "ModuleNotFoundError: No module named 'optimum'"}}
    variants = bench.summarise(raw, 100)
    assert variants["toolkit/fp32"] == {"sentences_per_s": 50.0, "min": 25.0, "max": 100.0, "stsb_test": 82.03}
    assert variants["sentence-transformers/onnx"] == {"error": "ModuleNotFoundError: No module named 'optimum'"}
    best = bench.ratio_best(variants)
    assert best == {"ratio": 4.0, "toolkit": "toolkit/onnx-int8",
                    "sentence_transformers": "sentence-transformers/torch"}
    lines = bench.table(variants, best, 1000.0, loaded=True)
    assert lines[0].startswith("**LOADED")
    assert "| toolkit | fp32 | 50.0 [25.0-100.0] | 82.03 |" in lines
    assert "| sentence-transformers | onnx | not run: ModuleNotFoundError: No module named 'optimum' | |" in lines
    assert any(line.startswith("ratio_best = 4.00") for line in lines)
    assert bench.ratio_best({k: v for k, v in variants.items() if k.startswith("toolkit/")}) is None


def test_a_toy_run_writes_the_page_and_results(tmp_path):
    data = write_sts_root(str(tmp_path / "data"))
    results = tmp_path / "results"
    proc = subprocess.run([sys.executable, "-m", "bench.encode_backends", "--model=random_tiny", f"--data_path={data}",
                           f"--reference_python={sys.executable}", f"--onnx_reference_python={sys.executable}",
                           "--toolkit_variants=fp32,onnx-int8,openvino-int8,openvino-bf16",
                           "--st_variants=torch,onnx,openvino-int8",
                           "--rounds=1", "--batch_size=4", "--allow_loaded",
                           f"--results_dir={results}"], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = json.load(open(results / "results.json"))
    for variant in ("fp32", "onnx-int8", "openvino-int8", "openvino-bf16"):
        entry = record["variants"][f"toolkit/{variant}"]
        assert entry["sentences_per_s"] > 0 and -100 <= entry["stsb_test"] <= 100, entry
    for variant in ("torch", "onnx", "openvino-int8"):
        assert "No module named" in record["variants"][f"sentence-transformers/{variant}"]["error"]
    assert record["ratio_best"] is None and record["sentences"] == 12 and record["tokenizer_sentences_per_s"] > 0
    # One worker per reference environment: the ONNX variants' own, the others' own.
    assert record["reference"]["sentence-transformers"] == "not installed"
    assert record["reference_onnx"]["sentence-transformers"] == "not installed"
    page = (results / "README.md").read_text()
    assert "Written by `bench/encode_backends.py`" in page and "| toolkit | onnx-int8 |" in page
    assert "ratio_best: not computed" in page
    assert "- sentence-transformers side, ONNX variants: sentence-transformers not installed" in page


def test_refuses_a_loaded_machine(tmp_path):
    proc = run_module("bench.encode_backends", ["--max_load=-1", f"--results_dir={tmp_path}"])
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Refusing to benchmark" in proc.stderr and "--allow_loaded" in proc.stderr
    assert not os.listdir(tmp_path)


def test_onnx_variants_run_in_their_own_environment():
    assert [bench.worker_of(v) for v in bench.ST_VARIANTS] == ["main", "onnx", "onnx", "main", "main", "main"]
    expected = r"--onnx_reference_python=/no/such/python: not found; .*make reference-onnx-env"
    with pytest.raises(UserError, match=expected):
        bench.environment_python("onnx", "/no/such/python")
