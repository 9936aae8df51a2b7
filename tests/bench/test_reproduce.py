"""The bookkeeping of bench/reproduce.py that needs no training: the busy time of a ladder run
over several invocations, and what each invocation records of the machine's load. The code that reads
its flags runs with them defined and parsed as `python -m bench.reproduce` would (tests/in_process.py;
its real entry point is run by tests/bench/test_modules.py)."""

import json
import os

from bench import harness
from in_process import parsed_flags, run_module


def test_busy_seconds_is_the_union_of_the_invocations():
    invocations = {"a": {"start": 0.0, "seconds": 10.0}, "b": {"start": 5.0, "seconds": 10.0},  # overlap: 15
                   "c": {"start": 100.0, "seconds": 5.0}}  # later session: +5
    assert harness.busy_seconds(invocations) == 20.0
    assert harness.busy_seconds({}) == 0.0


def test_other_cores_is_machine_busy_minus_own_per_second():
    ticks = os.sysconf("SC_CLK_TCK")
    assert harness.other_cores((0.0, 0, 0), (10.0, 20 * ticks, 20 * ticks)) == 0.0
    assert harness.other_cores((0.0, 0, 0), (10.0, 20 * ticks, 10 * ticks)) == 1.0


def test_a_save_records_the_invocation_and_its_other_processes_cpu(tmp_path):
    from bench import reproduce

    ladder = reproduce.Ladder(str(tmp_path), "unused")
    ladder.scores["raw (mean)"] = {"sts_avg": 1.0}
    ladder._save("raw (mean)")
    saved = json.load(open(tmp_path / "scores.json"))
    assert saved["raw (mean)"] == {"sts_avg": 1.0}
    (record,) = saved["_meta"]["invocations"].values()
    assert record["seconds"] >= 0 and record["max_load1"] >= 0
    assert record["other_cores"] >= 0.0  # Linux: /proc/stat is there


def _write_page(tmp_path, scores, percentages: str) -> None:
    """The ladder page of `scores` in tmp_path/page, written as bench.reproduce writes it (its flags parsed)."""
    from bench import reproduce

    (tmp_path / "scores.json").write_text(json.dumps(scores))
    with parsed_flags(reproduce.define_flags, [f"--percentages={percentages}"]):
        reproduce.write_results(json.load(open(tmp_path / "scores.json")), str(tmp_path), str(tmp_path / "page"),
                                "python -m bench.reproduce")


def test_the_results_page_has_floors_rules_and_a_verdict_per_claim(tmp_path):
    scores = {"floor: random init (mean)": {"sts_avg": 43.8, "stsb_dev": 55.6},
              "floor: TF-IDF": {"sts_avg": 60.0, "stsb_dev": 70.0, "fixed": True},
              "raw (mean)": {"sts_avg": 51.4, "stsb_dev": 61.5}, "raw (CLS)": {"sts_avg": 30.0, "stsb_dev": 40.0}}
    for seed, shift in enumerate((0.0, 0.4, -0.4)):
        scores[f"pause 5% seed {seed}"] = {"sts_avg": 60.0 + shift, "stsb_dev": 70.0, "train_seconds": 10.0}
        scores[f"supervised 5% seed {seed}"] = {"sts_avg": 55.0 + shift, "stsb_dev": 66.0, "train_seconds": 10.0}
        scores[f"supervised 100% seed {seed}"] = {"sts_avg": 70.0 + shift, "stsb_dev": 75.0, "train_seconds": 10.0}
    _write_page(tmp_path, scores, "5,100")
    page = (tmp_path / "page" / "README.md").read_text()
    assert "Verdict rules:" in page and "`python -m bench.reproduce`" in page
    assert "| floor: random init (mean) | fixed | 43.80 |" in page
    assert "| pause 5% | 3 | 60.00 ± 0.40 |" in page
    claims = {c["claim"]: c["outcome"] for c in json.load(open(tmp_path / "page" / "results.json"))["claims"]}
    assert claims["PAUSE above supervised-only at every label percentage <= 30 %"] == "HELD"
    assert claims["PAUSE at 5 % at most 2 points below supervised-only at 100 %"] == "DID NOT HOLD"
    assert claims["The pretrained start above the same architecture randomly initialised"] == "HELD"
    assert claims["The pretrained start above TF-IDF cosine"] == "DID NOT HOLD"
    assert claims["SimCSE sup above SimCSE unsup"] == "NOT RUN"
    assert (tmp_path / "page" / "sts_vs_labels.png").exists()


def test_tfidf_cosines_are_one_for_the_same_sentence_and_zero_without_shared_words():
    import numpy as np

    from bench import reproduce

    cosines = reproduce.tfidf_cosines(["a cat sat here", "dogs run"], ["a cat sat here", "the sun rose"])
    assert np.allclose(cosines, [1.0, 0.0]), cosines


def test_pilots_choose_the_lowest_heldout_loss_and_the_page_says_so(tmp_path):
    """The pilots pick on held-out masked-LM loss alone (the best STS-B dev pilot is not picked), and the
    page of a start pretrained here reports the held-out loss beside the unigram predictor's and the pilots."""
    from bench import reproduce

    root = str(tmp_path)
    losses = {0.0005: (6.2, 30.0), 0.001: (5.9, 20.0), 0.002: (6.5, None)}

    def run(name, method, settings, evaluator=None):
        assert method == "mlm" and settings["train_steps_per_epoch"] == 7 and settings["train_epochs"] == 1
        loss, dev = losses[settings["train_lr"]]
        out = os.path.join(root, "runs", name, "model", "1")
        os.makedirs(out, exist_ok=True)
        json.dump({"metrics": {"heldout_loss": loss, "heldout_accuracy": 0.1, "stsb_dev_spearman": dev}},
                  open(os.path.join(out, "config.json"), "w"))
        return out

    with parsed_flags(reproduce.define_flags, ["--percentages=5"]):
        ladder = reproduce.Ladder(root, "unused")
        ladder.run = run
        assert ladder.pilots({"model": "random_bert_tiny"}, ["0.0005", "0.001", "0.002"], 7) == 0.001
        scores = json.load(open(os.path.join(root, "scores.json")))
        scores["pretrain"] = {"train_seconds": 100.0, "settings": {"batch_size": 64, "train_epochs": 4,
                                                                    "train_steps_per_epoch": 10},
                              "metrics": {"heldout_loss": 4.8, "heldout_accuracy": 0.25, "heldout_unigram_loss": 6.9,
                                          "heldout_unigram_accuracy": 0.055, "stsb_dev_spearman": 60.5,
                                          "seconds": 90.0}}
        text = "\n".join(reproduce._start_lines(scores))
        del scores["pretrain"]["metrics"]["stsb_dev_spearman"]  # a start pretrained without the STS-B dev evaluator
        without = "\n".join(reproduce._start_lines(scores))
    assert json.load(open(tmp_path / "scores.json"))["_pilots"]["chosen_lr"] == 0.001
    assert "held-out masked-LM loss 4.800, accuracy 25.0 %" in text
    assert "unigram predictor on the same masks: loss 6.900, accuracy 5.5 %" in text
    assert "STS-B dev (mean pooling) 60.50" in text
    assert ("Peak learning rate 0.001, the lowest held-out loss of 7-step pilots "
            "(0.0005: 6.200 (STS-B dev 30.00)") in text
    assert "0.002: 6.500;" in text  # a pilot without an STS-B dev score
    assert "nan" not in without and "STS-B dev (mean pooling)" not in without and "accuracy 5.5 %. Peak" in without


