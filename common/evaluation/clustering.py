"""Label-free judgement of embeddings, as in the SimCSE write-up: cluster the
embeddings of a labelled collection, score the clusters against the labels
(V-measure, homogeneity, completeness), and draw a 2-D picture coloured by label
and by cluster.

Two clusterings, each optionally after a dimension reduction (`reduce`: none,
PCA or UMAP to `reduce_dims` dimensions):

- k-means with k = the number of labels (seeded);
- HDBSCAN (scikit-learn's `sklearn.cluster.HDBSCAN`, `min_cluster_size`,
  `min_samples`), which finds its own number of clusters and leaves points in
  sparse regions as noise (label -1).

HDBSCAN's noise is scored twice. "raw": noise kept as one more cluster (-1).
"assigned": each noise point moved to its most probable cluster. scikit-learn has
no soft-membership API (the `hdbscan` package's `all_points_membership_vectors`
is not part of it, and `probabilities_` covers members only), so "most probable"
is defined with HDBSCAN's own density notion: a noise point x joins the cluster
of the member y from which it is most reachable, i.e. with the smallest
reachability distance max(core_distance(y), d(x, y)), where core_distance(y) is
the distance from y to its `min_samples`-th nearest neighbour (y itself counted,
as scikit-learn does) among all points, in the space HDBSCAN clustered. It is
the mutual reachability distance of HDBSCAN without x's own core distance, which
is the same for every candidate y and would only produce ties.

A clustering that finds no cluster (every point noise) or a single one puts (nearly) every
point in one group, and any single group is 100 % complete: such a result is flagged
(`degenerate`, with a `note` saying what to change) and its completeness is not scored.

UMAP is the optional umap-learn package (`make umap`); everything else is
scikit-learn.
"""

from __future__ import annotations

import csv
import dataclasses
import io
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from common.data.files import open_data_file
from common.errors import UserError

PROJECTIONS = ("pca", "tsne", "umap")
ALGORITHMS = ("kmeans", "hdbscan")
REDUCTIONS = ("none", "pca", "umap")
NOISE = -1
# The optional extra that provides UMAP: `make umap` installs exactly these (see the Makefile).
UMAP_MAKE_TARGET = "make umap"


def require_umap(what: str):
    """The `umap` module, or a UserError naming what needs it and how to install it.

    Args:
        what: str. The setting that needs UMAP, for the message (e.g. "--reduce=umap").
    """
    try:
        import umap
    except ImportError:
        raise UserError(f"{what} needs umap-learn, an optional extra that is not installed; install it with "
                         f"`{UMAP_MAKE_TARGET}` (or use PCA).") from None
    return umap


@dataclasses.dataclass(frozen=True)
class ClusterConfig:
    """How to cluster a collection of embeddings.

    Attributes:
        algorithm: str. "kmeans" (k = number of labels) or "hdbscan". Defaults to "kmeans".
        reduce: str. "none", "pca" or "umap": reduce the embeddings to `reduce_dims`
            dimensions before clustering. Defaults to "none".
        reduce_dims: int. Dimensions after the reduction. Defaults to 5.
        umap_neighbors: int. UMAP's `n_neighbors` (UMAP uses cosine distance and
            `min_dist=0`, which packs dense groups tightly for clustering). Defaults to 15.
        min_cluster_size: int. HDBSCAN's smallest cluster. Defaults to 10.
        min_samples: int or None. HDBSCAN's neighbourhood size for core distances;
            None means `min_cluster_size` (scikit-learn's default). Defaults to None.
        seed: int. Seed of k-means and of the reductions. Defaults to 0.
    """

    algorithm: str = "kmeans"
    reduce: str = "none"
    reduce_dims: int = 5
    umap_neighbors: int = 15
    min_cluster_size: int = 10
    min_samples: Optional[int] = None
    seed: int = 0

    def validate(self) -> "ClusterConfig":
        """Raises UserError, naming the setting, for a value outside its range."""
        if self.algorithm not in ALGORITHMS:
            raise UserError(f"--algorithm must be one of {', '.join(ALGORITHMS)}, got {self.algorithm!r}.")
        if self.reduce not in REDUCTIONS:
            raise UserError(f"--reduce must be one of {', '.join(REDUCTIONS)}, got {self.reduce!r}.")
        if self.reduce_dims < 1:
            raise UserError(f"--reduce_dims must be at least 1, got {self.reduce_dims}.")
        if self.min_cluster_size < 2:
            raise UserError(f"--min_cluster_size must be at least 2, got {self.min_cluster_size}.")
        if self.min_samples is not None and self.min_samples < 1:
            raise UserError(f"--min_samples must be at least 1, got {self.min_samples}.")
        return self

    @property
    def name(self) -> str:
        """e.g. "hdbscan-umap5", "kmeans-none": names result files and table rows."""
        return f"{self.algorithm}-{self.reduce}{self.reduce_dims if self.reduce != 'none' else ''}"


