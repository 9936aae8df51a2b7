"""A model and its exports side by side: STS-B test Spearman, size and encoding speed.

    taskset -c 0 .venv/bin/python -m bench.export_bench --data_path=../shared/data --models=minilm

For each model: the embedding SavedModel (a run's own `embedding/`, else one exported
here), the sentence-transformers folder reloaded by this toolkit (`--model=<folder>`),
the same folder through keras-hub's `BertTextEmbedder.from_preset`, and the TFLite
model in float32 and with int8 weights. Speed is sentences per second on a fixed
sample of STS-B test sentences in length-sorted batches, the variants timed in turn,
round after round, with the load average printed; run it pinned to one core (taskset).
Exports are written once under --work_dir and reused. Writes the dated results page and
results.json to --results_dir.
"""

from __future__ import annotations

import os
import random
import time

from absl import flags

from common import cli  # first: it quiets TensorFlow's start-up

from bench import harness

FLAGS = flags.FLAGS


def define_flags() -> None:
    """The benchmark's flags, defined when it runs, not at import (see bench/harness.py)."""
    flags.DEFINE_string("data_path", "data", "Data root (holds downstream/).")
    flags.DEFINE_list("models", ["minilm"], "Models to export and compare: specs, run IDs or run directories.")
    flags.DEFINE_string("artifacts_dir", "artifacts", "Artifacts root for run IDs.")
    flags.DEFINE_string("work_dir", "artifacts/export_bench", "Where the exports are written (and reused).")
    flags.DEFINE_integer("speed_sentences", 512, "STS-B test sentences timed per variant and round.", lower_bound=1)
    flags.DEFINE_integer("batch_size", 32, "Sentences per batch.", lower_bound=1)
    flags.DEFINE_integer("rounds", 3, "Timing rounds; each times every variant once, in turn.", lower_bound=1)
    flags.DEFINE_integer("seed", 0, "Seed of the speed sample.")
    flags.DEFINE_string("results_dir", "docs/benchmarks/export_bench", "Where the results page (README.md) and "
                        "results.json are written.")


def _size_mb(path: str) -> float:
    if os.path.isfile(path):
        return os.path.getsize(path) / 1e6
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files) / 1e6


def _exports(model: str, root: str):
    """Writes (once) and returns the paths of the SavedModel, HF folder and TFLite files of `model`."""
    from common.artifacts import model_path
    from common.loading.resolve import EMBEDDING_SUBDIR, resolve_encoder
    from common.export import ExportConfig, export_model
    from common.models.sources.artifact import is_artifact_dir
    from common.export.saved_model import export_encoder
    from common.export.tflite import TFLITE_FILE

    path = model_path(model, FLAGS.artifacts_dir)
    if path is not None and is_artifact_dir(path):
        saved_model = os.path.join(path, EMBEDDING_SUBDIR)
    else:
        saved_model = os.path.join(root, "savedmodel")
        if not os.path.exists(saved_model):
            export_encoder(resolve_encoder(model, FLAGS.artifacts_dir), saved_model)
    paths = {"savedmodel": saved_model}
    for key, fmt, quantize in (("hf", "sentence-transformers", "none"), ("tflite", "tflite", "none"),
                               ("int8", "tflite", "int8")):
        out = os.path.join(root, key)
        if not os.path.exists(out):
            export_model(ExportConfig(model=model, format=fmt, out=out, quantize=quantize,
                                      artifacts_dir=FLAGS.artifacts_dir))
        paths[key] = out
    paths["tflite_file"] = os.path.join(paths["tflite"], TFLITE_FILE)
    paths["int8_file"] = os.path.join(paths["int8"], TFLITE_FILE)
    return paths


def _keras_hub(folder: str):
    """keras-hub's text embedder on the folder: (embedding function, preprocessor)."""
    import keras_hub
    import tensorflow as tf

    embedder = keras_hub.models.BertTextEmbedder.from_preset(folder)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def embed(sentences):
        return embedder(embedder.preprocessor(sentences), training=False)

    return embed, embedder.preprocessor


def _token_ids(tokenize, sentences, batch_size: int = 256):
    """The ids (with [CLS] and [SEP], without padding) that `tokenize` gives each sentence."""
    import numpy as np
    import tensorflow as tf

    out = []
    for start in range(0, len(sentences), batch_size):
        tokens = tokenize(tf.constant(sentences[start:start + batch_size]))
        ids, mask = np.asarray(tokens["token_ids"]), np.asarray(tokens["padding_mask"]).astype(bool)
        out += [row[keep].tolist() for row, keep in zip(ids, mask)]
    return out


def _tflite_tokenize(tokenizer):
    """The TFLite model's tokenization (tensorflow-text's normaliser, the same packing)."""
    import tensorflow as tf
    import tensorflow_text as tf_text

    fast = tf_text.FastBertTokenizer(vocab=tokenizer.vocabulary, token_out_type=tf.int32, unknown_token="[UNK]",
                                     lower_case_nfd_strip_accents=tokenizer.config.lowercase)

    def tokenize(sentences):
        pieces = fast.tokenize(sentences)
        return tokenizer.pack_pieces(pieces.flat_values, pieces.row_splits)

    return tokenize