def test_the_floor_of_a_start_pretrained_from_an_old_spelling_is_its_fresh_bert(tmp_path):
    """A pretrain run of an older version records --encoder=bert_tiny in its config.json."""
    start = tmp_path / "pretrain"
    (start / "weights").mkdir(parents=True)
    (start / "config.json").write_text(json.dumps({"encoder": {"spec": "bert_tiny"}}))
    from bench import reproduce

    assert [reproduce.start_architecture(str(start)), reproduce.start_architecture("bert_mini")] == [
        "random_bert_tiny", "random_bert_mini"]


def test_a_learning_rate_sweep_picks_the_best_dev_run_and_seed_0_is_that_run(tmp_path):
    """SimCSE's learning rate is chosen on STS-B dev (its paper's protocol): the sweep picks the run whose
    published step scored best, the seed-0 row takes that run's record (not a stale score of another run), and
    the page lists what was tried."""
    from bench import reproduce

    ladder = reproduce.Ladder(str(tmp_path), "unused")
    dev = {3e-5: (44.0, 500), 1e-4: (46.5, 125), 3e-4: (45.0, 250)}
    for lr, (score, step) in dev.items():
        name = f"simcse unsup lr {lr:g} seed 0"
        model = tmp_path / "runs" / name / "model" / "1"
        model.mkdir(parents=True)
        (model / "config.json").write_text(json.dumps(
            {"selection": {"metric": "stsb_dev_spearman", "score": score, "step": step}}))
        ladder.scores[name] = {"run_id": f"id {lr:g}", "train_seconds": 10.0, "metrics": {}, "settings": {}}
        ladder._save(name)  # as a run that trained saves its record

    def train(lr, row=None):
        return ladder.run(f"simcse unsup lr {lr:g} seed 0", "simcse", {}, row=row)

    assert ladder.choose_on_dev("simcse unsup", list(dev), train) == 1e-4
    ladder.scores["simcse unsup seed 0"] = {"sts_avg": 1.0, "stsb_dev": 2.0}  # scored from an earlier run
    ladder._save("simcse unsup seed 0")
    train(1e-4, row="simcse unsup seed 0")
    saved = json.load(open(tmp_path / "scores.json"))
    assert saved["simcse unsup seed 0"] == {"run_id": "id 0.0001", "train_seconds": 10.0, "metrics": {},
                                            "settings": {}, "run": "simcse unsup lr 0.0001 seed 0"}
    assert saved["_lr_sweeps"]["simcse unsup"]["chosen_lr"] == 1e-4
    (line,) = reproduce._sweep_lines(saved)
    assert line == ("simcse unsup: learning rate 0.0001 for every seed, the best STS-B dev of seed-0 runs at "
                    "3e-05 (44.00, step 500), 0.0001 (46.50, step 125), 0.0003 (45.00, step 250) "
                    "(STS-B dev of each run's published step).")
    (tmp_path / "runs" / "simcse unsup lr 3e-05 seed 0" / "model" / "1" / "config.json").write_text("{}")
    import pytest

    with pytest.raises(ValueError, match="no STS-B dev selection"):
        ladder.choose_on_dev("simcse unsup", [3e-5], train)


def test_a_simcse_claim_on_a_collapsed_run_is_not_testable(tmp_path):
    """A sup SimCSE run whose training loss ended at ln(2 x batch) collapsed: the claim comparing it says so
    instead of DID NOT HOLD; the runs' losses and batches come from their own config.json."""
    from bench import reproduce

    scores = {"raw (mean)": {"sts_avg": 50.0, "stsb_dev": 60.0}}
    for seed in range(3):
        for mode, loss, sts in (("unsup", 0.1, 52.0 + seed), ("sup", 4.86 - 0.01 * seed, 20.0 + seed)):
            name = f"simcse {mode} seed {seed}"
            run = f"simcse {mode} lr 0.0003 seed {seed}"
            model = tmp_path / "runs" / run / "model" / "id"
            model.mkdir(parents=True)
            (model / "config.json").write_text(json.dumps({
                "config": {"run": {"batch_size": 64}, "simcse": {"mode": mode}}, "metrics": {"loss": loss}}))
            scores[name] = {"sts_avg": sts, "stsb_dev": sts, "run_id": "id", "run": run}
    collapsed = reproduce.collapsed_runs(scores, str(tmp_path))
    assert list(collapsed) == ["simcse sup"] and len(collapsed["simcse sup"]) == 3
    found = {v.claim: v for v in reproduce.claims(scores, ["5"], collapsed)}
    sup = found["SimCSE sup above SimCSE unsup"]
    assert (sup.outcome == "NOT TESTABLE HERE"
            and "collapsed: simcse sup seed 0: final training loss 4.860" in sup.detail)
    assert found["SimCSE unsup at least 5 points above the raw model"].outcome == "DID NOT HOLD"
    outcomes = {v.claim: v.outcome for v in reproduce.claims(scores, ["5"])}
    assert outcomes["SimCSE sup above SimCSE unsup"] == "DID NOT HOLD"


def test_learning_rate_flags_take_positive_numbers_only():
    import pytest

    from bench import reproduce
    from common.errors import UserError

    assert reproduce.learning_rates("simcse_lrs", ["3e-5", "1e-4"]) == [3e-5, 1e-4]
    assert reproduce.learning_rates("simcse_lrs", []) == []
    for bad in (["abc"], ["0"], ["1e-4", "-1"]):
        with pytest.raises(UserError, match="expected positive learning rates"):
            reproduce.learning_rates("simcse_lrs", bad)


def test_declutr_variants_train_in_the_order_given_and_unknown_names_are_refused():
    import pytest

    from bench import reproduce
    from common.errors import UserError

    assert reproduce.declutr_variants(["mlm_only", "contrastive_mlm"]) == ["mlm_only", "contrastive_mlm"]
    assert [(row, run) for row, run, _ in reproduce.declutr_rows(["contrastive_only", "contrastive_mlm"], 2, 2000)] == [
        ("declutr contrastive only seed 2", "declutr contrastive only 2000 steps seed 2"),
        ("declutr contrastive + MLM seed 2", "declutr contrastive + MLM 2000 steps seed 2")]
    assert [extra for _, _, extra in reproduce.declutr_rows(list(reproduce.DECLUTR_VARIANTS), 0, 10)] == [
        {}, {"mlm": False}, {"contrastive": False}]
    for bad in (["contrastive"], ["mlm_only", "mlm_only"], []):
        with pytest.raises(UserError, match=r"--declutr_variants=.*: expected some of contrastive_mlm,"
                                            r"contrastive_only,mlm_only, each once"):
            reproduce.declutr_variants(bad)


def test_a_missing_start_is_one_line_and_exit_2_and_leaves_no_artifacts_directory(tmp_path):
    result = run_module("bench.reproduce", [f"--start={tmp_path / 'missing'}", "--stages=",
                                            f"--artifacts_dir={tmp_path / 'ladder'}",
                                            f"--results_dir={tmp_path / 'page'}"])
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().count("\n") == 0 and "no such directory" in result.stderr
    assert not (tmp_path / "ladder").exists() and not (tmp_path / "page").exists()