@dataclasses.dataclass(frozen=True)
class Clustering:
    """The clusters of a collection.

    Attributes:
        raw: np.ndarray. [n] int cluster of each point; -1 is HDBSCAN's noise.
        assigned: np.ndarray. [n] int, `raw` with every noise point moved to its
            most probable cluster (see the module docstring); equals `raw` for k-means.
        space: np.ndarray. [n, d] the (reduced) points that were clustered.
    """

    raw: np.ndarray
    assigned: np.ndarray
    space: np.ndarray


def load_labelled_file(path: str, text_column: str = "text",
                       label_column: str = "label") -> Tuple[List[str], List[str]]:
    """Texts and labels from a TSV (.tsv/.txt) or CSV (.csv) file with a header row.

    Raises:
        UserError: naming the file and line for a missing column or a short row.
    """
    content = open_data_file(path)
    delimiter = "," if path.endswith(".csv") else "\t"
    rows = list(csv.reader(io.StringIO(content), delimiter=delimiter))
    if not rows:
        raise UserError(f"{path}: empty file; expected a header with {text_column!r} and {label_column!r}.")
    header = rows[0]
    missing = [c for c in (text_column, label_column) if c not in header]
    if missing:
        raise UserError(f"{path}:1: header lacks column(s) {missing}; got {header}.")
    t, y = header.index(text_column), header.index(label_column)
    texts, labels = [], []
    for line_no, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        if len(row) <= max(t, y):
            raise UserError(f"{path}:{line_no}: expected at least {max(t, y) + 1} columns, got {len(row)}.")
        texts.append(row[t])
        labels.append(row[y])
    if not texts:
        raise UserError(f"{path}: no rows after the header.")
    return texts, labels


def load_senteval_task(data_path: str, task: str, split: str = "train") -> Tuple[List[str], List[str]]:
    """Sentences and class names of a SentEval classification task (e.g. TREC's 6 coarse classes)."""
    from common.evaluation.senteval.tasks import SentenceSplit, load_task

    data = load_task(data_path, task)
    if split not in data.splits and "all" in data.splits:
        split = "all"
    part = data.splits.get(split)
    if not isinstance(part, SentenceSplit):
        raise UserError(f"{task} has no single-sentence split {split!r}; splits: {sorted(data.splits)}.")
    names = data.label_names or tuple(str(i) for i in range(data.nclasses))
    return list(part.sentences), [names[i] for i in part.labels.tolist()]


# === Reduction and clustering ===


def reduce_dimensions(embeddings: np.ndarray, config: ClusterConfig) -> np.ndarray:
    """[n, dim] -> [n, reduce_dims] by PCA or UMAP; unchanged for `reduce="none"`.

    Raises:
        UserError: for UMAP without umap-learn (naming `make umap`), or more
            dimensions than the data has.
    """
    x = np.asarray(embeddings, np.float64)
    if config.reduce == "none":
        return x
    if config.reduce_dims > min(x.shape):
        raise UserError(f"--reduce_dims={config.reduce_dims} is more than {min(x.shape)}, the smaller of the number "
                         f"of texts ({x.shape[0]}) and the embedding size ({x.shape[1]}).")
    if config.reduce == "pca":
        from sklearn.decomposition import PCA

        return PCA(n_components=config.reduce_dims, random_state=config.seed).fit_transform(x)
    if config.reduce == "umap":
        umap = require_umap("--reduce=umap")
        reducer = umap.UMAP(n_components=config.reduce_dims, n_neighbors=min(config.umap_neighbors, len(x) - 1),
                            min_dist=0.0, metric="cosine", random_state=config.seed)
        return np.asarray(reducer.fit_transform(x), np.float64)
    raise UserError(f"--reduce must be one of {', '.join(REDUCTIONS)}, got {config.reduce!r}.")


