"""How fast can `test_sts.py --model=minilm` possibly be on this machine? A floor from arithmetic
and this machine's own matmul speed, to set beside the measured end-to-end times.

    .venv/bin/python -m bench.sts_floor --data_path=../shared/data
    .venv/bin/python -m bench.sts_floor --data_path=../shared/data \\
        --vs_json=<bench.vs_sentence_transformers' results_dir>/results.json   # also: floor / theirs

It counts what the job must compute: every distinct sentence of STS12-16, STS-B and SICK-R
tokenized as the encoder does (truncated to its max length), batched as test_sts.py batches them
(sorted by token count, --batch_size per batch, each padded to its longest), and the matrix
products of the encoder's dense layers over those tokens (2 * layers * (4 H^2 + 2 H I) FLOPs per
token: Q, K, V, output, and the two feed-forward matrices) plus attention's two products
(2 * 2 * layers * T^2 * H per sequence of padded length T). It then times TensorFlow's own matmul
on this machine at the encoder's shapes in each precision, with a typical batch's rows and with
--large_rows rows (the best of --repeats runs, the faster of the two: a ceiling
that the whole model, with its attention, softmax, LayerNorm, GELU and casts, cannot beat;
attention's small per-head products are counted at the dense layers' rate, faster than they run) and
the import of TensorFlow in a fresh interpreter (which every test_sts.py run pays first). The
floor is import + FLOPs / best matmul rate: the time the job would take if everything but the
matmuls were free and the matmuls ran at their best speed. Run it on an idle machine. Writes the
dated results page and results.json to --results_dir.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

from absl import flags

from common import cli  # first: it quiets TensorFlow's start-up

from bench import harness
from common.errors import UserError

FLAGS = flags.FLAGS


def define_flags() -> None:
    """The benchmark's flags, defined when it runs, not at import (see bench/harness.py)."""
    flags.DEFINE_string("data_path", "data", "Data root (holds downstream/).")
    flags.DEFINE_string("model", "minilm", "Encoder spec (test_sts.py --model).")
    flags.DEFINE_integer("batch_size", 128, "test_sts.py's --batch_size.", lower_bound=1)
    flags.DEFINE_list("precisions", ["fp32", "bf16"], "Precisions whose matmul speed is measured.")
    flags.DEFINE_integer("large_rows", 8192, "Rows of the larger matmuls timed beside the typical batch's.",
                         lower_bound=1)
    flags.DEFINE_integer("repeats", 20, "Timed runs of each matmul; the fastest counts.", lower_bound=1)
    flags.DEFINE_integer("import_runs", 3, "Fresh interpreters timed importing TensorFlow; the fastest counts.",
                         lower_bound=1)
    flags.DEFINE_string("vs_json", None, "A bench.vs_sentence_transformers results.json: print the floor as a "
                        "fraction of its measured end-to-end sentence-transformers times.")
    flags.DEFINE_string("results_dir", "docs/benchmarks/sts_floor", "Where the results page (README.md) and "
                        "results.json are written.")


_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def job_tokens(counts, batch_size: int):
    """(real tokens, padded tokens, sum over sequences of padded length squared) of encoding
    sentences with these token counts in batches of `batch_size` sorted by count, each batch
    padded to its longest (what common.loading.embedding.embed_sentences does)."""
    ordered = sorted((int(c) for c in counts), reverse=True)
    padded = squares = 0
    for start in range(0, len(ordered), batch_size):
        batch = ordered[start:start + batch_size]
        padded += batch[0] * len(batch)
        squares += batch[0] ** 2 * len(batch)
    return sum(ordered), padded, squares


def encoder_flops(layers: int, hidden: int, intermediate: int, padded_tokens: int, padded_squares: int) -> float:
    """Matmul FLOPs of a BERT encoder over a job: dense layers per token, attention per sequence."""
    dense = 2.0 * layers * (4 * hidden * hidden + 2 * hidden * intermediate) * padded_tokens
    attention = 2.0 * 2.0 * layers * hidden * padded_squares
    return dense + attention


def matmul_rate(m: int, k: int, n: int, dtype: str, repeats: int) -> float:
    """Best FLOP/s of TensorFlow's matmul of [m, k] x [k, n] in `dtype` on this machine."""
    import tensorflow as tf

    a = tf.cast(tf.random.normal([m, k]), dtype)
    b = tf.cast(tf.random.normal([k, n]), dtype)
    fn = tf.function(tf.matmul)
    fn(a, b).numpy()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn(a, b).numpy()
        best = min(best, time.perf_counter() - start)
    return 2.0 * m * k * n / best