def test_an_invocation_records_its_time_while_a_long_run_saves_nothing(tmp_path):
    """keep_time writes this invocation's interval on its own, beside the rows another save wrote, so a ladder
    killed in the middle of a pretraining still counts the time it ran."""
    import time

    from bench import reproduce

    ladder = reproduce.Ladder(str(tmp_path), "unused")
    ladder.scores["raw (mean)"] = {"sts_avg": 1.0}
    ladder._save("raw (mean)")
    ladder.keep_time(every=0.05)
    time.sleep(0.6)
    saved = json.load(open(tmp_path / "scores.json"))
    (record,) = saved["_meta"]["invocations"].values()
    assert record["seconds"] >= 0.5 and saved["raw (mean)"] == {"sts_avg": 1.0}


PARITY = {"settings": {"start": "<data_path>/starts/bert_mini_books"},
          "rows": {"simcse_unsup": {"title": "SimCSE unsup (mean pooling)",
                                    "page_rows": [{"key": "simcse_unsup", "title": "SimCSE unsup (mean pooling)"}],
                                    "scores": {"simcse_unsup": {
                                        "0": {"toolkit": {"sts_avg": 58.0}, "reference": {"sts_avg": 58.1}},
                                        "1": {"toolkit": {"sts_avg": 58.3}, "reference": {"sts_avg": 57.9}}}}}},
          "pause": {"cases": [{"name": "mixed batch", "outcome": "EQUAL"},
                              {"name": "all-unlabelled batch", "outcome": "DIFFERENT"}]}}


def test_each_claim_line_carries_the_parity_row_of_its_method(tmp_path):
    from bench import reproduce, verdicts

    note = reproduce.parity_note("SimCSE unsup at least 5 points above the raw model", PARITY, "../parity/README.md")
    assert note == (" Training parity: [SimCSE unsup (mean pooling)](../parity/README.md#simcse-unsup-mean-pooling) "
                    "from bert_mini_books: STS avg 58.15 ± 0.21 (toolkit) vs 58.00 ± 0.14 (reference), EQUAL.")
    assert "equal to the official code's on mixed batch (all-unlabelled batch: DIFFERENT, see the row)" in \
        reproduce.parity_note("PAUSE above supervised-only", PARITY, "p.md")
    assert "no reference trainer exists" in reproduce.parity_note("DeCLUTR (contrastive + MLM) above", PARITY, "p.md")
    assert reproduce.parity_note("The pretrained start above TF-IDF cosine", PARITY, "p.md") == ""
    assert reproduce.parity_note("SimCSE sup above SimCSE unsup", {}, "p.md") == ""  # parity not run yet
    # A page whose runs are gone gets its claim lines linked from its results.json, the rest kept.
    found = [verdicts.Verdict("SimCSE unsup at least 5 points above the raw model", verdicts.NOT_HELD, "47 vs 53")]
    page = ["# Reproduction ladder: results", "", "Written by x", "", "- Command: `c`", "- Written: then", "",
            "table", "", found[0].line(), "", "tail"]
    (tmp_path / "README.md").write_text("\n".join(page))
    (tmp_path / "results.json").write_text(json.dumps({"claims": [vars(v) for v in found]}))
    parity = tmp_path / "parity.json"
    parity.write_text(json.dumps(PARITY))
    reproduce.PARITY_RESULTS, saved = str(parity), reproduce.PARITY_RESULTS
    try:
        reproduce.relink_claims(str(tmp_path), "python -m bench.reproduce --relink_claims")
    finally:
        reproduce.PARITY_RESULTS = saved
    lines = (tmp_path / "README.md").read_text().split("\n")
    assert lines[6].startswith("- Claim lines linked to training parity by `python -m bench.reproduce")
    assert lines[10] == found[0].line() + note and lines[-1] == "tail" and lines[:6] == page[:6]


def test_a_probe_times_the_steps_of_a_row_and_the_page_says_what_rows_not_run_would_need(tmp_path):
    from bench import reproduce
    from common.training import registry

    ladder = reproduce.Ladder(str(tmp_path / "ladder"), "unused")
    smoke = registry.get("simcse").smoke(str(tmp_path / "data"))
    ladder.data_path = smoke.pop("data_path")
    per_step = ladder.probe("simcse unsup", "simcse", smoke, steps=5)
    assert set(per_step) == {""} and 0 < per_step[""] < 30  # one phase; steps 2-5 timed
    assert ladder.probe("simcse unsup", "simcse", {}, steps=5) == per_step  # cached: nothing trained
    assert json.load(open(tmp_path / "ladder" / "scores.json"))["_probes"]["simcse unsup"]["steps"] == 5
    scores = {"_not_run": {"pause": dict(rows=["pause 5% seed 0", "pause 5% seed 1"], steps=200, cycles=1,
                                         seconds_per_step={"": 0.9}, seconds_per_row=180.0, probe_steps=30),
                           "trans_encoder": dict(rows=["trans_encoder seed 0"], steps={"cross": 300, "bi": 200},
                                                 cycles=2, budget="2 cycles, 1 cross-encoder and 2 bi-encoder epochs",
                                                 seconds_per_step={"cycle1_cross_a": 1.0, "cycle1_bi_a": 0.5},
                                                 seconds_per_row=800.0, probe_steps=30)}}
    lines = reproduce.not_run_lines(scores)
    assert lines[0] == "## Not run yet"
    assert "- pause: 2 rows (pause 5% seed 0, pause 5% seed 1), each 200 steps at training 0.9 s per step " \
           "(measured over 30 steps): about 0.1 h of training in all." in lines
    # Each kind of Trans-Encoder phase at its own steps and seconds per step: 2 x (300 x 1 + 200 x 0.5) s.
    assert "- trans_encoder: 1 rows (trans_encoder seed 0), each 2 cycles of 300 cross-encoder and 200 " \
           "bi-encoder steps at cycle1_cross_a 1 s, cycle1_bi_a 0.5 s per step (measured over 30 steps): about " \
           "0.2 h of training in all." in lines
    assert reproduce.row_seconds(scores["_not_run"]["trans_encoder"], {"cross": 300, "bi": 200}) == 800.0
    assert "In all: about 0.3 h of training on this machine." in lines
    # A probe of another PAUSE budget is left to the page's own list of rows at another budget.
    assert not any(line.startswith("- pause:") for line in reproduce.not_run_lines(scores, {"pause": 2000}))
    # Another family is accounted at this invocation's budget, not at the probe's steps.
    assert any(line.startswith("- simcse unsup: 1 rows") and line.endswith("about 0.2 h of training in all.")
               for line in reproduce.not_run_lines(
                   {"_not_run": {"simcse unsup": dict(scores["_not_run"]["pause"], rows=["simcse unsup seed 0"])}},
                   {"simcse unsup": 800}))
    # A Trans-Encoder probe of another budget is left out (its phases' steps are known only to a probe of this
    # one), and a row scored at another budget is still planned at this one.
    te_budget = scores["_not_run"]["trans_encoder"]["budget"]
    assert not any("trans_encoder" in line for line in reproduce.not_run_lines(scores, {"trans_encoder": "other"}))
    old_run = {"trans_encoder seed 0": {"run": "trans_encoder 2 cycles of 500 steps seed 0"},
               "trans_encoder bi seed 0": {"sts_avg": 40.0}}
    assert any(line.startswith("- trans_encoder: 1 rows") for line in reproduce.not_run_lines(
        {**scores, **old_run}, {"trans_encoder": te_budget}))
    assert reproduce.not_run_lines({}) == []
    # Rows scored since the probe leave the account; a family all scored leaves it whole.
    scores["pause 5% seed 1"] = {"sts_avg": 50.0}
    scores["trans_encoder bi seed 0"] = {"sts_avg": 40.0}
    lines = reproduce.not_run_lines(scores)
    assert "- pause: 1 rows (pause 5% seed 0), each 200 steps at training 0.9 s per step (measured over 30 " \
           "steps): about 0.1 h of training in all." in lines
    assert not any("trans_encoder" in line for line in lines)
    scores["pause 5% seed 0"] = {"sts_avg": 50.0}
    assert reproduce.not_run_lines(scores) == []