def core_distances(points: np.ndarray, min_samples: int) -> np.ndarray:
    """[n] distance of each point to its `min_samples`-th nearest neighbour, the point itself counted
    (scikit-learn HDBSCAN's core distance)."""
    from sklearn.neighbors import NearestNeighbors

    k = min(min_samples, len(points))
    distances, _ = NearestNeighbors(n_neighbors=k).fit(points).kneighbors(points)  # [n, k], column 0 is the point
    return distances[:, -1]


def assign_noise(points: np.ndarray, clusters: np.ndarray, min_samples: int, chunk: int = 1024) -> np.ndarray:
    """Moves every noise point (-1) to the cluster of the member it is most reachable from.

    The reachability distance of x from a member y is max(core_distance(y), d(x, y)), Euclidean, with
    core distances over all points (see the module docstring).

    Args:
        points: np.ndarray. [n, d] the points HDBSCAN clustered.
        clusters: np.ndarray. [n] int, -1 for noise.
        min_samples: int. HDBSCAN's `min_samples` (as resolved: never None).
        chunk: int. Noise points per block of distances (bounds memory). Defaults to 1024.

    Returns:
        [n] int clusters without noise; `clusters` itself (a copy) when it has no
        noise or no cluster at all.
    """
    clusters = np.asarray(clusters)
    out = clusters.copy()
    noise = np.flatnonzero(clusters == NOISE)
    members = np.flatnonzero(clusters != NOISE)
    if not len(noise) or not len(members):
        return out
    points = np.asarray(points, np.float64)
    member_core = core_distances(points, min_samples)[members]  # [m]
    member_points = points[members]  # [m, d]
    for start in range(0, len(noise), chunk):
        rows = noise[start:start + chunk]
        squared = ((points[rows] ** 2).sum(1)[:, None] - 2 * points[rows] @ member_points.T
                   + (member_points ** 2).sum(1)[None, :])  # [c, m]
        reach = np.maximum(np.sqrt(np.maximum(squared, 0.0)), member_core[None, :])  # [c, m]
        out[rows] = clusters[members[np.argmin(reach, axis=1)]]
    return out


def cluster_embeddings(embeddings: np.ndarray, n_labels: int, config: ClusterConfig) -> Clustering:
    """Reduces (per `config.reduce`) and clusters the embeddings.

    Args:
        embeddings: np.ndarray. [n, dim].
        n_labels: int. k of k-means (HDBSCAN ignores it).
        config: ClusterConfig.
    """
    config.validate()
    space = reduce_dimensions(embeddings, config)
    if config.algorithm == "kmeans":
        from sklearn.cluster import KMeans

        raw = KMeans(n_clusters=n_labels, n_init=10, random_state=config.seed).fit_predict(space)
        return Clustering(raw, raw.copy(), space)
    from sklearn.cluster import HDBSCAN

    min_samples = config.min_samples or config.min_cluster_size
    if len(space) < max(config.min_cluster_size, min_samples):
        raise UserError(f"HDBSCAN with --min_cluster_size={config.min_cluster_size} and --min_samples={min_samples} "
                         f"needs at least that many texts, got {len(space)}.")
    raw = HDBSCAN(min_cluster_size=config.min_cluster_size, min_samples=min_samples, copy=True).fit_predict(space)
    return Clustering(raw, assign_noise(space, raw, min_samples), space)


def score_clustering(clustering: Clustering, labels: Sequence[str]) -> Dict[str, Any]:
    """The clusters scored against the labels.

    Returns:
        Dict with `v_measure`, `homogeneity`, `completeness` (x100; noise kept as
        its own cluster), the same with `assigned_` (noise moved to its most
        probable cluster), `noise_percent`, `clusters` (found, noise excluded),
        `k` (labels), `samples`, and `degenerate`: None, or "no cluster" / "one
        cluster" with a `note`. A completeness whose grouping is a single group
        (all noise; one cluster once noise is assigned) is None: it would be 100
        for any data.
    """
    from sklearn.metrics import homogeneity_completeness_v_measure

    labels = list(labels)
    scores: Dict[str, Any] = {}
    for prefix, clusters in (("", clustering.raw), ("assigned_", clustering.assigned)):
        h, c, v = homogeneity_completeness_v_measure(labels, clusters)
        single = len(np.unique(clusters)) < 2
        scores.update({f"{prefix}v_measure": 100 * v, f"{prefix}homogeneity": 100 * h,
                       f"{prefix}completeness": None if single else 100 * c})
    found = set(clustering.raw.tolist()) - {NOISE}
    degenerate = DEGENERATE.get(len(found))
    if degenerate:
        scores["note"] = (f"{degenerate} found ({'every point is noise' if not found else 'all points in it or noise'}"
                          "): completeness is not scored, as one group is complete whatever the labels. For "
                          "HDBSCAN, try a smaller --min_cluster_size or --min_samples, or --reduce=pca|umap.")
    return {**scores, "noise_percent": 100 * float(np.mean(clustering.raw == NOISE)), "clusters": len(found),
            "k": len(set(labels)), "samples": len(labels), "degenerate": degenerate}


