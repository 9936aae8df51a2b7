import json
import os
import subprocess
import sys

import numpy as np
import pytest

from common.evaluation.clustering import cluster_scores, load_labelled_file, project_2d

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _groups(seed=0, n=60, k=4, dim=16):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, dim)) * 10
    labels = np.repeat([f"g{i}" for i in range(k)], n)
    points = np.concatenate([c + rng.normal(size=(n, dim)) for c in centres])
    return points, list(labels)


def test_well_separated_groups_score_near_one_and_shuffled_labels_near_zero():
    points, labels = _groups()
    assert cluster_scores(points, labels)["v_measure"] > 99
    shuffled = list(np.random.default_rng(1).permutation(labels))
    assert cluster_scores(points, shuffled)["v_measure"] < 5


def test_projection_shapes():
    points, _ = _groups(n=20)
    assert project_2d(points, "pca").shape == (80, 2)
    assert project_2d(points, "tsne").shape == (80, 2)
    with pytest.raises(ValueError, match="Unknown projection"):
        project_2d(points, "lda")


def test_labelled_file_errors_name_file_and_line(tmp_path):
    good = tmp_path / "texts.csv"
    good.write_text('text,label\n"hello, world",a\nbye,b\n')
    assert load_labelled_file(str(good)) == (["hello, world", "bye"], ["a", "b"])
    bad = tmp_path / "texts.tsv"
    bad.write_text("sentence\tlabel\nx\ty\n")
    with pytest.raises(ValueError, match=r"texts.tsv:1: header lacks column\(s\) \['text'\]"):
        load_labelled_file(str(bad))
    short = tmp_path / "short.tsv"
    short.write_text("label\ttext\na\tfine\nb\n")
    with pytest.raises(ValueError, match=r"short.tsv:3: expected at least 2 columns, got 1"):
        load_labelled_file(str(short))


def test_script_compares_models_and_writes_pictures(tmp_path):
    rows = [(f"what is the capital of country {i} ?", "LOC") for i in range(12)]
    rows += [(f"how many people live in town {i} ?", "NUM") for i in range(12)]
    data = tmp_path / "questions.tsv"
    data.write_text("text\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in rows))
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "cluster_eval.py"), "--models=tiny,tiny",
                           f"--dataset={data}", f"--artifacts_dir={tmp_path / 'artifacts'}"],
                          capture_output=True, text=True, cwd=str(tmp_path), env={**os.environ, "PYTHONPATH": ROOT})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "V-measure" in proc.stdout and proc.stdout.count("tiny ") == 2
    result = json.load(open(tmp_path / "artifacts" / "test" / "cluster_tiny_questions.json"))
    assert result["k"] == 2 and result["samples"] == 24 and 0 <= result["v_measure"] <= 100
    assert os.path.getsize(tmp_path / "artifacts" / "test" / "cluster_tiny_questions.png") > 5000