def test_not_run_lines_state_what_trained_rows_of_the_family_took():
    """Beside the probe's estimate (steps only), the page states what the rows of a family already trained at
    this budget took here, evaluations included: one row per run, a resumed run at its total, other budgets out."""
    from bench import reproduce

    budget = "2 cycles, 1 cross-encoder and 2 bi-encoder epochs"
    te_probe = dict(rows=["trans_encoder seed 2"], steps={"cross": 300, "bi": 200}, cycles=2, budget=budget,
                    seconds_per_step={"cycle1_cross_a": 1.0, "cycle1_bi_a": 0.5}, seconds_per_row=800.0,
                    probe_steps=30)
    pause_probe = dict(rows=["pause 5% seed 2"], steps=200, cycles=1, seconds_per_step={"": 0.9},
                       seconds_per_row=180.0, probe_steps=30)
    trained = {
        # One run under its row's name and its run's name: counted once, at the row's budget.
        "trans_encoder seed 1": {"run": reproduce.te_run(budget, 1), "run_id": "r1", "train_seconds": 3600.0,
                                 "metrics": {"step": 10}},
        reproduce.te_run(budget, 1): {"run": reproduce.te_run(budget, 1), "run_id": "r1", "train_seconds": 3600.0},
        "trans_encoder bi seed 1": {"sts_avg": 50.0, "model_id": "r1"},
        # A run of another budget is not this budget's measure.
        "trans_encoder seed 0": {"run": "trans_encoder 2 cycles of 500 steps seed 0", "run_id": "r0",
                                 "train_seconds": 60.0},
        "trans_encoder bi seed 0": {"sts_avg": 40.0, "model_id": "r0"},
        # A resumed run counts all its pieces (the loop's total), not its last piece.
        "pause 5% seed 0": {"sts_avg": 50.0, "run_id": "p0", "train_seconds": 10.0, "metrics": {"seconds": 1200.0},
                            "settings": {"train_epochs": 1, "train_steps_per_epoch": 200}},
        "pause 30% seed 0": {"sts_avg": 50.0, "run_id": "p1", "train_seconds": 1800.0,
                             "settings": {"train_epochs": 1, "train_steps_per_epoch": 200}},
        "pause 30% seed 1": {"sts_avg": 50.0, "run_id": "p2", "train_seconds": 9.0,
                             "settings": {"train_epochs": 1, "train_steps_per_epoch": 100}},  # another budget
        "pause 5% seed 1": {"run_id": "p3", "train_seconds": 5000.0},  # not scored: not a measure yet
    }
    assert sorted(reproduce.trained_seconds(trained, "trans_encoder", budget)) == [3600.0]
    assert sorted(reproduce.trained_seconds(trained, "pause", 200)) == [1200.0, 1800.0]
    assert reproduce.run_seconds(trained["pause 5% seed 0"]) == 1200.0
    assert reproduce.run_seconds({"sts_avg": 1.0}) is None
    lines = reproduce.not_run_lines({**trained, "_not_run": {"trans_encoder": te_probe, "pause": pause_probe}},
                                    {"trans_encoder": budget, "pause": 200})
    te_line = next(line for line in lines if line.startswith("- trans_encoder:"))
    assert te_line.endswith("about 0.2 h of training in all. The row of this family already trained at this "
                            "budget took 60 minutes, evaluations during training included: about 1.0 h for these.")
    pause_line = next(line for line in lines if line.startswith("- pause:"))
    assert pause_line.endswith("The 2 rows of this family already trained at this budget took a median of 25 "
                               "minutes each, evaluations during training included: about 0.4 h for these.")
    assert "In all: about 0.3 h of training on this machine; about 1.4 h at the time the rows already trained " \
           "took." in lines
    # A family none of whose rows is trained yet keeps the probe's estimate alone, and so does the total.
    lines = reproduce.not_run_lines({"_not_run": {"pause": pause_probe}}, {"pause": 200})
    assert next(line for line in lines if line.startswith("- pause:")).endswith("of training in all.")
    assert "In all: about 0.1 h of training on this machine." in lines


def test_a_page_rewrite_of_no_seconds_does_not_set_the_other_cores():
    from bench import reproduce

    invocations = [dict(seconds=3900.0, other_cores=1.08), dict(seconds=0.4, other_cores=4.3),
                   dict(seconds=6462.0, other_cores=0.02)]
    assert reproduce.other_cores_clause(invocations) == ("; CPU used by other processes, averaged over each "
                                                         "invocation of a minute or more: at most 1.08 cores")
    assert reproduce.other_cores_clause([dict(seconds=0.4, other_cores=4.3)]) == ""
    assert reproduce.other_cores_clause([dict(seconds=100.0)]) == ""


def test_a_fresh_artifacts_root_starts_from_the_pages_scores_and_skips_what_they_finished(tmp_path):
    from bench import reproduce

    page = tmp_path / "page"
    page.mkdir()
    carried = {"pause 5% seed 0": {"sts_avg": 55.0, "run": "pause 5% 2000 steps seed 0"},
               "supervised 5% seed 0": {"sts_avg": 54.0, "run": "supervised 5% seed 0"}}  # an older budget's run
    (page / "results.json").write_text(json.dumps({"claims": [], "scores": carried}))
    ladder = reproduce.Ladder(str(tmp_path / "artifacts"), "unused", carry_from=str(page / "results.json"))
    assert ladder.scores == carried and (tmp_path / "artifacts" / "scores.json").exists()
    assert ladder.finished("pause 5% seed 0", "pause 5% 2000 steps seed 0")
    assert not ladder.finished("supervised 5% seed 0", "supervised 5% 2000 steps seed 0")  # trained again
    # An artifacts root with scores of its own keeps them: the page is read only by a fresh one.
    (page / "results.json").write_text(json.dumps({"claims": [], "scores": {}}))
    assert reproduce.Ladder(str(tmp_path / "artifacts"), "unused", carry_from=str(page / "results.json")).scores \
        == carried


def _curves(best_at: int, seed: int):
    steps = [250, 500, 750, 1000]
    dev = [60.0 + (5.0 if s == best_at else 0.0) + seed for s in steps]
    return {"stsb_dev": [[s, v] for s, v in zip(steps, dev)],
            "accuracy": [[s, min(1.0, s / 600)] for s in range(25, 1001, 25)],
            "pu_weight": [[s, (s / 1000) ** 3] for s in range(25, 1001, 25)]}