# Clusterings that put every point in one group (noise aside): clusters found -> the flag.
DEGENERATE = {0: "no cluster", 1: "one cluster"}


def cluster_scores(embeddings: np.ndarray, labels: Sequence[str], seed: int = 0,
                   config: Optional[ClusterConfig] = None) -> Dict[str, Any]:
    """Clusters the embeddings (k-means with k = number of labels unless `config` says
    otherwise) and scores them against the labels (see `score_clustering`).

    Args:
        embeddings: np.ndarray. [n, dim].
        labels: sequence of str. [n].
        seed: int. Used when `config` is None. Defaults to 0.
        config: ClusterConfig or None. Defaults to k-means on the raw embeddings.
    """
    k = len(set(labels))
    if k < 2:
        raise UserError(f"Clustering needs at least 2 labels, got {k}.")
    config = config or ClusterConfig(seed=seed)
    return score_clustering(cluster_embeddings(embeddings, k, config), labels)


# === Pictures ===


def project_2d(embeddings: np.ndarray, method: str = "pca", seed: int = 0) -> np.ndarray:
    """[n, dim] -> [n, 2] with PCA, t-SNE (scikit-learn) or UMAP (the optional extra)."""
    x = np.asarray(embeddings, np.float64)
    if method == "pca":
        from sklearn.decomposition import PCA

        return PCA(n_components=2, random_state=seed).fit_transform(x)
    if method == "tsne":
        from sklearn.manifold import TSNE

        return TSNE(n_components=2, random_state=seed, init="pca",
                    perplexity=min(30.0, (len(x) - 1) / 3)).fit_transform(x)
    if method == "umap":
        umap = require_umap("--projection=umap")
        return umap.UMAP(n_components=2, random_state=seed).fit_transform(x)
    raise UserError(f"Unknown projection {method!r}; expected one of {PROJECTIONS}.")


# Legends list at most this many groups (HDBSCAN can find hundreds of clusters).
_LEGEND_MAX = 20


def _scatter(ax, points: np.ndarray, groups: np.ndarray, title: str, noise=None) -> None:
    import matplotlib

    names = sorted(set(groups.tolist()) - ({noise} if noise is not None else set()), key=str)
    cmap = matplotlib.colormaps["tab10" if len(names) <= 10 else "tab20"]
    if noise is not None and (groups == noise).any():
        sel = groups == noise
        ax.scatter(points[sel, 0], points[sel, 1], s=4, alpha=0.3, color="lightgrey", label=f"noise ({sel.sum()})")
    for i, name in enumerate(names):
        sel = groups == name
        ax.scatter(points[sel, 0], points[sel, 1], s=6, alpha=0.6, color=cmap(i % cmap.N),
                   label=f"{name} ({sel.sum()})")
    ax.set_title(title, fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])
    if len(names) <= _LEGEND_MAX:
        ax.legend(markerscale=3, fontsize=7, loc="best")


def plot_projection(points: np.ndarray, labels: Sequence[str], path: str, title: str,
                    clusters: Optional[np.ndarray] = None, cluster_title: str = "") -> None:
    """Writes a PNG scatter plot of `points` coloured by label and, given `clusters`,
    beside it the same points coloured by cluster (noise, -1, in grey).

    Args:
        points: np.ndarray. [n, 2].
        labels: sequence of str. [n].
        path: str. The PNG to write (local or gs://).
        title: str. The figure's title.
        clusters: np.ndarray or None. [n] int clusters, -1 for noise.
        cluster_title: str. The cluster panel's title.
    """
    from common.figures import new_figure, write_png

    panels = 1 if clusters is None else 2
    fig = new_figure((7 * panels, 6.5), dpi=110)
    axes = fig.subplots(1, panels, squeeze=False)[0]
    _scatter(axes[0], points, np.asarray(labels), "by label")
    if clusters is not None:
        _scatter(axes[1], points, np.asarray(clusters), cluster_title or "by cluster", noise=NOISE)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    write_png(fig, path)
