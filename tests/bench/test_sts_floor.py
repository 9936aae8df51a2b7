"""bench/sts_floor.py: the arithmetic of the floor, and a run of the script on the STS fixture that
writes its results page."""

import json

from fixtures import write_sts_root
from in_process import run_module


def test_token_and_flop_counts():
    from bench.sts_floor import encoder_flops, job_tokens

    # sorted 10 9 | 5 4 | 3: padded 2*10 + 2*5 + 3 = 33; squares 2*100 + 2*25 + 9 = 259
    assert job_tokens([3, 9, 5, 4, 10], 2) == (31, 33, 259)
    # dense 2*2*(4*16 + 2*32)*10 = 5120; attention 2*2*2*4*100 = 3200
    assert encoder_flops(2, 4, 8, 10, 100) == 8320.0


def test_runs_on_the_fixture_and_compares_with_a_benchmark_json(tmp_path):
    data = write_sts_root(str(tmp_path / "data"))
    runs = [{"seconds": s} for s in (100.0, 110.0, 90.0)]
    (tmp_path / "new.json").write_text(json.dumps({"raw": {"sts": {
        "fp32": {"toolkit": [{"seconds": 50.0}], "sentence_transformers": runs}}}}))
    proc = run_module("bench.sts_floor", [f"--data_path={data}", "--large_rows=64", "--repeats=1", "--import_runs=1",
                                          "--precisions=fp32", f"--vs_json={tmp_path / 'new.json'}",
                                          f"--results_dir={tmp_path / 'page'}"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "distinct sentences" in proc.stdout and "floor (import + matmuls)" in proc.stdout
    assert "sentence-transformers' fp32 job: 100.0 s (median" in proc.stdout
    assert "the toolkit's 50.0 s = 0.50 of it" in proc.stdout
    page = (tmp_path / "page" / "README.md").read_text()
    assert "do not edit by hand" in page and "- Load: 1-minute load average" in page
    assert "| fp32 |" in page and "the toolkit's 50.0 s = 0.50 of it" in page
    assert json.load(open(tmp_path / "page" / "results.json"))["reference_seconds"]["fp32"] == [50.0, 100.0]


def test_a_json_without_end_to_end_timings_is_one_line_and_exit_2(tmp_path):
    data = write_sts_root(str(tmp_path / "data"))
    old = tmp_path / "old.json"  # before --sts_precisions: raw.sts held one precision's lists
    old.write_text(json.dumps({"raw": {"sts": {"toolkit": [{"seconds": 1.0}], "sentence_transformers": []}}}))
    proc = run_module("bench.sts_floor", [f"--data_path={data}", f"--vs_json={old}",
                                          f"--results_dir={tmp_path / 'page'}"])
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "end-to-end STS timings per precision" in proc.stderr and "distinct sentences" not in proc.stdout


def test_missing_data_is_one_line_and_exit_2(tmp_path):
    proc = run_module("bench.sts_floor", [f"--data_path={tmp_path}", f"--results_dir={tmp_path / 'page'}"])
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