def test_the_pause_family_page_draws_its_dev_curves_and_names_each_rows_best_step(tmp_path):
    scores = {"raw (mean)": {"sts_avg": 50.0, "stsb_dev": 59.0}}
    for seed in range(3):
        for row, best in (("pause 5%", 250), ("supervised 5%", 500), ("pause 5% PU weight 1 from the start", 250)):
            scores[f"{row} seed {seed}"] = {"sts_avg": 55.0 + seed, "stsb_dev": 65.0 + seed, "train_seconds": 1200.0,
                                            "settings": {"seed": seed, "train_epochs": 4, "train_steps_per_epoch": 500},
                                            "curves": _curves(best, seed)}
        scores[f"supervised 100% seed {seed}"] = {"sts_avg": 52.0, "stsb_dev": 60.0, "train_seconds": 90.0,
                                                  "settings": {"train_epochs": 4, "train_steps_per_epoch": 50}}
    _write_page(tmp_path, scores, "5,100")
    page = (tmp_path / "page" / "README.md").read_text()
    assert "| pause 5% | 3 | 250, 250, 250 | 66.00 ± 1.00 | 61.00 ± 1.00 | 600, 600, 600 |" in page
    assert "| supervised 5% | 3 | 500, 500, 500 | 66.00 ± 1.00 | 61.00 ± 1.00 | 600, 600, 600 |" in page
    assert "- pause 5% PU weight 1 from the start above supervised 5%: **NOT TESTABLE HERE**" in page
    assert (tmp_path / "page" / "pause_curves.png").exists() and "![pause_curves.png](pause_curves.png)" in page
    # A row of an older budget is listed, not judged; results.json still holds it.
    assert "| supervised 100%" not in page and "- supervised 100% seed 2 (200 steps)" in page
    assert "trained at 2000 steps of 64 pairs (about 20 minutes each on this machine" in page
    assert "supervised 100% seed 0" in json.load(open(tmp_path / "page" / "results.json"))["scores"]


def test_simcse_and_declutr_rows_show_whether_their_budget_let_the_dev_curve_peak(tmp_path):
    from bench.reproduce import curve_shape

    assert curve_shape([250, 500, 750], [60.0, 64.0, 63.0]) == "peaked at 500"
    assert curve_shape([250, 500, 750], [60.0, 63.8, 64.0]) == "plateau"
    assert curve_shape([250, 500, 750], [60.0, 62.0, 64.0]) == "still rising"
    assert curve_shape([250, 500, 750], [64.0, 62.0, 63.0]) == "peaked at 250, its first evaluation"
    # Beside the start's STS-B dev in the same read-out, a curve best at its first evaluation says whether it rose.
    assert curve_shape([250, 500], [64.0, 62.0], 60.0) == "peaked at 250, its first evaluation, above the start's 60.00"
    assert curve_shape([250, 500], [59.0, 58.0], 60.0) == ("peaked at 250, its first evaluation, not above the "
                                                            "start's 60.00")
    assert curve_shape([250, 500, 750], [60.0, 64.0, 63.0], 61.0) == "peaked at 500"
    scores = {"raw (mean)": {"sts_avg": 50.0, "stsb_dev": 59.0}}
    for seed in range(3):
        rising = [[s, 55.0 + s / 250 + seed] for s in (250, 500, 750, 1000)]
        scores[f"declutr contrastive + MLM seed {seed}"] = {"sts_avg": 52.0, "stsb_dev": 60.0,
                                                            "curves": {"stsb_dev": rising}}
        scores[f"simcse unsup seed {seed}"] = {"sts_avg": 57.0, "stsb_dev": 63.0, "curves": _curves(500, seed)}
        # Best at its first evaluation: a DeCLUTR row (read out by the mean, as the start) says it rose from it.
        scores[f"declutr MLM only seed {seed}"] = {"sts_avg": 51.0, "stsb_dev": 61.0,
                                                   "curves": {"stsb_dev": [[250, 61.0 - seed], [500, 57.0]]}}
    _write_page(tmp_path, scores, "5")
    page = (tmp_path / "page" / "README.md").read_text()
    assert ("| declutr MLM only | 3 | 250, 250, 250 | 60.00 ± 1.00 | 57.00 ± 0.00 | peaked at 250, its first "
            "evaluation, above the start's 59.00; peaked at 250, its first evaluation, above the start's 59.00; "
            "peaked at 250, its first evaluation, not above the start's 59.00 |") in page
    assert "## SimCSE and DeCLUTR over training" in page
    assert "`dev_curves.png` below draws them, beside the start's STS-B dev (raw (mean), 59.00, dashed)." in page
    assert ("| simcse unsup | 3 | 500, 500, 500 | 66.00 ± 1.00 | 61.00 ± 1.00 | "
            "peaked at 500; peaked at 500; peaked at 500 |") in page
    assert ("| declutr contrastive + MLM | 3 | 1000, 1000, 1000 | 60.00 ± 1.00 | 60.00 ± 1.00 | "
            "still rising; still rising; still rising |") in page
    assert (tmp_path / "page" / "dev_curves.png").exists() and "![dev_curves.png](dev_curves.png)" in page
    assert "Rows with no curve yet" not in page
    # Rows trained before the ladder evaluated while training are named, their read-outs (no run) not.
    for seed in (1, 2):
        scores[f"simcse unsup seed {seed}"] = {"sts_avg": 57.0, "stsb_dev": 63.0, "run": f"simcse unsup seed {seed}"}
        scores[f"simcse sup seed {seed}"] = {"sts_avg": 70.0, "stsb_dev": 75.0, "run": f"simcse sup seed {seed}"}
        scores[f"simcse unsup (mean pooling) seed {seed}"] = {"sts_avg": 57.0, "stsb_dev": 63.0, "model_id": "U"}
    _write_page(tmp_path, scores, "5")
    page = (tmp_path / "page" / "README.md").read_text()
    assert ("Rows with no curve yet (trained before the ladder evaluated STS-B dev while training; their budget is "
            "not shown until trained again, which reproduces them): simcse sup seeds 1, 2; simcse unsup seeds 1, "
            "2.") in page  # in the results table's order
    assert "| simcse unsup | 1 | 500 |" in page  # seed 0 keeps its curve


def test_a_page_rewritten_without_a_rows_event_files_draws_its_recorded_curves_or_keeps_the_figure(tmp_path):
    from bench import reproduce

    out = tmp_path / "page"
    out.mkdir()
    # Trained on another machine: no event files here, the record keeps its loss curve.
    scores = {"pause 5% seed 0": {"sts_avg": 55.0, "curves": {"loss": [[25, 1.2], [50, 0.9], [75, 0.7]]}}}
    assert reproduce.plot(scores, str(tmp_path / "artifacts"), str(out), ["5"]) == [str(out / "training_curves.png")]
    drawn = (out / "training_curves.png").read_bytes()
    # A row with neither event files nor a recorded curve: the figure drawn where they were stays as it is.
    (out / "training_curves.png").write_bytes(b"drawn where the event files were")
    scores["simcse unsup seed 0"] = {"sts_avg": 57.0}
    assert str(out / "training_curves.png") in reproduce.plot(scores, str(tmp_path / "artifacts"), str(out), ["5"])
    assert (out / "training_curves.png").read_bytes() == b"drawn where the event files were"
    # Without an earlier figure, the panels it can draw are drawn.
    (out / "training_curves.png").unlink()
    reproduce.plot(scores, str(tmp_path / "artifacts"), str(out), ["5"])
    assert (out / "training_curves.png").read_bytes()[:8] == drawn[:8] == b"\x89PNG\r\n\x1a\n"


def _log_dev(log_dir, points):
    import tensorflow as tf

    writer = tf.summary.create_file_writer(str(log_dir))
    with writer.as_default():
        for step, value in points:
            tf.summary.scalar("eval/stsb_dev_spearman", value, step=step)
    writer.close()


