"""The parts of bench/parity.py that need neither PyTorch nor training: the verdict rule, the results
page, the order of the examples handed to the reference side, and the tests the page names. The
benchmark itself runs outside the test suite."""

import json
import os
import re

import numpy as np
import pytest

from bench import parity
from common.data.sampling import StreamSampler, batches_dataset

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_equal_within_the_larger_seed_sd():
    c = parity.Comparison((50.0, 51.0), (49.5, 50.0))
    assert c.difference == pytest.approx(0.75)
    assert c.noise == pytest.approx(np.std([50.0, 51.0], ddof=1))  # 0.71, the larger of 0.71 and 0.35
    assert c.outcome == parity.DIFFERENT and c.verdict() == "**DIFFERENT** by +0.75 (noise 0.71)"
    c = parity.Comparison((50.0, 51.0), (50.0, 50.5))
    assert c.difference == pytest.approx(0.25) and c.outcome == parity.EQUAL and c.verdict() == "**EQUAL**"


def test_the_boundary_is_equal_and_the_se_is_reported():
    c = parity.Comparison((9.0, 10.0, 11.0), (9.0, 9.0, 9.0))  # d = 1 = sd of the toolkit's seeds
    assert (c.difference, c.noise, c.outcome) == (1.0, 1.0, parity.EQUAL)
    assert c.se == pytest.approx(np.sqrt(1 / 3))
    c = parity.Comparison((9.0, 10.0, 11.0), (8.99, 8.99, 8.99))
    assert c.outcome == parity.DIFFERENT


def test_one_seed_decides_nothing():
    assert parity.Comparison((50.0,), (40.0, 41.0)).outcome == parity.UNDECIDED
    assert parity.Comparison((50.0,), (50.0,)).verdict() == f"**{parity.UNDECIDED}**"


def _record(loaded: bool) -> dict:
    def seed(t, r):
        return {"toolkit": {"sts_avg": t, "stsb_dev": t + 10}, "reference": {"sts_avg": r, "stsb_dev": r + 10}}

    timings = {"0": {"toolkit": {"seconds": 30.0, "eval_seconds": 4.0, "loaded": loaded},
                     "reference": {"seconds": 60.0, "fit_seconds": 50.0}},
               "1": {"toolkit": {"seconds": 31.0, "eval_seconds": 5.0}, "reference": {"seconds": 61.0,
                                                                                      "fit_seconds": 51.0}}}
    losses = {"0": {"toolkit": {"first": 0.75, "last_tenth": 0.2}, "reference": {"first": 0.77, "last_tenth": 0.21}}}
    return {
        "settings": {"start": "<data_path>/starts/bert_mini_books", "steps": 500, "batch_size": 64, "seeds": "0,1",
                     "max_load": 0.5},
        "start": {"sts_avg": 50.77, "stsb_dev": 59.70},
        "rows": {
            "simcse_unsup": {"title": "SimCSE unsup", "notes": ["both sides pool by the mean, no MLP"],
                             "page_rows": [{"key": "simcse_unsup", "title": "SimCSE unsup (mean pooling)"}],
                             "scores": {"simcse_unsup": {"0": seed(55.0, 54.9), "1": seed(55.4, 55.3)}},
                             "losses": {"simcse_unsup": losses}, "timings": timings},
            "trans_encoder": {"title": "Trans-Encoder", "notes": [],
                              "page_rows": [{"key": "te_cross", "title": "Trans-Encoder cross"},
                                            {"key": "te_bi", "title": "Trans-Encoder bi", "timing_key": "te_cross"}],
                              "scores": {"te_cross": {"0": seed(70.0, 60.0), "1": seed(70.2, 60.1)},
                                         "te_bi": {"0": seed(52.0, 52.0)}},
                              "losses": {}, "timings": timings}},
        "pause": {"commit": "abc1234", "embed_model_error": "URLError: no network",
                  "cases": [{"name": "mixed batch", "official_loss": 1.5, "toolkit_loss": 1.5, "max_grad_diff": 0.0,
                             "max_grad": 0.2, "outcome": "EQUAL"}]},
    }


