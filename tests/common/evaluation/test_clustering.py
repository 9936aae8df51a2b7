import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from common.evaluation.clustering import (ClusterConfig, Clustering, assign_noise, cluster_embeddings, cluster_scores,
                                          core_distances, load_labelled_file, project_2d, reduce_dimensions,
                                          score_clustering)
from in_process import run_script

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


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


def test_kmeans_has_no_noise_and_its_assigned_scores_are_its_raw_ones():
    points, labels = _groups()
    scores = cluster_scores(points, labels, config=ClusterConfig(algorithm="kmeans", reduce="pca", reduce_dims=3))
    assert scores["noise_percent"] == 0 and scores["clusters"] == scores["k"] == 4
    assert scores["assigned_v_measure"] == scores["v_measure"] > 99


def test_hdbscan_finds_well_separated_groups_with_little_noise():
    points, labels = _groups()
    for reduce in ("none", "pca"):
        config = ClusterConfig(algorithm="hdbscan", reduce=reduce, reduce_dims=5, min_cluster_size=10)
        clustering = cluster_embeddings(points, 4, config)
        scores = cluster_scores(points, labels, config=config)
        assert scores["clusters"] == 4, (reduce, scores)
        assert scores["noise_percent"] < 10, (reduce, scores)
        assert scores["v_measure"] > 90 and scores["assigned_v_measure"] > 99, (reduce, scores)
        assert not (clustering.assigned == -1).any()
        members = clustering.raw != -1
        np.testing.assert_array_equal(clustering.assigned[members], clustering.raw[members])


def test_noise_points_and_shuffled_labels_lower_the_scores():
    points, labels = _groups()
    rng = np.random.default_rng(2)
    scattered = rng.uniform(points.min(0), points.max(0), size=(40, points.shape[1]))  # far from every group
    config = ClusterConfig(algorithm="hdbscan", min_cluster_size=10)
    scores = cluster_scores(np.concatenate([points, scattered]), labels + ["g0"] * 40, config=config)
    assert 10 < scores["noise_percent"] < 30  # the 40 scattered points (of 280) are noise
    shuffled = cluster_scores(points, list(rng.permutation(labels)), config=config)
    assert shuffled["v_measure"] < 5 and shuffled["assigned_v_measure"] < 5


def _reference_assignment(points, clusters, min_samples):
    """Brute force: each noise point to the cluster of the member minimising max(core(y), d(x, y))."""
    n = len(points)
    d = np.sqrt(((points[:, None, :] - points[None, :, :]) ** 2).sum(-1))  # [n, n]
    core = np.sort(d, axis=1)[:, min_samples - 1]  # column 0 is the point itself
    out = clusters.copy()
    for i in range(n):
        if clusters[i] == -1:
            best = min((max(core[j], d[i, j]), j) for j in range(n) if clusters[j] != -1)
            out[i] = clusters[best[1]]
    return out


def test_noise_goes_to_the_cluster_it_is_most_reachable_from_not_simply_the_nearest_point():
    # A dense cluster 0 at x <= 4.5 and a sparse cluster 1 at x >= 8. The noise point at x=6.4 is nearest to
    # cluster 1's member at 8 (distance 1.6), but that member's core distance (its 3rd nearest point, itself
    # counted: 10, at 2.0) makes it less reachable (2.0) than cluster 0's edge at 4.5 (distance 1.9, core 0.2).
    dense = np.array([[0.0], [0.1], [0.2], [4.3], [4.4], [4.5]])
    sparse = np.array([[8.0], [10.0], [12.0]])
    noise = np.array([[6.4]])
    points = np.concatenate([dense, sparse, noise])
    clusters = np.array([0] * 6 + [1] * 3 + [-1])
    assigned = assign_noise(points, clusters, min_samples=3)
    assert assigned[-1] == 0
    np.testing.assert_array_equal(assigned, _reference_assignment(points, clusters, 3))
    np.testing.assert_allclose(core_distances(points, 3)[[0, 1, 5, 6]], [0.2, 0.1, 0.2, 2.0])


