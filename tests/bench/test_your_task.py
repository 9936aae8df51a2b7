"""bench/your_task.py on a tiny MRPC-format fixture (byte-order mark included) and the random test encoder: the
split's sizes, a run that resumes after a kill and is reused once finished, and the page with its verdicts, or
with NOT RUN rows when the data are missing."""

import json
import os
import random

import pytest

from bench import verdicts, your_task
from common.data.nli import read_nli
from in_process import run_module

HEADER = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String"


def write_mrpc(root: str, train: int = 40, test: int = 12, seed: int = 0) -> str:
    """MRPC's two files in SentEval's layout: a byte-order mark, its header, and generated pairs (1 = paraphrase)."""
    rnd = random.Random(seed)
    nouns = ["man", "woman", "dog", "child", "cat", "bird", "chef", "runner"]
    verbs = ["runs", "sleeps", "eats", "sings", "jumps", "reads"]
    folder = os.path.join(root, "downstream", "MRPC")
    os.makedirs(folder, exist_ok=True)
    for split, n in (("train", train), ("test", test)):
        lines = [HEADER]
        for i in range(n):
            a = f"the {rnd.choice(nouns)} {rnd.choice(verbs)} at place {i} ."
            same = i % 2 == 0
            b = a.replace("the", "a") if same else f"a {rnd.choice(nouns)} {rnd.choice(verbs)} far away ."
            lines.append(f"{int(same)}\t{1000 + i}\t{2000 + i}\t{a}\t{b}")
        with open(os.path.join(folder, f"msr_paraphrase_{split}.txt"), "w", encoding="utf-8", newline="\n") as f:
            f.write("\n".join(lines) + "\n")
    return root


def tiny_plan(**changes) -> your_task.Plan:
    settings = dict(starts={"random_tiny": "random_tiny"}, lrs={"random_tiny": 1e-3}, seeds=[0], pause_steps=4,
                    pause_batch=8, simcse_steps=4, simcse_batch=8, pause_eval_every=2, simcse_eval_every=2,
                    max_seq_len=32,
                    simcse_pooling="mean", checkpoint_every=2)
    return your_task.Plan(**{**settings, **changes})


def test_the_split_holds_out_a_dev_set_and_keeps_a_share_of_the_pools_labels(tmp_path):
    data = write_mrpc(str(tmp_path / "data"))
    train_file = os.path.join(data, your_task.TRAIN_FILE)
    split = your_task.write_split(train_file, str(tmp_path / "split"), seed=0, dev_percent=10, label_percent=20)
    assert (split["train_pairs"], split["dev_pairs"], split["pool_pairs"]) == (40, 4, 36)
    assert (split["labelled"], split["unlabelled"]) == (7, 29)  # round(0.2 * 36)
    assert 0 < split["labelled_positives"] < 7  # both classes labelled: PAUSE reads the priors off them
    files = split["files"]
    for path in files.values():
        with open(path, "rb") as f:
            assert f.read().split(b"\n")[0] == HEADER.encode("utf-8")  # copied as it ships, mark and all
    # Read by the toolkit as train.py reads --train_data with --columns and --labels.
    columns = dict(c.split(":", 1) for c in your_task.TRAIN_COLUMNS)
    pool = read_nli(files["pool"], data, columns, labels=your_task.LABELS)
    assert len(pool) == 36 and pool.labelled == 7 and int((pool.labels == 1).sum()) == split["labelled_positives"]
    dev = read_nli(files["dev"], data, columns, labels=your_task.LABELS)
    assert len(dev) == 4 and dev.labelled == 4 and int((dev.labels == 1).sum()) == split["dev_positives"]
    assert not set(dev.premises) & set(pool.premises)  # every pair is in exactly one file
    assert len(set(dev.premises) | set(pool.premises)) == 40
    again = your_task.write_split(train_file, str(tmp_path / "again"), seed=0, dev_percent=10, label_percent=20)
    assert open(again["files"]["pool"], "rb").read() == open(files["pool"], "rb").read()
    other = your_task.write_split(train_file, str(tmp_path / "other"), seed=1, dev_percent=10, label_percent=20)
    assert open(other["files"]["dev"], "rb").read() != open(files["dev"], "rb").read()