TABLE_HEAD = ("| model | variant | STS-B test Spearman | size (MB) | sentences/s (median) | sentences tokenized "
              "differently | max abs diff vs SavedModel: all; same tokens |\n"
              "| --- | --- | --- | --- | --- | --- | --- |")


def _compare(model: str):
    """Exports `model`, scores and times every variant; returns (header line, table rows, data)."""
    import numpy as np

    from common.data.sts import load_stsb
    from common.loading.embedding import embed_sentences
    from common.loading.resolve import resolve_encoder, resolve_model, safe_name
    from common.evaluation.sts import cosine_scores, spearman100
    from common.export.tflite import TFLiteEmbedder

    paths = _exports(model, os.path.join(FLAGS.work_dir, safe_name(model)))
    encoder = resolve_encoder(model, FLAGS.artifacts_dir)
    hub_fn, hub_preprocessor = _keras_hub(paths["hf"])
    tflite_tokenize = _tflite_tokenize(encoder.tokenizer)
    # name: (embedding function, size in MB, the variant's tokenization)
    variants = {
        "SavedModel": (resolve_model(paths["savedmodel"]).embed_fn, _size_mb(paths["savedmodel"]), encoder.tokenize),
        "HF export, toolkit (--model=<folder>)": (resolve_model(paths["hf"]).embed_fn, _size_mb(paths["hf"]),
                                                  encoder.tokenize),
        f"HF export, keras-hub (tanh GELU, pads to {hub_preprocessor.sequence_length})": (
            hub_fn, _size_mb(paths["hf"]), hub_preprocessor),
        "TFLite fp32": (TFLiteEmbedder(paths["tflite_file"], num_threads=1), _size_mb(paths["tflite_file"]),
                        tflite_tokenize),
        "TFLite int8 (dynamic range)": (TFLiteEmbedder(paths["int8_file"], num_threads=1),
                                        _size_mb(paths["int8_file"]), tflite_tokenize),
    }
    pairs = load_stsb(FLAGS.data_path, "test")
    unique = sorted(set(pairs.sentences1) | set(pairs.sentences2))
    index = {s: i for i, s in enumerate(unique)}
    left = [index[s] for s in pairs.sentences1]
    right = [index[s] for s in pairs.sentences2]
    sample = random.Random(FLAGS.seed).sample(unique, min(FLAGS.speed_sentences, len(unique)))

    header = (f"{model}: STS-B test ({len(pairs)} pairs, {len(unique)} sentences); speed on {len(sample)} of them, "
              f"batch {FLAGS.batch_size}, {FLAGS.rounds} rounds, 1 TFLite thread; load average at start "
              f"{os.getloadavg()[0]:.2f}")
    print(f"\n{header}", flush=True)
    reference_ids = _token_ids(encoder.tokenize, unique)
    scores, vectors, agree = {}, {}, {}
    for name, (fn, _, tokenize) in variants.items():
        vectors[name] = embed_sentences(fn, unique, FLAGS.batch_size, progress=False)
        scores[name] = spearman100(cosine_scores(vectors[name][left], vectors[name][right]), pairs.scores)
        agree[name] = np.array([a == b for a, b in zip(_token_ids(tokenize, unique), reference_ids)])
    rates = {name: [] for name in variants}
    loads = []
    for round_ in range(FLAGS.rounds):
        for name, (fn, _, _) in variants.items():
            embed_sentences(fn, sample[:FLAGS.batch_size], FLAGS.batch_size, progress=False)  # warm
            start = time.perf_counter()
            embed_sentences(fn, sample, FLAGS.batch_size, progress=False)
            rates[name].append(len(sample) / (time.perf_counter() - start))
        loads.append(os.getloadavg()[0])
        print(f"  round {round_ + 1}: load average {loads[-1]:.2f}", flush=True)
    reference = vectors["SavedModel"]
    rows, data = [], {}
    for name, (_, size, _) in variants.items():
        diff = np.abs(vectors[name] - reference).max(axis=1)
        rows.append(f"| {model} | {name} | {scores[name]:.2f} | {size:.1f} | {np.median(rates[name]):.1f} | "
                    f"{int((~agree[name]).sum())} | {diff.max():.1e}; {diff[agree[name]].max():.1e} |")
        data[name] = {"stsb_test": scores[name], "size_mb": size, "sentences_per_s": rates[name],
                      "tokenized_differently": int((~agree[name]).sum()), "max_abs_diff": float(diff.max()),
                      "max_abs_diff_same_tokens": float(diff[agree[name]].max())}
    print("\n".join([TABLE_HEAD, *rows]))
    return header, rows, {"variants": data, "round_load_averages": loads}


def main(argv):
    load = harness.Load()
    headers, rows, data = [], [], {}
    for model in FLAGS.models:
        header, model_rows, data[model] = _compare(model)
        headers.append(header)
        rows += model_rows
    body = [TABLE_HEAD, *rows, "", *[f"- {h}" for h in headers]]
    harness.write_page(FLAGS.results_dir, "Exports side by side", "bench.export_bench", body, {"models": data}, load,
                       ["Setting: STS-B test through each variant; speed in length-sorted batches, the variants "
                        "timed in turn, round after round (run it pinned to one core: taskset -c 0)"])
    print(f"written: {FLAGS.results_dir}/README.md, results.json")
    return 0


if __name__ == "__main__":
    define_flags()
    cli.run(main)
