"""The SimCSE page's sentence-transformers recipe runs as written: its train.py and cluster_eval.py
commands, read from docs/methods/simcse.md, on a tiny random RoBERTa standing in for the
`distilroberta-base` folder (one pass over 40 sentences: 2 steps of 20), then HDBSCAN after UMAP."""

import json
import os
import re
import shlex

import pytest

from fixtures import write_hf_roberta_dir
from in_process import run_script

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = os.path.join(ROOT, "docs", "methods", "simcse.md")
SECTION = "## Unsupervised SimCSE on your own sentences, as the sentence-transformers write-up does"


def recipe_commands():
    """The section's shell commands, continuation lines joined."""
    text = open(PAGE, encoding="utf-8").read()
    assert SECTION in text, f"{PAGE} lost its section {SECTION!r}"
    block = re.search(r"```bash\n(.*?)```", text.split(SECTION, 1)[1].split("\n## ", 1)[0], re.S).group(1)
    return [line for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def _run(command, cwd):
    argv = shlex.split(command)
    assert argv[0] == "python"
    return run_script(argv[1], argv[2:], cwd=str(cwd))


# cluster_eval.py seeds UMAP so that its scores repeat; UMAP then says it runs on one thread.
@pytest.mark.filterwarnings("ignore:n_jobs value 1 overridden:UserWarning")
def test_the_write_up_recipe_trains_on_a_roberta_and_clusters_with_umap_and_hdbscan(tmp_path):
    train_cmd, cluster_cmd = recipe_commands()
    assert train_cmd.startswith("python train.py ") and cluster_cmd.startswith("python cluster_eval.py ")
    # The files the commands name, in the working directory: the model folder (positions for 256 tokens),
    # the sentences and the labelled sample.
    write_hf_roberta_dir(str(tmp_path / "distilroberta-base"), num_layers=1, prefixed=False, positions=258)
    topics = ["the weather is {} today .", "my team won the {} match .", "cook the {} for ten minutes .",
              "the {} train leaves at noon ."]
    words = ["sunny", "cold", "final", "home", "rice", "fish", "grey", "away", "beans", "early"]
    sentences = [topic.format(word) for word in words for topic in topics]  # 40, distinct
    (tmp_path / "my_sentences.txt").write_text("\n".join(sentences) + "\n")
    labelled = "".join(f"{sentence}\t{i % 4}\n" for i, sentence in enumerate(sentences))
    (tmp_path / "my_texts.tsv").write_text("text\tlabel\n" + labelled)

    trained = _run(train_cmd, tmp_path)
    assert trained.returncode == 0, trained.stderr[-3000:]
    run_id = next(line.split(": ")[1] for line in trained.stdout.splitlines() if line.startswith("run ID:"))
    record = json.load(open(tmp_path / "artifacts" / "model" / run_id / "config.json"))
    config = record["config"]
    assert config["encoder"]["model"] == "distilroberta-base" and config["encoder"]["max_seq_len"] == 256
    assert config["simcse"]["pooling"] == "mean" and config["run"]["batch_size"] == 20
    assert config["run"]["train_steps_per_epoch"] == 2  # one pass: 40 sentences in batches of 20

    clustered = _run(cluster_cmd.replace("<run ID>", run_id), tmp_path)
    assert clustered.returncode == 0, clustered.stderr[-3000:]
    result = json.load(open(tmp_path / "artifacts" / "test" / f"cluster_{run_id}_my_texts_hdbscan-umap5.json"))
    assert result["clustering"]["algorithm"] == "hdbscan" and result["clustering"]["reduce"] == "umap"
    assert result["samples"] == 40 and result["k"] == 4 and 0 <= result["v_measure"] <= 100