def test_noise_assignment_equals_a_brute_force_reference_on_random_points():
    rng = np.random.default_rng(3)
    points = rng.normal(size=(120, 3))
    clusters = rng.integers(-1, 4, size=120)
    np.testing.assert_array_equal(assign_noise(points, clusters, 5, chunk=7),
                                  _reference_assignment(points, clusters, 5))
    all_noise = np.full(10, -1)
    np.testing.assert_array_equal(assign_noise(points[:10], all_noise, 3), all_noise)


def test_no_cluster_or_one_is_flagged_and_its_completeness_not_scored():
    # 15 scattered points and clusters of at least 10: HDBSCAN cannot find two, and finds none.
    points = np.random.default_rng(0).normal(size=(15, 8))
    labels = ["a", "b", "c"] * 5
    config = ClusterConfig(algorithm="hdbscan", min_cluster_size=10)
    clustering = cluster_embeddings(points, 3, config)
    assert (clustering.raw == -1).all()
    scores = score_clustering(clustering, labels)
    assert scores["degenerate"] == "no cluster" and scores["clusters"] == 0 and scores["noise_percent"] == 100
    assert scores["completeness"] is None and scores["assigned_completeness"] is None
    assert scores["v_measure"] == 0 and scores["homogeneity"] == 0
    assert scores["note"].startswith("no cluster found (every point is noise): completeness is not scored")
    # One cluster and some noise: the raw grouping (cluster + noise) is scored, the assigned one is not.
    one = Clustering(np.array([0] * 12 + [-1] * 3), np.zeros(15, int), points)
    scores = score_clustering(one, labels)
    assert scores["degenerate"] == "one cluster" and scores["completeness"] is not None
    assert scores["assigned_completeness"] is None and "smaller --min_cluster_size" in scores["note"]
    # Well-separated groups are not flagged.
    points, labels = _groups()
    assert cluster_scores(points, labels, config=config)["degenerate"] is None


def test_bad_cluster_settings_are_user_errors():
    points, labels = _groups(n=5)
    with pytest.raises(ValueError, match="--reduce_dims=40 is more than 16"):
        reduce_dimensions(points, ClusterConfig(reduce="pca", reduce_dims=40))
    with pytest.raises(ValueError, match="--algorithm must be one of kmeans, hdbscan, got 'dbscan'"):
        cluster_scores(points, labels, config=ClusterConfig(algorithm="dbscan"))
    with pytest.raises(ValueError, match="needs at least that many texts, got 20"):
        cluster_scores(points, labels, config=ClusterConfig(algorithm="hdbscan", min_cluster_size=30))


def test_umap_reduction_then_hdbscan_finds_the_groups():
    # UMAP is installed with the test requirements (requirements-dev.txt): the real path runs here.
    points, labels = _groups()
    config = ClusterConfig(algorithm="hdbscan", reduce="umap", reduce_dims=3, min_cluster_size=10)
    assert reduce_dimensions(points, config).shape == (240, 3)
    scores = cluster_scores(points, labels, config=config)
    assert scores["clusters"] == 4 and scores["assigned_v_measure"] > 99 and scores["noise_percent"] < 10
    assert project_2d(points, "umap").shape == (240, 2)


def test_without_umap_one_message_naming_the_make_target(monkeypatch):
    monkeypatch.setitem(sys.modules, "umap", None)  # `import umap` fails, as where it is not installed
    points, labels = _groups(n=5)
    config = ClusterConfig(algorithm="hdbscan", reduce="umap", reduce_dims=3, min_cluster_size=5)
    with pytest.raises(ValueError, match=r"--reduce=umap needs umap-learn, an optional extra that is not "
                                         r"installed; install it with `make umap`"):
        cluster_scores(points, labels, config=config)
    with pytest.raises(ValueError, match=r"--projection=umap needs umap-learn.*`make umap`"):
        project_2d(points, "umap")


def test_umap_pins_are_the_makefiles():
    """`make umap` (for an install without the test requirements) and `make setup` install the same versions."""
    makefile = open(os.path.join(ROOT, "Makefile")).read()
    pins = re.search(r"^UMAP_PACKAGES := (.+)$", makefile, re.M).group(1).split()
    installed = set(open(os.path.join(ROOT, "requirements-dev.txt")).read().split())
    installed |= set(open(os.path.join(ROOT, "constraints.txt")).read().split())
    assert len(pins) == 4 and not set(pins) - installed, set(pins) - installed


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


