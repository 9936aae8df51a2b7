"""Every bench module imports beside every other in one process: none defines absl flags at import
(each defines them in `define_flags()`, called when it runs as a script), and each one's flags are
there when it runs."""

import functools
import json
import os
import pkgutil
import subprocess
import sys

import bench
from tools.gen_flags_doc import load_inventory
from in_process import run_module

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = {**os.environ, "PYTHONPATH": ROOT}
MODULES = sorted(m.name for m in pkgutil.iter_modules(bench.__path__))
# A fresh interpreter: absl's flags are global to a process, and this one may have defined some.
IMPORT_ALL = """
import importlib, json, sys
from absl import flags
modules = {name: importlib.import_module("bench." + name) for name in sys.argv[1:]}
by_module = flags.FLAGS.flags_by_module_dict()
print(json.dumps({"project_flags": {m: sorted(f.name for f in fs) for m, fs in by_module.items()
                                    if m.split(".")[0] in ("__main__", "bench", "common", "tools")},
                  "define_flags": sorted(name for name, module in modules.items() if hasattr(module, "define_flags"))}))
"""


@functools.lru_cache(maxsize=None)
def _import_all():
    """What importing every bench module in one fresh interpreter defines (one process for both tests)."""
    proc = subprocess.run([sys.executable, "-c", IMPORT_ALL, *MODULES], cwd=ROOT, env=ENV, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_maintained_benchmarks_and_the_harness_are_there():
    assert set(MODULES) >= {"ablation", "backends_worker", "encode_backends", "export_bench", "harness",
                            "hf_pretrain", "mlm_throughput", "pack_books",
                            "pages", "parity", "parity_worker", "pause_official", "reproduce", "st_worker",
                            "sts_floor", "verdicts", "vs_sentence_transformers", "your_task"}


def test_every_bench_module_imports_beside_every_other_without_defining_flags():
    found = _import_all()
    # Importing them defines the flags of what they import (absl's, TensorFlow's, common.cli's --verbose),
    # never their own.
    assert found["project_flags"] == {"common.cli": ["verbose"]}
    assert set(found["define_flags"]) == {"ablation", "encode_backends", "export_bench", "hf_pretrain",
                                          "make_retrieval_set",
                                          "mlm_throughput", "pack_books", "parity", "pause_official",
                                          "pause_official_train", "reproduce", "retrieval_vs_st", "roberta_reference",
                                          "st6_folder_parity", "sts_floor", "vs_sentence_transformers", "your_task"}


def test_each_benchmark_defines_its_flags_when_it_runs():
    """Each module run as a script (`--helpxml`, as tools.flag_inventory reads them) has its own flags."""
    runnable = ["bench." + name for name in _import_all()["define_flags"]]
    found = load_inventory(runnable)
    own = {entry: {f.name for f in flags if f.own} for entry, flags in found.items()}
    assert all(own[entry] for entry in runnable), own
    assert {"method", "poolings", "pos_sample_prec", "results_dir"} <= own["bench.ablation"]
    assert {"stages", "percentages", "results_dir"} <= own["bench.reproduce"]
    assert {"results_dir"} <= own["bench.sts_floor"] & own["bench.export_bench"] & own["bench.mlm_throughput"]
    assert {"results_dir"} <= own["bench.vs_sentence_transformers"] & own["bench.st6_folder_parity"]
    assert {"rows", "seeds", "steps", "start", "work_dir", "allow_loaded", "results_dir"} <= own["bench.parity"]
    assert {"starts", "train_lrs", "seeds", "pause_steps", "simcse_steps", "pause_eval_every", "results_dir"} <= own[
        "bench.your_task"]


def test_helpshort_lists_the_flags_of_a_benchmark_run_as_a_script():
    for module, flag in (("bench.ablation", "--method"), ("bench.reproduce", "--stages")):
        proc = run_module(module, ["--helpshort"])
        # absl ends --helpshort with exit status 1; what it printed is what counts.
        assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
        assert f"{flag}:" in proc.stdout, proc.stdout[-2000:]