def test_a_trans_encoder_row_records_each_phases_dev_curve_from_its_event_files(tmp_path):
    from bench.reproduce import Ladder

    run = tmp_path / "runs" / "trans_encoder 1 cycles of 300 steps seed 0"
    _log_dev(run / "log" / "a" / "cycle1_cross_a", [(100, 70.0), (200, 72.0), (300, 71.0)])
    _log_dev(run / "log" / "a" / "cycle1_bi_a", [(100, 60.0), (200, 61.0)])
    # The resumed piece of the run logs the bi phase's step 200 again, then its end.
    _log_dev(run / "log" / "b" / "cycle1_bi_a", [(200, 61.5), (300, 61.6)])
    phases = [{"phase": "cycle1_cross_a", "cycle": 1, "kind": "cross"},
              {"phase": "cycle1_bi_a", "cycle": 1, "kind": "bi"}]
    ladder = Ladder(str(tmp_path), str(tmp_path))
    ladder.scores["trans_encoder seed 0"] = {"run": run.name, "phases": phases}
    assert ladder.record_phase_curves("trans_encoder seed 0")
    saved = json.load(open(tmp_path / "scores.json"))["trans_encoder seed 0"]["phases"]
    assert [p["stsb_dev_curve"] for p in saved] == [[[100, 70.0], [200, 72.0], [300, 71.0]],
                                                    [[100, 60.0], [200, 61.5], [300, 61.6]]]
    assert not ladder.record_phase_curves("trans_encoder seed 0")  # recorded once
    # A row trained on another machine (no event files here) keeps its records as they are.
    ladder.scores["trans_encoder seed 1"] = {"run": "elsewhere", "phases": [{"phase": "cycle1_cross_a"}]}
    assert not ladder.record_phase_curves("trans_encoder seed 1")
    assert "stsb_dev_curve" not in ladder.scores["trans_encoder seed 1"]["phases"][0]


def test_trans_encoder_phases_show_whether_their_budget_let_the_dev_curve_peak(tmp_path):
    scores = {"raw (mean)": {"sts_avg": 50.0, "stsb_dev": 59.0}}
    for seed in range(3):
        cross = [[100, 70.0 + seed], [200, 72.0 + seed], [300, 71.0 + seed]]
        bi = [[100, 60.0 + seed], [200, 61.0 + seed], [300, 61.2 + seed]]
        scores[f"trans_encoder seed {seed}"] = {"phases": [
            {"phase": "cycle1_cross_a", "cycle": 1, "kind": "cross", "label_std": 0.2, "stsb_dev_curve": cross},
            {"phase": "cycle1_bi_a", "cycle": 1, "kind": "bi", "label_std": 0.2, "stsb_dev_curve": bi}]}
        scores[f"trans_encoder bi seed {seed}"] = {"sts_avg": 55.0, "stsb_dev": 61.0}
    _write_page(tmp_path, scores, "5")
    page = (tmp_path / "page" / "README.md").read_text()
    assert "## Trans-Encoder within each phase" in page and "every 100 steps" in page
    assert ("| cycle1_cross_a | 3 | 200, 200, 200 | 73.00 ± 1.00 | 72.00 ± 1.00 | "
            "peaked at 200; peaked at 200; peaked at 200 |") in page
    assert "| cycle1_bi_a | 3 | 300, 300, 300 | 62.20 ± 1.00 | 62.20 ± 1.00 | plateau; plateau; plateau |" in page
    assert page.index("| cycle1_cross_a |") < page.index("| cycle1_bi_a |")  # the order they ran in
    assert (tmp_path / "page" / "dev_curves.png").exists() and "![dev_curves.png](dev_curves.png)" in page


def test_trans_encoder_rows_of_another_budget_are_listed_apart_not_judged(tmp_path):
    """A page carried from an earlier ladder holds a Trans-Encoder seed trained at the old budget: it leaves the
    table, the claims and the phase table, and is listed with its run's name, until trained at this budget."""
    from bench import reproduce

    scores = {"raw (mean)": {"sts_avg": 50.0, "stsb_dev": 59.0}}
    for seed in range(3):
        scores[f"simcse unsup seed {seed}"] = {"sts_avg": 55.0 + seed, "stsb_dev": 60.0}
    budgets = {0: "2 cycles of 500 steps", 1: "2 cycles, 1 cross-encoder and 3 bi-encoder epochs"}
    for seed, budget in budgets.items():
        scores[f"trans_encoder seed {seed}"] = {"run": f"trans_encoder {budget} seed {seed}", "run_id": f"T{seed}",
                                                "phases": [{"phase": "cycle1_bi_a", "cycle": 1, "kind": "bi",
                                                            "label_std": 0.2,
                                                            "stsb_dev_curve": [[100, 60.0 + 10 * seed]]}]}
        scores[f"trans_encoder bi seed {seed}"] = {"model_id": f"T{seed}", "sts_avg": 40.0 + 10 * seed,
                                                   "stsb_dev": 45.0}
        scores[f"trans_encoder cross seed {seed}"] = {"model_id": f"T{seed}", "sts_avg": 20.0, "stsb_dev": 30.0}
    with parsed_flags(reproduce.define_flags, []):
        assert reproduce.budget_of_te() == budgets[1]
        kept, other = reproduce.at_budget(scores, 2000, reproduce.budget_of_te())
    assert other == [("trans_encoder bi seed 0", "trans_encoder 2 cycles of 500 steps seed 0"),
                     ("trans_encoder cross seed 0", "trans_encoder 2 cycles of 500 steps seed 0")]
    assert not any(name.endswith("seed 0") and name.startswith("trans_encoder") for name in kept)
    assert reproduce.at_budget(scores, 2000)[1] == []  # without a budget nothing of Trans-Encoder's is left out
    _write_page(tmp_path, scores, "5")
    page = (tmp_path / "page" / "README.md").read_text()
    section = page.split("## Trans-Encoder rows not yet trained at this budget")[1].split("##")[0]
    assert "until trained at 2 cycles, 1 cross-encoder and 3 bi-encoder epochs:" in section
    assert "- trans_encoder bi seed 0 (trans_encoder 2 cycles of 500 steps seed 0)" in section
    claim = next(line for line in page.splitlines() if line.startswith("- Trans-Encoder bi-encoder above"))
    assert "trans_encoder bi 50.00" in claim and "1 seed" in claim  # seed 1 alone
    assert "| cycle1_bi_a | 1 | 100 | 70.00 |" in page


