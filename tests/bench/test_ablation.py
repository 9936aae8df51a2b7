"""bench/ablation.py: one driver, per-method settings (a flag the method does not use is an error), and a
smoke run of its main on tiny data that writes the results page."""

import json
import os

import pytest

from fixtures import write_senteval_snli, write_sts_root
from senteval_fixtures import write_trec

from bench import ablation
from common.errors import UserError
from in_process import run_module

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(*args, cwd=ROOT):
    """`python -m bench.ablation <args>` in this process (tests/in_process.py; its real entry point is run by
    tests/bench/test_modules.py)."""
    return run_module("bench.ablation", list(args), cwd=cwd)


def test_each_method_has_its_own_defaults_and_the_flags_given_replace_them():
    assert ablation.settings_for("pause", {}) == ablation.Pause()
    assert ablation.settings_for("declutr", {}).batch_size == 4 and ablation.settings_for("pause", {}).batch_size == 32
    assert ablation.settings_for("simcse", {}).steps == 250 and ablation.settings_for("declutr", {}).steps == 120
    simcse = ablation.settings_for("simcse", {"poolings": ["mean"], "steps": 3})
    assert simcse.poolings == ("mean",) and simcse.steps == 3 and simcse.train_data == ("senteval:dev", "senteval:test")
    te = ablation.settings_for("trans_encoder", {"mutual_init": "run-b"})
    assert ablation.default_results_dir("trans_encoder", te) == os.path.join(
        "docs", "benchmarks", "ablation", "trans_encoder_mutual")
    assert ablation.default_results_dir("pause", ablation.Pause()) == os.path.join("docs", "benchmarks", "ablation",
                                                                                   "pause")


def test_a_setting_the_method_does_not_use_is_an_error():
    with pytest.raises(UserError, match=r"--method=simcse does not use --pos_sample_prec; its settings: --model"):
        ablation.settings_for("simcse", {"pos_sample_prec": 5.0})


def test_a_setting_shared_by_methods_is_one_flag_of_one_type():
    fields = ablation.setting_fields()
    assert fields["batch_size"] == ("int", {"pause": 32, "declutr": 4})
    assert set(fields["model"][1]) == set(ablation.METHODS)
    assert set(fields) == set(ablation.HELP)


def test_the_command_line_refuses_an_unused_flag_or_no_method_in_one_line(tmp_path):
    proc = run_module("bench.ablation", ["--method=simcse", "--pos_sample_prec=5", f"--results_dir={tmp_path}"])
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines()[-1].startswith(
        "ablation.py: --method=simcse does not use --pos_sample_prec")
    proc = run_module("bench.ablation", [f"--results_dir={tmp_path}"])
    assert proc.returncode == 2 and "--method is required" in proc.stderr.strip().splitlines()[-1]
    assert not os.listdir(tmp_path)


def test_a_run_on_tiny_data_writes_its_results_page(tmp_path):
    data = write_sts_root(str(tmp_path / "data"))
    for split in ("dev", "test"):
        write_senteval_snli(data, split)
    write_trec(data)
    page = tmp_path / "page"
    proc = _run("--method=simcse", "--model=random_tiny", f"--data_path={data}", f"--artifacts_dir={tmp_path / 'art'}",
                f"--results_dir={page}", "--steps=2", "--poolings=mean", cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = (page / "README.md").read_text()
    assert "Written by `bench/ablation.py`; do not edit by hand." in text
    assert "- Command: `python -m bench.ablation --method=simcse --model=random_tiny" in text
    assert "- Load: 1-minute load average" in text and "- Setting: unsup SimCSE from random_tiny, 2 steps" in text
    assert "| untrained random_tiny |" in text and "| unsup SimCSE, --pooling=mean |" in text
    results = json.load(open(page / "results.json"))
    assert results["method"] == "simcse" and results["settings"]["poolings"] == ["mean"]
    assert set(results["results"]) == {"untrained random_tiny", "unsup SimCSE, --pooling=mean"}
    assert results["results"]["unsup SimCSE, --pooling=mean"]["train_seconds"] > 0
    assert results["load"]["load1_at_start"] >= 0