def test_a_killed_run_resumes_and_a_finished_one_is_reused(tmp_path):
    from common.data.tables import parse_columns
    from common.evaluation.evaluators import BinaryPairsEvaluator, dev_evaluator
    from common.evaluation.sts import PAIR_SCORE_FIELDS, read_scored_pairs

    data = write_mrpc(str(tmp_path / "data"))
    ladder = your_task.TaskLadder(str(tmp_path / "art"), data)
    split = your_task.write_split(os.path.join(data, your_task.TRAIN_FILE), str(tmp_path / "art" / "data"), 0, 10,
                                  20)
    ladder.use_split(split)
    columns = parse_columns(your_task.PAIR_COLUMNS, PAIR_SCORE_FIELDS)
    test = read_scored_pairs(os.path.join(data, your_task.TEST_FILE), columns)
    dev = dev_evaluator(data, split["files"]["dev"], "auto", columns)
    assert isinstance(dev, BinaryPairsEvaluator) and dev.primary_metric == "dev_average_precision"
    plan = tiny_plan()

    class Killed(Exception):
        pass

    def kill_at_3(step, model):
        if step == 3:
            raise Killed()

    with pytest.raises(Killed):
        your_task.train_row(ladder, plan, "random_tiny", "pause", 0, split, test, dev, after_step=kill_at_3)
    root = tmp_path / "art" / "runs" / plan.run_name("random_tiny", "pause", 0)
    (run_id,) = os.listdir(root / "ckpt")
    assert not (root / "model").exists()
    steps = []
    entry = your_task.train_row(ladder, plan, "random_tiny", "pause", 0, split, test, dev,
                                after_step=lambda step, model: steps.append(step))
    assert steps == [3, 4]  # continued from the checkpoint of step 2
    assert os.listdir(root / "model") == [run_id]
    assert entry["selection"]["metric"] == "dev_average_precision" and entry["selection"]["step"] in (2, 4)
    assert [p[0] for p in entry["curves"]["dev_ap"]] == [2, 4]
    assert set(entry["test"]) >= {"test_average_precision", "test_f1", "test_accuracy"}

    def no_training(*args, **kwargs):
        raise AssertionError("a finished run was trained again")

    ladder.run = no_training
    assert your_task.train_row(ladder, plan, "random_tiny", "pause", 0, split, test, dev) == entry
    # A run whose model is published but not yet scored (killed while scoring) is scored, not retrained.
    del ladder.scores[your_task.row_name("random_tiny", "pause", 0)]["test"]
    ladder.run = lambda *args, **kwargs: str(root / "model" / run_id)
    rescored = your_task.train_row(ladder, plan, "random_tiny", "pause", 0, split, test, dev)
    assert rescored["test"] == entry["test"]
    # Another split under the same root would reuse models trained on this one: refused.
    with pytest.raises(Exception, match="another split"):
        ladder.use_split(dict(split, seed=1))


def _scores(pause_shift: float, simcse_loss: float = 1.0):
    """Scores of one start: the start, and three seeds of each trained row around the given means."""
    def test(ap):
        return {"test": {"test_average_precision": ap, "test_f1": ap - 0.05, "test_accuracy": ap - 0.1},
                "test_seconds": 2.0}

    scores = {"m start": {**test(0.80), "dev": {"dev_average_precision": 0.82}, "dev_seconds": 1.0}}
    for seed, noise in enumerate((0.0, 0.004, -0.004)):
        scores[f"m supervised seed {seed}"] = {**test(0.78 + noise), "train_seconds_total": 10.0,
                                               "selection": {"step": 2, "score": 0.8},
                                               "curves": {"dev_ap": [[2, 0.8], [4, 0.79]]}}
        scores[f"m pause seed {seed}"] = {**test(0.78 + pause_shift + noise), "train_seconds_total": 12.0,
                                          "selection": {"step": 4, "score": 0.83},
                                          "curves": {"dev_ap": [[2, 0.8], [4, 0.83]]}}
        scores[f"m simcse seed {seed}"] = {**test(0.801 + noise), "train_seconds_total": 20.0,
                                           "final_loss": simcse_loss, "selection": {"step": 2, "score": 0.82},
                                           "curves": {"dev_ap": [[2, 0.82], [4, 0.81]]}}
    return scores