def test_the_page_says_what_simcse_unsups_spread_between_seeds_means_for_a_user(tmp_path):
    from bench.reproduce import seed_spread_lines

    scores = {"raw (mean)": {"sts_avg": 50.0, "stsb_dev": 59.0}}
    for seed, (avg, dev) in enumerate([(56.9, 63.4), (56.8, 64.6), (50.0, 55.6), (57.5, 64.0), (55.0, 62.0)]):
        scores[f"simcse unsup seed {seed}"] = {"sts_avg": avg, "stsb_dev": dev}
    spread, _, advice = seed_spread_lines(scores)
    assert spread == ("simcse unsup over 5 seeds: STS avg 56.90 (seed 0), 56.80 (seed 1), 50.00 (seed 2), "
                      "57.50 (seed 3), 55.00 (seed 4); from 50.00 to 57.50, a spread of 7.50 points (sd 3.07).")
    # Seed 1 is best on STS-B dev and third on STS avg; keeping it gives +1.56 over the mean seed (55.24).
    assert "The seed best on STS-B dev (seed 1, 64.60) is number 3 of 5 on STS avg (56.80)" in advice
    assert advice.endswith("gave +1.56 points over the mean seed here.")
    assert seed_spread_lines({k: v for k, v in scores.items() if not k.endswith(("3", "4", "2"))}) == []
    _write_page(tmp_path, scores, "5")
    page = (tmp_path / "page" / "README.md").read_text()
    assert f"## The spread between seeds\n\n{spread}\n\n{advice}\n" in page
    # With every seed's model also read out with mean pooling, the page says where the spread lies.
    for seed, avg in enumerate([57.3, 57.6, 56.4, 57.0, 56.5]):
        scores[f"simcse unsup (mean pooling) seed {seed}"] = {"sts_avg": avg, "stsb_dev": 60.0}
    lines = seed_spread_lines(scores)
    assert lines[:3] == [spread, "", advice] and lines[3] == ""
    assert lines[4] == ("The same 5 models read out with mean pooling instead of the pooling they were trained with: "
                        "STS avg from 56.40 to 57.60 (sd 0.51), mean 56.96, +6.96 over the raw model. Most of the "
                        "spread between seeds is in the read-out they learn, not in their encoders: read out with "
                        "mean pooling, the 5 models lie within 1.20 points of each other.")
    # A mean-pooled spread as wide as the row's says nothing about the read-out; a seed without one, nothing.
    wide = {**scores, **{f"simcse unsup (mean pooling) seed {s}": {"sts_avg": a}
                         for s, a in enumerate([50.0, 57.5, 56.9, 56.8, 55.0])}}
    assert "Most of the spread" not in seed_spread_lines(wide)[4]
    del scores["simcse unsup (mean pooling) seed 4"]
    assert seed_spread_lines(scores) == [spread, "", advice]


def test_a_run_trained_again_drops_the_scores_of_its_earlier_model_in_every_row_read_out_of_it(tmp_path):
    from bench.reproduce import Ladder

    scored = {"sts_avg": 56.9, "stsb_dev": 63.4, "sts": {}, "senteval_avg": 70.2}
    scores = {"simcse unsup seed 0": {"run": "simcse unsup seed 0", "run_id": "A", "curves": {}, **scored},
              "simcse unsup (mean pooling) seed 0": dict(scored), "raw (mean)": {"sts_avg": 50.8, "stsb_dev": 59.7}}
    for root in ("resumed", "again"):
        (tmp_path / root).mkdir()
        (tmp_path / root / "scores.json").write_text(json.dumps(scores))
    # Entries written before they named the model they scored get it: their run's, or the row they read out.
    resumed = Ladder(str(tmp_path / "resumed"), str(tmp_path))
    assert resumed.scores["simcse unsup (mean pooling) seed 0"]["model_id"] == "A"
    assert "model_id" not in resumed.scores["raw (mean)"]
    # A resumed piece of the same run (same ID) keeps the scores.
    resumed._record("simcse unsup seed 0", "simcse unsup seed 0", {"run_id": "A", "train_seconds": 5.0})
    saved = json.load(open(tmp_path / "resumed" / "scores.json"))
    assert saved["simcse unsup seed 0"]["sts_avg"] == saved["simcse unsup (mean pooling) seed 0"]["sts_avg"] == 56.9
    # Trained again here (its model was not on this machine): a new ID, and no row keeps the old model's scores.
    again = Ladder(str(tmp_path / "again"), str(tmp_path))
    again._record("simcse unsup seed 0", "simcse unsup seed 0", {"run_id": "B", "train_seconds": 9.0, "curves": {
        "stsb_dev": [[250, 60.0]]}})
    saved = json.load(open(tmp_path / "again" / "scores.json"))
    for name in ("simcse unsup seed 0", "simcse unsup (mean pooling) seed 0"):
        assert not {"sts_avg", "stsb_dev", "sts", "senteval_avg"} & set(saved[name]), name
    assert saved["simcse unsup seed 0"]["run_id"] == "B" and saved["simcse unsup seed 0"]["curves"]
    assert saved["raw (mean)"]["sts_avg"] == 50.8
    # Scoring stamps the model; an entry holding another model's scores starts over.
    entry = again._entry_of("raw (mean)", str(tmp_path / "starts" / "bert_mini_books") + "/")
    assert entry["model_id"] == "bert_mini_books" and entry["sts_avg"] == 50.8
    assert "sts_avg" not in again._entry_of("raw (mean)", str(tmp_path / "other_start"))


def test_simcse_and_trans_encoder_rows_a_page_finished_at_this_budget_are_not_trained_again(tmp_path, monkeypatch):
    """A fresh machine's ladder trains a SimCSE row only if the page has no score of a run at this budget, and
    a Trans-Encoder row only if its read-outs are missing; the Trans-Encoder row it trains needs its SimCSE unsup
    model, trained again here and both SimCSE rows scored from it."""
    from bench import reproduce
    from common.evaluation import evaluators

    page, root = tmp_path / "page", tmp_path / "ladder"
    page.mkdir()
    scored = {"sts_avg": 56.0, "stsb_dev": 60.0}
    carried = {
        "simcse unsup seed 0": {"run": "simcse unsup 4000 steps seed 0", "run_id": "U0", **scored},
        "simcse unsup (mean pooling) seed 0": {"model_id": "U0", **scored},
        "simcse unsup seed 1": {"run": "simcse unsup seed 1", "run_id": "old", **scored},  # an older budget
        "simcse unsup (mean pooling) seed 1": {"model_id": "old", **scored},
        "trans_encoder seed 0": {"run": "trans_encoder 2 cycles of 500 steps seed 0", "run_id": "T0"},
        "trans_encoder bi seed 0": {"model_id": "T0", **scored},
        "trans_encoder cross seed 0": {"model_id": "T0", **scored}}
    (page / "results.json").write_text(json.dumps({"claims": [], "scores": carried}))
    asked, read = [], []

    def run(self, name, method, settings, evaluator=None, row=None, after_step=None):
        asked.append(name)
        return str(root / "runs" / name / "model" / f"id {name}")

    monkeypatch.setattr(reproduce.Ladder, "run", run)
    monkeypatch.setattr(reproduce.Ladder, "score", lambda self, name, model, **kw: read.append(name))
    monkeypatch.setattr(reproduce.Ladder, "score_cross", lambda self, name, model: read.append(name))
    for method in ("keep_time", "record_start", "record_phases", "record_phase_curves"):
        monkeypatch.setattr(reproduce.Ladder, method, lambda self, *a: None)
    monkeypatch.setattr(reproduce, "write_results", lambda *a: "page")
    monkeypatch.setattr(evaluators, "StsbDevEvaluator", lambda *a, **kw: None)
    with parsed_flags(reproduce.define_flags, [f"--start={tmp_path}", "--stages=simcse,trans_encoder",
                                               "--simcse_modes=unsup", "--seeds=0,1", f"--artifacts_dir={root}",
                                               f"--results_dir={page}", "--simcse_steps=4000",
                                               "--te_steps=500", "--te_bi_epochs=1"]):
        reproduce.main([])
    # Seed 0's rows are finished at this budget; seed 1's SimCSE is trained by its stage, then asked for again by
    # Trans-Encoder seed 1 (Ladder.run gives back a model this machine has).
    assert asked == ["simcse unsup 4000 steps seed 1", "simcse unsup 4000 steps seed 1",
                     "trans_encoder 2 cycles of 500 steps seed 1"]
    assert read == ["simcse unsup seed 1", "simcse unsup (mean pooling) seed 1"] * 2 + [
        "trans_encoder bi seed 1", "trans_encoder cross seed 1"]
    # At another Trans-Encoder budget (the default: whole epochs, 3 of the bi-encoder), seed 0's row is trained
    # again under a name that carries it, from its SimCSE model trained again here.
    asked.clear()
    with parsed_flags(reproduce.define_flags, [f"--start={tmp_path}", "--stages=trans_encoder", "--seeds=0",
                                               f"--artifacts_dir={root}", f"--results_dir={page}",
                                               "--simcse_steps=4000"]):
        reproduce.main([])
    assert asked == ["simcse unsup 4000 steps seed 0",
                     "trans_encoder 2 cycles, 1 cross-encoder and 3 bi-encoder epochs seed 0"]
    assert reproduce.te_budget(2, 1, 3, 500) == "2 cycles, 1 cross-encoder and 3 bi-encoder epochs of at most 500 steps"
    assert reproduce.simcse_run("sup", 2, 4000) == "simcse sup 4000 steps seed 2"
    assert reproduce.simcse_run("sup", 2, 4000, 3e-4) == "simcse sup lr 0.0003 seed 2"


