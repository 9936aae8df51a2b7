"""Label-free judgement of embeddings, as in the SimCSE write-up: k-means on the
embeddings of a labelled collection, V-measure against the labels, and a 2-D
picture coloured by label."""

from __future__ import annotations

import csv
import io
from typing import Dict, List, Sequence, Tuple

import numpy as np

from common.data.files import open_data_file

PROJECTIONS = ("pca", "tsne", "umap")


def load_labelled_file(path: str, text_column: str = "text", label_column: str = "label") -> Tuple[List[str], List[str]]:
    """Texts and labels from a TSV (.tsv/.txt) or CSV (.csv) file with a header row.

    Raises:
        ValueError: naming the file and line for a missing column or a short row.
    """
    content = open_data_file(path)
    delimiter = "," if path.endswith(".csv") else "\t"
    rows = list(csv.reader(io.StringIO(content), delimiter=delimiter))
    if not rows:
        raise ValueError(f"{path}: empty file; expected a header with {text_column!r} and {label_column!r}.")
    header = rows[0]
    missing = [c for c in (text_column, label_column) if c not in header]
    if missing:
        raise ValueError(f"{path}:1: header lacks column(s) {missing}; got {header}.")
    t, y = header.index(text_column), header.index(label_column)
    texts, labels = [], []
    for line_no, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        if len(row) <= max(t, y):
            raise ValueError(f"{path}:{line_no}: expected at least {max(t, y) + 1} columns, got {len(row)}.")
        texts.append(row[t])
        labels.append(row[y])
    if not texts:
        raise ValueError(f"{path}: no rows after the header.")
    return texts, labels


def load_senteval_task(data_path: str, task: str, split: str = "train") -> Tuple[List[str], List[str]]:
    """Sentences and class names of a SentEval classification task (e.g. TREC's 6 coarse classes)."""
    from common.evaluation.senteval.tasks import SentenceSplit, load_task

    data = load_task(data_path, task)
    if split not in data.splits and "all" in data.splits:
        split = "all"
    part = data.splits.get(split)
    if not isinstance(part, SentenceSplit):
        raise ValueError(f"{task} has no single-sentence split {split!r}; splits: {sorted(data.splits)}.")
    names = data.label_names or tuple(str(i) for i in range(data.nclasses))
    return list(part.sentences), [names[i] for i in part.labels.tolist()]


def cluster_scores(embeddings: np.ndarray, labels: Sequence[str], seed: int = 0) -> Dict[str, float]:
    """k-means with k = number of labels (seeded), scored against the labels.

    Returns:
        Dict with `v_measure`, `homogeneity`, `completeness` (x100), `k`, `samples`.
    """
    from sklearn.cluster import KMeans
    from sklearn.metrics import homogeneity_completeness_v_measure

    k = len(set(labels))
    if k < 2:
        raise ValueError(f"Clustering needs at least 2 labels, got {k}.")
    assignments = KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(np.asarray(embeddings, np.float64))
    h, c, v = homogeneity_completeness_v_measure(list(labels), assignments)
    return {"v_measure": 100 * v, "homogeneity": 100 * h, "completeness": 100 * c, "k": k, "samples": len(labels)}


def project_2d(embeddings: np.ndarray, method: str = "pca", seed: int = 0) -> np.ndarray:
    """[n, dim] -> [n, 2] with PCA, t-SNE (scikit-learn) or UMAP (when installed)."""
    x = np.asarray(embeddings, np.float64)
    if method == "pca":
        from sklearn.decomposition import PCA

        return PCA(n_components=2, random_state=seed).fit_transform(x)
    if method == "tsne":
        from sklearn.manifold import TSNE

        return TSNE(n_components=2, random_state=seed, init="pca", perplexity=min(30.0, (len(x) - 1) / 3)).fit_transform(x)
    if method == "umap":
        try:
            import umap
        except ImportError:
            raise ValueError("--projection=umap needs the umap-learn package (pip install umap-learn).") from None
        return umap.UMAP(n_components=2, random_state=seed).fit_transform(x)
    raise ValueError(f"Unknown projection {method!r}; expected one of {PROJECTIONS}.")


def plot_projection(points: np.ndarray, labels: Sequence[str], path: str, title: str) -> None:
    """Writes a PNG scatter plot of `points` coloured by label.

    Uses a `Figure` with its own Agg canvas: no pyplot state, and the caller's
    matplotlib backend is left alone.
    """
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    names = sorted(set(labels))
    cmap = matplotlib.colormaps["tab10" if len(names) <= 10 else "tab20"]
    fig = Figure(figsize=(7, 6), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    labels = np.asarray(labels)
    for i, name in enumerate(names):
        sel = labels == name
        ax.scatter(points[sel, 0], points[sel, 1], s=6, alpha=0.6, color=cmap(i % cmap.N), label=f"{name} ({sel.sum()})")
    ax.set_title(title)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.legend(markerscale=3, fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(path)