def test_the_page_gives_a_verdict_per_claim_and_says_what_helps(tmp_path):
    plan = tiny_plan(starts={"m": "m", "other": "other"}, lrs={"m": 1e-3, "other": 1e-3}, seeds=[0, 1, 2])
    probe = tmp_path / "page" / "probe"
    probe.mkdir(parents=True)
    (probe / "results.json").write_text(json.dumps({
        "plan": dict(starts={"m": "m"}, seeds=[0], pause_steps=600, simcse_steps=500,
                     pause_eval_every=25, simcse_eval_every=25),
        "scores": {"m pause seed 0": {"curves": {"dev_ap": [[25, 0.8], [50, 0.9], [75, 0.85]]}}}}))
    text = your_task.write_results(_scores(0.05), plan, str(tmp_path / "page"), "python -m bench.your_task", {})
    results = json.load(open(tmp_path / "page" / "results.json"))
    claims = {c["claim"]: c["outcome"] for c in results["claims"]}
    assert claims["m: PAUSE above supervised-only"] == verdicts.HELD
    assert claims["m: PAUSE above the start"] == verdicts.HELD
    assert claims["m: SimCSE above the start"] == verdicts.NOT_TESTABLE  # +0.1 within the seeds' noise
    assert claims["other: PAUSE above the start"] == verdicts.NOT_RUN
    assert "| m | the start (untrained) | fixed | 80.00 | 75.00 | 70.00 | 82.00 | untrained | 3 |" in text
    assert "| m | PAUSE (kept labels + unlabelled pool) | 3 | 83.00 ± 0.40 |" in text
    assert "| other | supervised-only (kept labels) | - | NOT RUN (no score yet) |" in text
    assert "- From m: Helps: adding the unlabelled pool" in text and "Cannot be told from seed noise: unsup" in text
    assert "- From other: Not run yet:" in text and "Verdict rules:" in text
    assert ("chosen from the dev curves of [a probe](probe/README.md) (from m, seed 0, dev AP every 25 (PAUSE, "
            "supervised-only) or 25 (SimCSE) steps): its best dev AP came for PAUSE at step 50 (90.00; within 0.5 "
            "of it from step 50) of 600. Here PAUSE") in text
    assert (tmp_path / "page" / "dev_curves.png").exists() and "![dev_curves.png](dev_curves.png)" in text
    one_seed = {k: v for k, v in _scores(0.05).items() if " seed " not in k or k.endswith(" seed 0")}
    early = your_task.write_results(one_seed, plan, str(tmp_path / "p1"), "python -m bench.your_task", {})
    assert "- From m: Too few seeds yet to tell: adding the unlabelled pool" in early
    # PAUSE below supervised-only is said as plainly; a SimCSE run at chance is no evidence either way.
    text = your_task.write_results(_scores(-0.05, simcse_loss=your_task.np.log(8)), plan, str(tmp_path / "p2"),
                                   "python -m bench.your_task", {})
    claims = {c["claim"]: c for c in json.load(open(tmp_path / "p2" / "results.json"))["claims"]}
    assert claims["m: PAUSE above supervised-only"]["outcome"] == verdicts.NOT_HELD
    assert "Does not help (below): adding the unlabelled pool" in text
    assert "a run collapsed" in claims["m: SimCSE above the start"]["detail"]


def test_without_the_data_every_row_is_not_run_and_the_page_is_written(tmp_path):
    proc = run_module("bench.your_task", [f"--data_path={tmp_path / 'none'}", "--starts=random_tiny",
                                          "--train_lrs=1e-3", f"--artifacts_dir={tmp_path / 'art'}",
                                          f"--results_dir={tmp_path / 'page'}"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    page = (tmp_path / "page" / "README.md").read_text()
    assert "- Command: `python -m bench.your_task --data_path=" in page
    assert "| random_tiny | the start (untrained) | - | NOT RUN (downstream/MRPC/msr_paraphrase_train.txt and " \
           "downstream/MRPC/msr_paraphrase_test.txt not found under --data_path) |" in page
    outcomes = {c["outcome"] for c in json.load(open(tmp_path / "page" / "results.json"))["claims"]}
    assert outcomes == {verdicts.NOT_RUN}


def test_the_script_trains_scores_and_reuses_its_rows_on_the_fixture(tmp_path):
    """supervised-only and SimCSE (PAUSE's trainer is the supervised row's, and the resume test trains PAUSE)."""
    data = write_mrpc(str(tmp_path / "data"))
    args = [f"--data_path={data}", "--starts=random_tiny",
            "--rows=start,supervised,simcse",
            "--train_lrs=1e-3", "--seeds=0", "--pause_steps=2", "--pause_batch=8", "--simcse_steps=2",
            "--simcse_batch=8", "--pause_eval_every=1", "--simcse_eval_every=1", "--max_seq_len=32",
            "--label_percent=20",
            f"--artifacts_dir={tmp_path / 'art'}", f"--results_dir={tmp_path / 'page'}"]
    proc = run_module("bench.your_task", args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.load(open(tmp_path / "page" / "results.json"))
    scored = {k for k, v in results["scores"].items() if isinstance(v, dict) and "test" in v}
    assert scored == {"random_tiny start", "random_tiny supervised seed 0", "random_tiny simcse seed 0"}
    settings = results["scores"]["random_tiny supervised seed 0"]["settings"]
    assert settings["annealing"] == "off" and settings["labeled_batch_fraction"] == 1.0
    assert settings["train_data"] == ["pool.tsv"] and settings["dev_data"] == "dev.tsv"  # no machine paths
    page = (tmp_path / "page" / "README.md").read_text()
    assert "| random_tiny | PAUSE (kept labels + unlabelled pool) | - | NOT RUN (no score yet) |" in page
    assert results["scores"]["_split"]["labelled"] == 7
    runs = sorted(os.listdir(tmp_path / "art" / "runs"))
    again = run_module("bench.your_task", args)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "data: " in proc.stderr  # a row that trains logs its data, on the console as run_module keeps it
    assert "Resuming" not in again.stderr and "data: " not in again.stderr  # nothing trained again
    assert sorted(os.listdir(tmp_path / "art" / "runs")) == runs
    assert len(json.load(open(tmp_path / "art" / "scores.json"))["_meta"]["invocations"]) == 2
