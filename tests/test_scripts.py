"""Smoke tests of every script's `main`, through the real command line; refusals and `--help` text in-process
(tests/in_process.py), each script keeping its real runs here and beside its library's tests."""

import functools
import json
import os
import re
import subprocess
import sys

import pytest

from common.errors import UserError
from fixtures import write_sts_root
from in_process import run_script

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What TensorFlow writes to stderr when it is imported, or its devices are first listed, outside
# common.cli: CPU features, CUDA stubs and, on a machine without a GPU, the CUDA driver probe.
TENSORFLOW_NOISE = ("cuInit", "cudart_stub", "cpu_feature_guard", "absl::InitializeLog")


def _run(args, cwd):
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT})


@functools.lru_cache(maxsize=None)
def _helpshort(script):
    """`<script> --helpshort`, run once per script for the tests that read it."""
    return _run([os.path.join(ROOT, script), "--helpshort"], cwd=ROOT)


def test_test_sts_scores_a_spec_and_writes_results(tmp_path):
    data = write_sts_root(str(tmp_path / "data"))
    # --baseline scores a second model on the same sets, side by side (here the same model: no change).
    proc = run_script("test_sts.py", ["--model=random_tiny", f"--data_path={data}",
                                      f"--artifacts_dir={tmp_path / 'artifacts'}", "--max_seq_len=32",
                                      "--baseline=random_tiny"], cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "beside its baseline random_tiny" in proc.stdout
    rows = {line.split()[0]: line.split()[1:] for line in proc.stdout.splitlines()[1:]}
    assert (set(rows) >= {"sts12", "stsb", "sickr", "avg"} and rows["avg"][2] == "+0.00"
            and rows["avg"][0] == rows["avg"][1])
    result = json.load(open(tmp_path / "artifacts" / "test" / "sts_random_tiny.json"))
    assert result["model"] == "random_tiny"
    assert set(result) >= {"sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr", "avg", "seconds"}
    assert set(result["sts12"]) >= {"all", "mean", "wmean", "subsets"}
    txt = (tmp_path / "artifacts" / "test" / "sts_random_tiny.txt").read_text()
    assert txt.startswith("sts12=")


def test_test_sts_scores_own_pairs_with_mapped_columns_and_writes_json(tmp_path):
    from fixtures import PAIRS

    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps({"q": a, "d": b, "rating": float(s)}) + "\n" for a, b, s in PAIRS))
    out = tmp_path / "scores.json"
    proc = run_script("test_sts.py", ["--model=random_tiny", f"--pairs={path}",
                                      "--columns=sentence1:q,sentence2:d,score:rating", f"--output={out}"],
                      cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    scores = json.load(open(out))
    assert set(scores) == {"spearman", "pearson", "pairs"} and scores["pairs"] == len(PAIRS)
    assert f"spearman {scores['spearman']:.2f}" in proc.stdout
    wrong = run_script("test_sts.py", ["--model=random_tiny", f"--pairs={path}"], cwd=str(tmp_path))
    assert wrong.returncode == 2 and wrong.stderr.strip().splitlines()[-1].startswith(
        "test_sts.py: " + str(path) + ": no column for 'sentence1'")


def test_test_sts_scores_labelled_pairs_beside_a_baseline_as_binary_classification(tmp_path):
    """0/1 labels (here under a byte-order mark, as MRPC ships) give sentence-transformers' binary
    metrics, for the model and --baseline side by side; --output holds both."""
    from fixtures import PAIRS

    path = tmp_path / "para.tsv"
    path.write_text("\ufeffQuality\t#1 String\t#2 String\n" + "".join(
        f"{int(float(s) > 2)}\t{a}\t{b}\n" for a, b, s in PAIRS), encoding="utf-8")
    out = tmp_path / "binary.json"
    proc = run_script("test_sts.py", ["--model=random_tiny", f"--pairs={path}", f"--output={out}",
                                      "--columns=sentence1:#1 String,sentence2:#2 String,label:Quality",
                                      "--baseline=random_bert_tiny"], cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    scores = json.load(open(out))
    keys = {"accuracy", "accuracy_threshold", "f1", "f1_threshold", "precision", "recall", "average_precision",
            "mcc", "pairs", "positives"}
    assert set(scores) == keys | {"baseline"} and set(scores["baseline"]) == keys | {"model"}
    assert (scores["pairs"], scores["positives"], scores["baseline"]["model"]) == (6, 4, "random_bert_tiny")
    lines = proc.stdout.splitlines()
    assert lines[0] == f"model: random_tiny beside its baseline random_bert_tiny, pairs: {path} (6; 4 labelled 1)"
    assert lines[1].split() == ["metric", "random_bert_tiny", "random_tiny", "change"]
    f1 = next(line.split() for line in lines if line.startswith("f1 "))
    assert f1[1:] == [f"{scores['baseline']['f1'] * 100:.2f}", f"{scores['f1'] * 100:.2f}",
                      f"{(scores['f1'] - scores['baseline']['f1']) * 100:+.2f}"]


def test_an_old_spec_spelling_still_works_with_one_notice_and_is_recorded_by_its_new_name(tmp_path):
    data = write_sts_root(str(tmp_path / "data"))
    # The notice is a logged line on the console, as the user sees it (run_script keeps the logged lines).
    proc = run_script("test_sts.py", ["--model=tiny", f"--data_path={data}",
                                      f"--artifacts_dir={tmp_path / 'artifacts'}", "--max_seq_len=32"],
                      cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    (notice,) = [line for line in proc.stderr.splitlines() if "is now spelled" in line]
    assert notice.endswith("--model=tiny is now spelled random_tiny (a freshly initialised 1-layer test BERT with "
                           "the MiniLM vocabulary, no pretraining); the old name still works.")
    assert json.load(open(tmp_path / "artifacts" / "test" / "sts_random_tiny.json"))["model"] == "random_tiny"


def test_test_sts_rejects_bad_input_clearly(tmp_path):
    proc = run_script("test_sts.py", ["--model=nonsense", f"--data_path={tmp_path}"], cwd=str(tmp_path))
    assert proc.returncode == 2 and "Valid forms" in proc.stderr
    proc = _run([os.path.join(ROOT, "test_sts.py"), "--model=random_tiny", f"--data_path={tmp_path / 'nope'}"],
                cwd=str(tmp_path))
    assert proc.returncode == 2 and "docs/data.md" in proc.stderr
    # The message is the last line: no traceback and no TensorFlow start-up lines (CPU features,
    # CUDA stubs, the CUDA driver probe of a CPU-only machine). --verbose shows the traceback.
    assert "Traceback" not in proc.stderr and proc.stderr.strip().splitlines()[-1].startswith("test_sts.py: Data")
    assert not any(s in proc.stderr for s in TENSORFLOW_NOISE), proc.stderr
    verbose = run_script("test_sts.py", ["--model=random_tiny", f"--data_path={tmp_path / 'nope'}", "--verbose"],
                         cwd=str(tmp_path))
    assert verbose.returncode != 0 and "Traceback" in verbose.stderr
    # A stray argument is a user error too: one line and exit 2, not absl's usage text and exit 1.
    proc = run_script("test_sts.py", ["stray"], cwd=str(tmp_path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines()[-1] == (
        "test_sts.py: Unexpected arguments: ['stray']; every input is a flag (--name=value), --helpshort lists "
        "them.")
    verbose = run_script("test_sts.py", ["stray", "--verbose"], cwd=str(tmp_path))
    assert verbose.returncode == 2 and verbose.stderr.strip().splitlines()[-1].startswith("test_sts.py: Unexpected")



def _write_tiny_beir(root):
    """A BEIR folder of 3 queries (one without a relevant document) and 7 documents, one with a title."""
    os.makedirs(os.path.join(root, "qrels"))
    docs = [("d1", "", "A man is playing a guitar."), ("d2", "Music", "Someone plays an instrument."),
            ("d3", "", "The stock market fell today."), ("d4", "", "A woman slices an onion."),
            ("d5", "", "Shares dropped sharply."), ("d6", "", "A cat sleeps on the sofa."),
            ("d7", "", "A chef is cooking.")]
    with open(os.path.join(root, "corpus.jsonl"), "w") as f:
        f.writelines(json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, t, x in docs)
    with open(os.path.join(root, "queries.jsonl"), "w") as f:
        f.writelines(json.dumps({"_id": i, "text": x}) + "\n" for i, x in (
            ("q1", "Who plays music?"), ("q2", "Stocks went down."), ("q3", "An unjudged query.")))
    with open(os.path.join(root, "qrels", "test.tsv"), "w") as f:
        f.write("query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t1\nq2\td3\t1\nq2\td5\t2\nq3\td7\t0\n")
    return root


def test_retrieval_eval_scores_a_spec_and_writes_json(tmp_path):
    data = _write_tiny_beir(str(tmp_path / "beir"))
    out = tmp_path / "results" / "retrieval.json"
    proc = _run([os.path.join(ROOT, "retrieval_eval.py"), "--model=random_tiny", f"--data={data}", "--max_seq_len=16",
                 "--chunk_size=3", f"--output={out}"], cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "ndcg@10" in proc.stdout and "1 without a relevant document left out" in proc.stdout
    result = json.load(open(out))
    metrics = ("ndcg@10", "mrr@10", "recall@1", "recall@10", "recall@100", "map@100", "accuracy@1")
    assert set(result) >= {*metrics, "queries", "documents", "seconds"}
    assert all(0.0 <= result[k] <= 1.0 for k in metrics)
    # 7 documents, all retrieved: every relevant one is within the top 100.
    assert (result["queries"], result["documents"], result["recall@100"]) == (2, 7, 1.0)
    assert not any(s in proc.stderr for s in TENSORFLOW_NOISE), proc.stderr


def test_retrieval_eval_missing_qrels_is_one_line_and_exit_2(tmp_path):
    data = _write_tiny_beir(str(tmp_path / "beir"))
    proc = run_script("retrieval_eval.py", ["--model=random_tiny", f"--data={data}", "--split=dev"], cwd=str(tmp_path))
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("retrieval_eval.py: Qrels of split 'dev' not found: ") and "(the splits there: test)" in line


@pytest.mark.parametrize("script,flag,says", [
    ("test_sts.py", "--no_such_flag=1", "Unknown command line flag 'no_such_flag'"),
    ("train.py", "--batch_size=many", "flag --batch_size=many: invalid literal for int()"),
])
def test_a_flag_absl_cannot_parse_is_one_line_and_exit_2(script, flag, says, tmp_path):
    proc = run_script(script, [flag], cwd=str(tmp_path))
    assert proc.returncode == 2, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"{script}: ") and says in last
    assert last.endswith("--helpshort lists the flags and their defaults.")
    assert "Traceback" not in proc.stderr and "FATAL" not in proc.stderr
    # and the advice works
    assert run_script(script, ["--helpshort"], cwd=str(tmp_path)).stdout.count("--") > 3


def test_a_defect_shows_its_traceback_and_exits_1_a_user_error_is_one_line(tmp_path, monkeypatch):
    """`resolve_model`, which test_sts.py calls first, is replaced by one that raises `raised[0]`: a defect
    or a user error deep in a run."""
    import common.loading.resolve as resolve

    raised = [ValueError("an internal invariant broke")]

    def resolve_model(*args, **kwargs):
        raise raised[0]

    monkeypatch.setattr(resolve, "resolve_model", resolve_model)
    data = write_sts_root(str(tmp_path / "data"))
    args = ["--model=random_tiny", f"--data_path={data}"]
    internal = run_script("test_sts.py", args, cwd=str(tmp_path))
    assert internal.returncode == 1, internal.stderr[-2000:]
    assert "Traceback" in internal.stderr and "in resolve_model" in internal.stderr
    assert internal.stderr.strip().splitlines()[-1] == "ValueError: an internal invariant broke"
    raised[0] = UserError("--model: no such model")
    user = run_script("test_sts.py", args, cwd=str(tmp_path))
    assert user.returncode == 2, user.stderr[-2000:]
    assert "Traceback" not in user.stderr
    assert user.stderr.strip().splitlines()[-1] == ("test_sts.py: --model: no such model "
                                                     "(--verbose shows the traceback)")


@pytest.mark.parametrize("script", ["train.py", "export.py", "senteval_eval.py"])
def test_scripts_start_without_tensorflow_noise(script):
    # --helpshort imports the script's modules, TensorFlow included (test_sts.py is checked where it
    # runs TensorFlow ops).
    proc = _helpshort(script)
    assert proc.stdout.count("--") > 3 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert not any(s in proc.stderr for s in TENSORFLOW_NOISE), proc.stderr


def test_the_python_api_loads_and_encodes_without_tensorflow_lines(tmp_path):
    """As in a notebook: `from common import SentenceModel` and a first encode print no TensorFlow start-up
    lines and none of its C++ E/W lines (the first ragged op's false "oneDNN supports DT_INT64 only on
    platforms with AVX-512" included), without TF_CPP_MIN_LOG_LEVEL set by the user."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    code = "from common import SentenceModel; print(SentenceModel('random_tiny').encode(['a b c', 'd']).shape)"
    proc = subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path), capture_output=True, text=True,
                          env={**env, "PYTHONPATH": ROOT})
    assert proc.returncode == 0 and proc.stdout.strip() == "(2, 32)", proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if re.match(r"[EWF]\d{4} ", line)]
    assert not lines and not any(s in proc.stderr for s in TENSORFLOW_NOISE), proc.stderr


LOAD_PLAIN = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401
emb = tf.saved_model.load(sys.argv[1] + "/embedding").signatures["serving_default"]
pair = tf.saved_model.load(sys.argv[1] + "/siamese").signatures["serving_default"]
e = emb(sentences=tf.constant(["a man plays a guitar .", ""]))["embeddings"]
p = pair(sentence1=tf.constant(["a man plays a guitar ."]), sentence2=tf.constant(["music is played ."]))
print(json.dumps({"emb": e.shape.as_list(), "logits": p["logits"].shape.as_list(),
                  "cos": float(p["cos_sim"][0]), "angular": float(p["angular_sim"][0])}))
"""


def test_train_then_load_plainly_then_score(tmp_path):
    from fixtures import write_senteval_snli

    data = write_sts_root(str(tmp_path / "data"))
    write_senteval_snli(data, "dev", n=60)
    artifacts = tmp_path / "artifacts"
    # Held-out pairs as MRPC ships them (byte-order mark, 0/1 "Quality"), mapped with the same
    # --columns spelling test_sts.py takes: label:Quality.
    dev = tmp_path / "dev.txt"
    dev.write_text("\ufeffQuality\t#1 String\t#2 String\n" + "".join(
        f"{y}\t{a}\t{b}\n" for y, a, b in [(1, "a man plays a guitar .", "a man plays music ."),
                                           (0, "a dog runs .", "stocks fell on monday ."),
                                           (1, "a woman cuts onions .", "someone cuts an onion ."),
                                           (0, "the sun is up .", "a man plays a guitar .")]), encoding="utf-8")
    proc = _run([os.path.join(ROOT, "train.py"), "--model=random_tiny", "--train_data=senteval:dev",
                 f"--data_path={data}", "--train_epochs=1", "--train_steps_per_epoch=3", "--batch_size=8",
                 "--max_seq_len=16", "--pos_sample_prec=5", f"--artifacts_dir={artifacts}", f"--dev_data={dev}",
                 "--dev_columns=sentence1:#1 String,sentence2:#2 String,label:Quality", "--eval_every=3"],
                cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_id = next(line.split(": ")[1] for line in proc.stdout.splitlines() if line.startswith("run ID:"))
    assert f"test_sts.py --model={run_id}" in proc.stdout
    model_dir = artifacts / "model" / run_id
    config = json.load(open(model_dir / "config.json"))
    assert config["config"]["pause"]["pos_sample_prec"] == 5 and config["data"]["pairs"] == 60
    assert 0 <= config["metrics"]["dev_average_precision"] <= 1  # judged on the user's binary pairs
    # It trained on SentEval's SNLI dev split: recorded, so that SNLI is not scored on it unknowingly.
    assert config["trained_on_evaluation_data"] == ["SNLI"]
    assert {"tensorflow", "keras"} <= set(config["packages"]) and config["data"]["fingerprint"]
    assert os.path.isdir(artifacts / "log" / run_id) and os.listdir(artifacts / "log" / run_id)
    plain = subprocess.run([sys.executable, "-c", LOAD_PLAIN, str(model_dir)], capture_output=True, text=True,
                           cwd=str(tmp_path), env={**os.environ, "PYTHONPATH": ""})
    assert plain.returncode == 0, plain.stderr[-2000:]
    shapes = json.loads(plain.stdout.strip().splitlines()[-1])
    assert shapes["emb"] == [2, 32] and shapes["logits"] == [1, 3] and -1 <= shapes["cos"] <= 1
    score = run_script("test_sts.py", [f"--model={run_id}", f"--data_path={data}", f"--artifacts_dir={artifacts}"],
                       cwd=str(tmp_path))
    assert score.returncode == 0, score.stderr[-2000:]
    assert json.load(open(artifacts / "test" / f"sts_{run_id}.json"))["model"] == run_id
    # Extending the finished run into a used --model_dir is refused before training; the advice works.
    extend = [f"--resume={run_id}", f"--artifacts_dir={artifacts}", "--train_epochs=2"]
    used = run_script("train.py", [*extend, f"--model_dir={model_dir}"], cwd=str(tmp_path))
    assert used.returncode == 2 and "Give --model_dir=<a new directory>" in used.stderr
    extended = run_script("train.py", [*extend, f"--model_dir={tmp_path / 'extended'}"], cwd=str(tmp_path))
    assert extended.returncode == 0, extended.stderr[-3000:]
    assert json.load(open(tmp_path / "extended" / "config.json"))["metrics"]["step"] == 6
    # Its "next:" command scores the extended model, not the run's first artifact.
    command = next(line for line in extended.stdout.splitlines() if line.startswith("next: python test_sts.py"))
    assert f"--model={tmp_path / 'extended'}" in command
    rescore = run_script("test_sts.py", command.split()[3:], cwd=str(tmp_path))
    assert rescore.returncode == 0 and "extended" in rescore.stdout, rescore.stderr[-2000:]


def test_train_rejects_a_flag_the_method_does_not_use(tmp_path):
    proc = run_script("train.py", ["--method=simcse", "--prior=0.5"], cwd=str(tmp_path))
    assert proc.returncode == 2
    assert "--method=simcse does not use --prior" in proc.stderr and "setting of pause" in proc.stderr
    assert "Traceback" not in proc.stderr and not os.path.exists(tmp_path / "artifacts")


def test_train_helpfull_groups_flags_by_method(tmp_path):
    proc = run_script("train.py", ["--helpfull"], cwd=str(tmp_path))
    out = proc.stdout + proc.stderr
    for group in ("train.py: every method", "method pause", "method declutr", "method simcse"):
        assert group in out, group
    # Per-method defaults are shown where they differ.
    assert "pause: 1024" in out and "declutr: 4" in out


def test_train_declutr_on_a_folder_of_files_says_what_it_uses_and_its_advice_works(tmp_path):
    from common.training import registry

    smoke = registry.get("declutr").smoke(str(tmp_path / "data"))  # spans of 8-32 words: documents need 128
    folder = tmp_path / "texts"
    for i, words in enumerate([300, 300, 80, 80, 80, 80]):
        path = folder / f"part{i % 2}" / f"doc{i}.{'md' if i % 2 else 'txt'}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(" ".join(f"d{i}w{j}" for j in range(k, min(k + 10, words)))
                                  for k in range(0, words, 10)) + "\n")
    (folder / ".notes.txt").write_text(" ".join(["hidden"] * 400) + "\n")
    # What the run says is a logged warning on the console, as the user sees it (run_script keeps it).
    args = ["--method=declutr", f"--train_data={folder}",
            f"--data_path={smoke['data_path']}", *[f"--{k}={smoke[k]}" for k in ("model", "batch_size", "max_seq_len",
                                                                                "min_span_len", "max_span_len")],
            "--train_epochs=1", "--train_steps_per_epoch=2", "--noeval_each_epoch",
            f"--artifacts_dir={tmp_path / 'artifacts'}"]

    def run(*extra):
        proc = run_script("train.py", [*args, *extra], cwd=str(tmp_path))
        assert proc.returncode == 0, proc.stderr[-3000:]
        run_id = next(line.split(": ")[1] for line in proc.stdout.splitlines() if line.startswith("run ID:"))
        return proc.stderr, json.load(open(tmp_path / "artifacts" / "model" / run_id / "config.json"))["data"]

    # One document per file, the hidden one left out; the console says what was skipped and what would use it.
    stderr, data = run()
    (line,) = [line for line in stderr.splitlines() if "DeCLUTR documents:" in line]
    assert line.startswith("W") and line.endswith(
        "Read 6 documents from 6 files; 2 are long enough for --num_anchors=2 --max_span_len=32 (at least 128 "
        "words); 4 are shorter (median 80 words) and skipped: --max_span_len=20 would use 6 of the 6.")
    assert {k: data[k] for k in ("documents_read", "documents", "skipped_short", "files", "suggestion",
                                 "suggestion_uses")} == {
        "documents_read": 6, "documents": 2, "skipped_short": 4, "files": 6, "suggestion": "--max_span_len=20",
        "suggestion_uses": 6}
    # The advice works: given as it was written, every document is used.
    stderr, data = run(*data["suggestion"].split())
    assert "DeCLUTR documents: Read 6 documents from 6 files; all are long enough for --num_anchors=2 " \
           "--max_span_len=20 (at least 80 words)." in stderr
    assert (data["documents"], data["skipped_short"], data["suggestion"]) == (6, 0, None)