def test_page_states_the_rule_the_verdicts_and_the_checks(tmp_path):
    text = parity.write_results(_record(loaded=True), str(tmp_path), load=None)
    assert "do not edit by hand" in text and parity.RULE in text
    assert text.count("**LOADED**") == 1 and "(LOADED: 1 of 2)" in text
    lines = text.splitlines()
    unsup = [line for line in lines if line.startswith("| SimCSE unsup (mean pooling) | STS avg |")]
    assert unsup == ["| SimCSE unsup (mean pooling) | STS avg | 55.20 ± 0.28 | 55.10 ± 0.28 | +0.10 | 0.28 | 0.28 | "
                     "**EQUAL** |"]
    cross = [line for line in lines if line.startswith("| Trans-Encoder cross | STS-B dev |")]
    assert cross and "**DIFFERENT** by +10.05 (noise 0.14)" in cross[0]
    assert any(line.startswith("| Trans-Encoder bi | STS avg | 52.00 | 52.00 |") and parity.UNDECIDED in line
               for line in lines)
    assert "| SimCSE unsup (mean pooling) | 0.75 | 0.77 | 0.2 | 0.21 | 30 / 31 (LOADED: 1 of 2) | " \
           "4 / 5 (LOADED: 1 of 2) | 60 / 61 | 50 / 51 |" in text
    assert "STS avg 50.77, STS-B dev 59.70" in text
    for name, _ in parity.FORMULA_TESTS["pause"] + parity.FORMULA_TESTS["declutr"]:
        assert f"`{name}`" in text
    assert "URLError: no network" in text and "**EQUAL**" in text.split("## PAUSE")[1]
    assert json.loads((tmp_path / "results.json").read_text())["rows"]["simcse_unsup"]["title"] == "SimCSE unsup"
    assert (tmp_path / "README.md").read_text() == text


def test_an_idle_run_has_no_loaded_mark_and_a_missing_row_is_not_run(tmp_path):
    record = _record(loaded=False)
    record["rows"]["simcse_unsup"]["scores"] = {}
    del record["pause"]
    text = parity.write_results(record, str(tmp_path), load=None)
    assert "LOADED" not in text
    assert "| SimCSE unsup (mean pooling) | STS avg | n/a | n/a | | | | NOT RUN |" in text
    assert "Not run: give `--pause_code" in text


def test_the_named_formula_tests_exist():
    for name, _ in parity.FORMULA_TESTS["pause"] + parity.FORMULA_TESTS["declutr"]:
        path, test = name.split("::")
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            assert re.search(rf"^def {test}\(", f.read(), re.M), name


def test_the_reference_gets_the_toolkits_batches_in_order():
    column = np.array([f"sentence {i}" for i in range(10)], dtype=object)
    indices = parity.ordered_rows([column], batch_size=4, steps=5, seed=3)  # 20 rows: two passes and a bit
    stream = batches_dataset(StreamSampler([np.arange(10)], [1.0], 4, 3), [column])
    toolkit = [s.decode() for (batch,) in stream.take(5).as_numpy_iterator() for s in batch]
    assert [column[i] for i in indices] == toolkit
    assert sorted(indices[:10]) == list(range(10))  # the first pass is a permutation


@pytest.mark.parametrize("pairs, steps, expected", [(5749, 20, (1, 20)), (5749, 500, (6, 84)), (640, 10, (1, 10)),
                                                    (100, 10, (5, 2))])
