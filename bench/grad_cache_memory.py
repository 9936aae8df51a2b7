"""The largest unsup SimCSE batch that fits a memory limit, with and without gradient caching.

    .venv/bin/python -m bench.grad_cache_memory --rss_limit_mb=6000 --mini_batch_size=32 [--modes=cached]

For each mode (plain; `--mini_batch_size`), batch sizes double from --start_batch
until a training step no longer fits --rss_limit_mb (or --max_batch is reached).
Each try is a fresh process that builds SimCSE on --model (max length --max_seq_len,
every sentence of that length: random word pieces) through train.py's own model
builder, and times --steps optimizer steps after one warm-up step; the parent polls
its resident memory and kills it once it passes the limit (the machine itself never
runs out), and reads its peak RSS back (`getrusage(RUSAGE_CHILDREN)`). Prints a table
and writes --out (JSON). Not part of the test suite: run it on an otherwise idle
machine (minutes per try on a CPU for large batches).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time

from absl import app, flags

from common import cli  # first: it quiets TensorFlow's start-up

flags.DEFINE_string("model", "minilm", "Encoder spec.")
flags.DEFINE_integer("max_seq_len", 32, "Tokens per sentence ([CLS] and [SEP] included).")
flags.DEFINE_integer("rss_limit_mb", 6000, "Peak resident memory a try may use.", lower_bound=1)
flags.DEFINE_integer("mini_batch_size", 32, "Gradient caching's mini-batch (the cached mode).", lower_bound=1)
flags.DEFINE_integer("start_batch", 64, "First batch size tried (a multiple of --mini_batch_size).", lower_bound=1)
flags.DEFINE_integer("max_batch", 65536, "Largest batch size tried.", lower_bound=1)
flags.DEFINE_integer("steps", 2, "Timed optimizer steps per try (after one warm-up step).", lower_bound=1)
flags.DEFINE_multi_enum("modes", ["plain", "cached"], ["plain", "cached"], "Which modes to search.")
flags.DEFINE_float("timeout", 1800, "Seconds a try may take.")
flags.DEFINE_string("out", "artifacts/bench/grad_cache_memory.json", "Where the results are written.")
flags.DEFINE_integer("child_batch", 0, "Internal: run one try in this process with this batch size.")
flags.DEFINE_integer("child_mini_batch", 0, "Internal: the try's --mini_batch_size (0: plain).")
FLAGS = flags.FLAGS
POLL_SECONDS = 0.05


def _child() -> None:
    """One try: build, one warm-up step, --steps timed steps; prints a JSON line."""
    import numpy as np
    import tensorflow as tf

    from common.training.registry import build_config
    from common.training.runs import build_and_compile

    batch, mini = FLAGS.child_batch, FLAGS.child_mini_batch
    config = build_config("simcse", {"model": FLAGS.model, "max_seq_len": FLAGS.max_seq_len, "batch_size": batch,
                                     "mini_batch_size": mini, "train_steps_per_epoch": FLAGS.steps + 1,
                                     "train_data": ("unused.txt",)})
    config.validate()
    model = build_and_compile(config, tf.distribute.get_strategy())
    vocabulary = model.encoder.tokenizer.vocabulary_size
    rng = np.random.default_rng(0)
    shape = (batch, FLAGS.max_seq_len)
    tokens = {"token_ids": tf.constant(rng.integers(1000, vocabulary, shape), tf.int32),
              "padding_mask": tf.ones(shape, tf.int32), "segment_ids": tf.zeros(shape, tf.int32)}
    iterator = iter(tf.data.Dataset.from_tensors({"sentences": tokens}).repeat())
    model.make_train_function()
    model.train_function(iterator)  # traces and warms up
    start = time.perf_counter()
    for _ in range(FLAGS.steps):
        logs = model.train_function(iterator)
    seconds = (time.perf_counter() - start) / FLAGS.steps
    loss = float(np.asarray(logs["loss"]).reshape(-1)[0])
    print(json.dumps({"seconds_per_step": seconds, "loss": loss}))


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _try(batch: int, mini: int) -> dict:
    """Runs one try in a fresh process; kills it once its RSS passes the limit."""
    args = [sys.executable, "-m", "bench.grad_cache_memory", f"--child_batch={batch}", f"--child_mini_batch={mini}",
            f"--model={FLAGS.model}", f"--max_seq_len={FLAGS.max_seq_len}", f"--steps={FLAGS.steps}"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    start, peak, killed = time.time(), 0.0, None
    while proc.poll() is None:
        peak = max(peak, _rss_mb(proc.pid))
        if peak > FLAGS.rss_limit_mb:
            killed = f"RSS passed {FLAGS.rss_limit_mb} MB"
        elif time.time() - start > FLAGS.timeout:
            killed = f"took over {FLAGS.timeout:.0f} s"
        if killed:
            proc.kill()
            break
        time.sleep(POLL_SECONDS)
    stdout, stderr = proc.communicate()
    # ru_maxrss (KiB on Linux) is the largest of all waited-for children: it tells this
    # child's peak only when it is above every earlier one; the polled peak covers the rest.
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if after > before:
        peak = max(peak, after / 1024)
    result = {"batch_size": batch, "mini_batch_size": mini, "peak_rss_mb": round(peak, 1)}
    if killed or proc.returncode != 0:
        reason = killed or (stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        return {**result, "fits": False, "reason": reason}
    measured = json.loads(stdout.strip().splitlines()[-1])
    return {**result, "fits": peak <= FLAGS.rss_limit_mb, "seconds_per_step": round(measured["seconds_per_step"], 3),
            "ms_per_pair": round(1000 * measured["seconds_per_step"] / batch, 3), "loss": measured["loss"]}


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    if FLAGS.child_batch:
        _child()
        return
    if FLAGS.start_batch % FLAGS.mini_batch_size:
        raise app.UsageError("--start_batch must be a multiple of --mini_batch_size.")
    results = {}
    modes = {"plain": ("plain", 0), "cached": (f"cached, mini-batch {FLAGS.mini_batch_size}", FLAGS.mini_batch_size)}
    for mode, mini in (modes[m] for m in FLAGS.modes):
        tries, batch = [], FLAGS.start_batch
        while batch <= FLAGS.max_batch:
            tries.append(_try(batch, mini))
            print(f"{mode:<24} batch {batch:>6}: " + ", ".join(f"{k}={v}" for k, v in tries[-1].items()
                                                                if k not in ("batch_size", "mini_batch_size")))
            sys.stdout.flush()
            if not tries[-1]["fits"]:
                break
            batch *= 2
        fitting = [t["batch_size"] for t in tries if t["fits"]]
        results[mode] = {"largest_batch": max(fitting) if fitting else None, "tries": tries}
    summary = {"model": FLAGS.model, "max_seq_len": FLAGS.max_seq_len, "rss_limit_mb": FLAGS.rss_limit_mb,
               "max_batch": FLAGS.max_batch, "results": results}
    print(f"\n{FLAGS.model}, max length {FLAGS.max_seq_len}, RSS limit {FLAGS.rss_limit_mb} MB:")
    for mode, r in results.items():
        print(f"  {mode:<24} largest batch that fits: {r['largest_batch']}")
    os.makedirs(os.path.dirname(FLAGS.out) or ".", exist_ok=True)
    with open(FLAGS.out, "w") as f:
        json.dump(summary, f, indent=1)


if __name__ == "__main__":
    cli.run(main)