def test_a_trans_encoder_row_whose_simcse_start_is_gone_counts_its_retraining_in_the_not_run_account(
        tmp_path, monkeypatch):
    """A fresh machine keeps the page's scores, not its models: the Trans-Encoder rows not run yet whose SimCSE
    unsup model is not here train it again first, and the page's account says so and counts its time."""
    from bench import reproduce

    ladder = reproduce.Ladder(str(tmp_path / "ladder"), "unused")
    for seed in (0, 1):
        ladder.scores[f"simcse unsup seed {seed}"] = {"run": f"simcse unsup 4000 steps seed {seed}",
                                                      "run_id": f"U{seed}", "sts_avg": 50.0,
                                                      "metrics": {"seconds": 3600.0}}
        ladder._save(f"simcse unsup seed {seed}")
    # Seed 1's model is still on this machine; seed 0's is not.
    os.makedirs(tmp_path / "ladder" / "runs" / "simcse unsup 4000 steps seed 1" / "model" / "20261203-000000")
    assert ladder.models("simcse unsup 4000 steps seed 1") == ["20261203-000000"]
    assert ladder.models("simcse unsup 4000 steps seed 0") == []
    def probe(self, name, method, settings, steps):
        return {"cycle1_cross_a": 1.0, "cycle1_bi_a": 0.5} if name == "trans_encoder" else {"": 0.9}

    monkeypatch.setattr(reproduce.Ladder, "probe", probe)
    monkeypatch.setattr(reproduce, "te_phase_steps", lambda settings, data_path: {"cross": 300, "bi": 200})
    with parsed_flags(reproduce.define_flags, ["--simcse_steps=4000", "--seeds=0,1", "--percentages=5",
                                               "--probe_steps=30"]):
        reproduce.probe_missing_rows(ladder, "raw", 1e-4, [0, 1], {})
        budget = reproduce.budget_of_te()
    te = ladder.scores["_not_run"]["trans_encoder"]
    assert te["rows"] == ["trans_encoder seed 0", "trans_encoder seed 1"]
    assert te["starts"] == dict(rows=["simcse unsup seed 0"], steps=4000, cycles=1, probe_steps=30,
                                seconds_per_step={"": 0.9})
    lines = reproduce.not_run_lines({**ladder.scores, "_not_run": {"trans_encoder": te}},
                                    {"simcse unsup": 4000, "trans_encoder": budget})
    te_line = next(line for line in lines if line.startswith("- trans_encoder:"))
    # 2 rows x 2 cycles x (300 x 1 + 200 x 0.5) s, then seed 0's start: 4000 x 0.9 s, as its rows took 60 minutes.
    assert te_line.endswith("about 0.4 h of training in all. Its SimCSE unsup start (simcse unsup seed 0) is not "
                            "on this machine and is trained again first: 4000 steps at 0.9 s per step each, about "
                            "1.0 h; the 2 simcse unsup rows trained at this budget took a median of 60 minutes "
                            "each: about 1.0 h.")
    assert "In all: about 1.4 h of training on this machine." in lines
    # Once seed 0's row is scored, its start leaves the account with it.
    ladder.scores["trans_encoder seed 0"] = {"run": reproduce.te_run(budget, 0)}
    ladder.scores["trans_encoder bi seed 0"] = {"sts_avg": 50.0}
    te_line = next(line for line in reproduce.not_run_lines(ladder.scores, {"trans_encoder": budget})
                   if line.startswith("- trans_encoder:"))
    assert "SimCSE unsup start" not in te_line


def test_a_trans_encoder_claim_pairs_each_seed_with_the_simcse_model_it_started_from():
    from bench import reproduce

    scores = {"raw (mean)": {"sts_avg": 50.0, "stsb_dev": 59.0}}
    for seed, (start, bi) in enumerate([(56.9, 54.2), (56.8, 53.5), (50.0, 48.1)]):
        scores[f"simcse unsup seed {seed}"] = {"sts_avg": start, "stsb_dev": 60.0}
        scores[f"trans_encoder bi seed {seed}"] = {"sts_avg": bi, "stsb_dev": 60.0}
        scores[f"trans_encoder cross seed {seed}"] = {"sts_avg": start + 1.0 + seed / 10, "stsb_dev": 50.0}
    scores["simcse unsup seed 3"] = {"sts_avg": 30.0, "stsb_dev": 40.0}  # no Trans-Encoder row: left out
    found = {v.claim: v for v in reproduce.claims(scores, ["5"])}
    bi = found["Trans-Encoder bi-encoder above its SimCSE start"]
    assert bi.outcome == "DID NOT HOLD"
    assert "seed by seed: -2.70, -3.30, -1.90" in bi.detail and "(4 seeds)" in bi.detail
    assert found["Trans-Encoder cross-encoder above its SimCSE start"].outcome == "HELD"


def test_a_trans_encoder_row_in_the_table_takes_its_runs_training_time():
    from bench import reproduce

    # The SimCSE run is recorded under its run's name too, as the ladder does, without scores.
    scores = {"simcse unsup seed 0": {"run_id": "S0", "model_id": "S0", "train_seconds": 100.0, "sts_avg": 50.0},
              "simcse unsup 4000 steps seed 0": {"run_id": "S0", "train_seconds": 100.0},
              "simcse unsup (mean pooling) seed 0": {"model_id": "S0", "sts_avg": 52.0},
              "trans_encoder seed 0": {"run_id": "T0", "train_seconds": 2730.9},
              "trans_encoder bi seed 0": {"model_id": "T0", "sts_avg": 54.0},
              "trans_encoder cross seed 0": {"model_id": "T0", "sts_avg": 47.0}}
    table = {line.split(" | ")[0][2:]: line.split(" | ")[-1].rstrip(" |") for line in
             reproduce.report(scores).splitlines()[2:]}
    assert table == {"simcse unsup": "100", "simcse unsup (mean pooling)": "-", "trans_encoder bi": "2731",
                     "trans_encoder cross": "2731"}