def test_trans_encoder_phases_get_the_steps_asked_for_or_just_over(pairs, steps, expected):
    epochs, per_epoch = parity.te_schedule(pairs, 64, steps)
    assert (epochs, per_epoch) == expected
    assert steps <= epochs * per_epoch < steps + epochs and per_epoch <= -(-pairs // 64)


def test_settings_choose_the_folder():
    a = parity.settings_key("simcse_unsup", {"steps": 20, "lr": 3e-5})
    assert a == parity.settings_key("simcse_unsup", {"lr": 3e-5, "steps": 20}) and a.startswith("simcse_unsup-")
    assert a != parity.settings_key("simcse_unsup", {"steps": 21, "lr": 3e-5})


def test_the_curves_get_a_verdict_at_each_step_and_a_plot(tmp_path):
    record = _record(loaded=False)
    record["rows"]["simcse_unsup"]["curves"] = {
        "0": {"toolkit": [[10, 60.0], [20, 64.0]], "reference": [[10, 60.2], [20, 62.0]]},
        "1": {"toolkit": [[10, 61.0], [20, 64.2]], "reference": [[10, 60.6], [20, 62.2], [30, 63.0]]}}
    text = parity.write_results(record, str(tmp_path), load=None)
    section = text.split("## STS-B dev during training")[1].split("## Training losses")[0]
    assert "| 10 | 60.50 ± 0.71 | 60.40 ± 0.28 | +0.10 | 0.71 | 0.54 | **EQUAL** |" in section
    assert "| 20 | 64.10 ± 0.14 | 62.10 ± 0.14 | +2.00 | 0.14 | 0.14 | **DIFFERENT** by +2.00 (noise 0.14) |" \
        in section
    assert "| 30 | | | | | | one side only |" in section
    assert "EQUAL at 1 of 2 steps; the widest difference is +2.00 at step 20 (seed noise there 0.14)." in section
    assert "Trans-Encoder bi" not in section  # a row without curves has no table
    assert (tmp_path / "curves.png").stat().st_size > 1000


def test_no_curve_no_section_and_no_plot(tmp_path):
    text = parity.write_results(_record(loaded=False), str(tmp_path), load=None)
    assert "STS-B dev during training" not in text and not (tmp_path / "curves.png").exists()
    assert parity.curve_every(100, 10) == 10 and parity.curve_every(5, 10) == 1 and parity.curve_every(100, 0) == 0


def test_the_reference_snapshots_fall_after_every_kth_step_and_the_last_is_the_model(tmp_path):
    from bench import parity_worker

    saved = []
    snapshots = parity_worker.Snapshots(2, saved.append, str(tmp_path))
    for done in range(5):  # the loss is called before steps 1..5: after 0..4 optimizer steps
        snapshots(done)
    assert [os.path.basename(f) for f in saved] == ["step_2", "step_4"] and snapshots.steps == [2, 4]
    (tmp_path / "model").mkdir()
    snapshots.finish(5, str(tmp_path / "model"))  # 5 steps: no snapshot at the end
    assert snapshots.steps == [2, 4]
    snapshots = parity_worker.Snapshots(2, saved.append, str(tmp_path))
    snapshots.finish(6, str(tmp_path / "model"))
    link = tmp_path / "snapshots" / "step_6"
    assert snapshots.steps == [6] and link.is_symlink() and link.resolve() == (tmp_path / "model").resolve()
    assert parity_worker.Snapshots(0, saved.append, str(tmp_path)).steps == []


def test_the_official_records_hold_the_split_in_its_feature_layout(tmp_path):
    """What the official `make_dataset` parses (its data_utils.feature_spec), one folder per stream."""
    import tensorflow as tf

    from common.data.nli import NliPairs

    premises = [f"premise {i} ." for i in range(7)]
    hypotheses = [f"hypothesis {i} ." for i in range(7)]
    pairs = NliPairs(premises, hypotheses, np.array([0, 1, 2, 0, 1, 2, 0]))
    labels = np.array([0, -1, 2, -1, 1, -1, 0])  # the split: three hidden
    names = ("entailment", "neutral", "contradiction")
    folder = parity.write_official_records(str(tmp_path / "records"), pairs, labels, names)
    spec = {"gold_label": tf.io.FixedLenFeature([1], tf.string), "label": tf.io.FixedLenFeature([1], tf.int64),
            "match_sentence": tf.io.FixedLenFeature([1], tf.string),
            "sentence": tf.io.FixedLenFeature([1], tf.string), "uuid": tf.io.FixedLenFeature([1], tf.int64)}

    def read(stream):
        files = tf.io.gfile.glob(os.path.join(folder, stream, "*"))
        data = tf.data.TFRecordDataset(files, compression_type="GZIP").map(
            lambda x: tf.io.parse_single_example(x, spec))
        return [(int(r["uuid"][0]), int(r["label"][0]), r["sentence"][0].numpy().decode(),
                 r["match_sentence"][0].numpy().decode()) for r in data]

    assert [u for u, *_ in read("entailment")] == [0, 6] and read("neutral")[0][:2] == (4, 1)
    assert read("contradiction") == [(2, 2, "premise 2 .", "hypothesis 2 .")]
    assert [(u, y) for u, y, *_ in read("unl")] == [(1, -1), (3, -1), (5, -1)]
    assert sorted(u for u, *_ in read("eval")) == [0, 2, 4, 6]
    # Written once: a finished folder is reused as it is.
    assert parity.write_official_records(folder, pairs, np.zeros(7), names) == folder
    assert [u for u, *_ in read("unl")] == [1, 3, 5]


def test_rows_not_run_are_carried_with_the_header_that_measured_them(tmp_path):
    old = _record(loaded=False)
    parity.write_results(old, str(tmp_path), load=None)
    carried = parity.carried_rows(str(tmp_path), ["pause"])
    assert set(carried["rows"]) == {"simcse_unsup", "trans_encoder"} and "pause" not in carried
    where = carried["rows"]["simcse_unsup"]["carried"]
    assert where["Start"].startswith("<data_path>/starts/bert_mini_books") and "Written" in where
    assert set(parity.carried_rows(str(tmp_path), ["simcse_unsup"])["rows"]) == {"trans_encoder"}
    assert parity.carried_rows(str(tmp_path), ["simcse_unsup"])["pause"]["carried"] == where
    assert parity.carried_rows(str(tmp_path / "none"), ["pause"]) == {}
    new = {**old, "rows": {**carried["rows"]}}
    text = parity.write_results(new, str(tmp_path / "new"), load=None)
    assert "Rows carried from an earlier run" in text
    assert text.count("- SimCSE unsup, Trans-Encoder: command") == 1