def import_seconds(runs: int) -> float:
    """Fastest wall time of `import tensorflow` in a fresh interpreter."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import tensorflow"], check=True, capture_output=True,
                       env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
        times.append(time.perf_counter() - start)
    return min(times)


def end_to_end_seconds(path: str) -> dict:
    """{precision: (toolkit median s, sentence-transformers median s)} of the end-to-end STS jobs
    in a bench.vs_sentence_transformers JSON.

    Raises:
        UserError: the file holds no per-precision end-to-end timings (a run with --measure
            leaving out sts, or one from before --sts_precisions).
    """
    import tensorflow as tf

    with tf.io.gfile.GFile(path) as f:
        record = json.load(f)
    sts = record.get("raw", {}).get("sts") if isinstance(record, dict) else None
    ok = isinstance(sts, dict) and sts and all(
        isinstance(e, dict) and e.get("toolkit") and e.get("sentence_transformers") for e in sts.values())
    if not ok:
        raise UserError(f"--vs_json={path}: expected a bench.vs_sentence_transformers JSON with end-to-end STS "
                         "timings per precision (raw.sts.<precision>.toolkit / .sentence_transformers); rerun it "
                         "with --measure including sts, or leave --vs_json out.")
    return {p: (statistics.median(x["seconds"] for x in e["toolkit"]),
                statistics.median(x["seconds"] for x in e["sentence_transformers"])) for p, e in sts.items()}


def main(argv):
    import numpy as np

    from common.data.sts import load_all
    from common.loading.embedding import sort_lengths
    from common.models.encoder import EncoderConfig, build_encoder

    unknown = sorted(set(FLAGS.precisions) - set(_DTYPES))
    if unknown:
        raise UserError(f"--precisions must be among {', '.join(_DTYPES)}; got {', '.join(unknown)}.")
    reference = end_to_end_seconds(FLAGS.vs_json) if FLAGS.vs_json else {}  # read first: fail before measuring
    sets = load_all(FLAGS.data_path)
    unique = sorted({s for group in sets.values() for ps in group.values() for s in ps.sentences1 + ps.sentences2})
    load = harness.Load()
    encoder = build_encoder(EncoderConfig(spec=FLAGS.model))
    config = encoder.backbone.config
    counts = sort_lengths(encoder.embedding_function(), unique)
    real, padded, squares = job_tokens(counts, FLAGS.batch_size)
    flops = encoder_flops(config.num_layers, config.hidden_size, config.intermediate_size, padded, squares)
    # The dense layers' shapes, with as many rows as a typical batch (batch_size sentences of the
    # median length) and as --large_rows (larger products run faster: the best of the two counts).
    h, i = config.hidden_size, config.intermediate_size
    rows = sorted({FLAGS.batch_size * int(np.median(counts)), FLAGS.large_rows})
    shapes = [(h, h), (h, i), (i, h)]
    weights = [4 * h * h, 2 * h * i / 2, 2 * h * i / 2]  # FLOP shares of the three shapes in a layer
    start_up = import_seconds(FLAGS.import_runs)
    lines = [f"{FLAGS.model}: {len(unique)} distinct sentences, {real} tokens, {padded} after padding at batch "
             f"{FLAGS.batch_size} sorted by token count; {flops / 1e12:.2f} TFLOP of matmuls "
             f"({config.num_layers} layers, hidden {h}, intermediate {i})",
             f"import tensorflow in a fresh interpreter: {start_up:.1f} s (fastest of {FLAGS.import_runs})"]
    for line in lines:
        print(line, flush=True)
    table = ["| precision | best matmul rate (GFLOP/s) | matmul time | TensorFlow import | floor |",
             "| --- | --- | --- | --- | --- |"]
    floors, measurements = {}, {}
    for precision in FLAGS.precisions:
        measured = {(m, k, n): matmul_rate(m, k, n, _DTYPES[precision], FLAGS.repeats)
                    for m in rows for k, n in shapes}
        rates = [max(measured[(m, k, n)] for m in rows) for k, n in shapes]
        # Time of the job's matmuls at each shape's best rate, shares weighted by FLOPs.
        seconds = sum(flops * w / sum(weights) / r for w, r in zip(weights, rates))
        floors[precision] = start_up + seconds
        measurements[precision] = {"gflops": {f"{m}x{k}x{n}": rate / 1e9 for (m, k, n), rate in measured.items()},
                                   "matmul_seconds": seconds, "floor_seconds": floors[precision]}
        lines.append(f"{precision}: matmul [M, K] x [K, N] GFLOP/s (best of {FLAGS.repeats}): "
                     + "; ".join(f"M={m}: " + ", ".join(f"{k}x{n} {measured[(m, k, n)] / 1e9:.0f}" for k, n in shapes)
                                 for m in rows)
                     + f" -> the job's matmuls at the best of these {seconds:.1f} s; floor (import + matmuls) "
                     f"{floors[precision]:.1f} s")
        print(lines[-1], flush=True)
        table.append(f"| {precision} | {min(rates) / 1e9:.0f}-{max(rates) / 1e9:.0f} | {seconds:.1f} s | "
                     f"{start_up:.1f} s | {floors[precision]:.1f} s |")
    lines.append(f"load average at the start: {load.load1:.2f}; at the end: "
                 f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(lines[-1])
    for precision, (ours, theirs) in reference.items():
        for floor_precision, floor in floors.items():
            lines.append(f"sentence-transformers' {precision} job: {theirs:.1f} s (median, {FLAGS.vs_json}); the "
                         f"toolkit's {ours:.1f} s = {ours / theirs:.2f} of it; the {floor_precision} floor {floor:.1f} "
                         f"s = {floor / theirs:.2f} of it")
            print(lines[-1])
    setting = [f"Setting: `test_sts.py --model={FLAGS.model}`'s job at batch {FLAGS.batch_size}; matmuls at "
               f"{', '.join(str(m) for m in rows)} rows, the best of {FLAGS.repeats} runs"]
    body = [*table, "", *[f"- {line}" for line in lines]]
    harness.write_page(FLAGS.results_dir, "The floor under test_sts.py's time", "bench.sts_floor", body,
                       {"sentences": len(unique), "tokens": real, "padded_tokens": padded, "flops": flops,
                        "tensorflow_import_seconds": start_up, "precisions": measurements,
                        "vs_json": FLAGS.vs_json, "reference_seconds": reference}, load, setting)
    print(f"written: {FLAGS.results_dir}/README.md, results.json")
    return 0


if __name__ == "__main__":
    define_flags()
    cli.run(main)