def _questions(tmp_path):
    rows = [(f"what is the capital of country {i} ?", "LOC") for i in range(12)]
    rows += [(f"how many people live in town {i} ?", "NUM") for i in range(12)]
    data = tmp_path / "questions.tsv"
    data.write_text("text\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in rows))
    return data


def _cluster_eval(tmp_path, *args):
    return subprocess.run([sys.executable, os.path.join(ROOT, "cluster_eval.py"), *args,
                           f"--artifacts_dir={tmp_path / 'artifacts'}"],
                          capture_output=True, text=True, cwd=str(tmp_path), env={**os.environ, "PYTHONPATH": ROOT})


def test_script_compares_models_and_clusterings_and_writes_pictures(tmp_path):
    data = _questions(tmp_path)
    proc = _cluster_eval(tmp_path, "--models=random_tiny,random_tiny", f"--dataset={data}",
                         "--algorithm=kmeans,hdbscan", "--reduce=none,pca", "--reduce_dims=4", "--min_cluster_size=5")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "V-measure" in proc.stdout and "noise %" in proc.stdout and proc.stdout.count("random_tiny ") == 8
    out = tmp_path / "artifacts" / "test"
    for name in ("kmeans-none", "kmeans-pca4", "hdbscan-none", "hdbscan-pca4"):
        result = json.load(open(out / f"cluster_random_tiny_questions_{name}.json"))
        assert result["k"] == 2 and result["samples"] == 24 and 0 <= result["v_measure"] <= 100, name
        assert 0 <= result["assigned_v_measure"] <= 100 and 0 <= result["noise_percent"] <= 100, name
        assert result["clustering"]["name"] == name and result["clustering"]["min_cluster_size"] == 5
        assert os.path.getsize(out / f"cluster_random_tiny_questions_{name}.png") > 5000
    assert json.load(open(out / "cluster_random_tiny_questions_kmeans-none.json"))["noise_percent"] == 0


def test_script_flags_a_clustering_that_finds_no_cluster(tmp_path):
    data = _questions(tmp_path)  # 24 texts: clusters of at least 20 cannot be two, and HDBSCAN finds none
    # In this process (tests/in_process.py); the test above runs the script's own process.
    proc = run_script("cluster_eval.py", ["--models=random_tiny", f"--dataset={data}", "--algorithm=hdbscan",
                                          "--min_cluster_size=20", f"--artifacts_dir={tmp_path / 'artifacts'}"],
                      cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    row = next(line.split() for line in proc.stdout.splitlines() if line.startswith("random_tiny "))
    assert row[2:4] == ["0!", "100.0"] and row[6] == "-" and row[9] == "-"
    assert "! random_tiny hdbscan-none: no cluster found (every point is noise): completeness is not scored" in (
        proc.stdout)
    result = json.load(open(tmp_path / "artifacts" / "test" / "cluster_random_tiny_questions_hdbscan-none.json"))
    assert result["degenerate"] == "no cluster" and result["completeness"] is None and result["note"]


def test_script_without_umap_exits_2_naming_the_make_target(tmp_path, monkeypatch):
    """The real UMAP path of the script runs in tests/simcse_tf/test_write_up_recipe.py; here umap is
    shadowed by None in sys.modules, so that importing it fails as where it is not installed."""
    data = _questions(tmp_path)
    monkeypatch.setitem(sys.modules, "umap", None)
    proc = run_script("cluster_eval.py", ["--models=random_tiny", f"--dataset={data}", "--algorithm=hdbscan",
                                          "--reduce=umap", f"--artifacts_dir={tmp_path / 'artifacts'}"],
                      cwd=str(tmp_path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    # The last line (TensorFlow may print a CUDA probe line before it on machines without a GPU).
    assert proc.stderr.strip().splitlines()[-1] == (
        "cluster_eval.py: --reduce=umap needs umap-learn, an optional extra that is not installed; install it "
        "with `make umap` (or use PCA). (--verbose shows the traceback)")
    assert not os.path.exists(tmp_path / "artifacts" / "test")  # it failed before encoding anything
