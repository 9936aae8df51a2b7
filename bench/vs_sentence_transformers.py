"""This toolkit against sentence-transformers (PyTorch), side by side, on MiniLM on CPU.

    make reference-env          # once: PyTorch (CPU) + sentence-transformers in .venv-ref
    .venv/bin/python -m bench.vs_sentence_transformers --data_path=../shared/data

Needs an otherwise idle machine: it refuses to start when the 1-minute load average exceeds
--max_load (PyTorch slows 3-6x on an oversubscribed machine, TensorFlow less, so a loaded
machine skews the ratio itself); --allow_loaded runs anyway and marks the table LOADED. While it
runs, the CPU time of other processes (the machine's, from /proc/stat, minus the benchmark's own)
is measured between readings; above --max_load cores the table is marked LOADED as well.
Not part of the test suite.

The toolkit runs in this process; sentence-transformers runs in a persistent worker subprocess
started with the reference environment's Python (bench/st_worker.py, which imports nothing of
this project and times its own work with time.perf_counter after a warm-up). Each round runs
every figure on the toolkit, then on sentence-transformers (A B A B ...), with the same
sentences, batch sizes, max lengths and thread counts (--threads: TensorFlow intra/inter-op and
torch intra/inter-op pools, OMP_NUM_THREADS/MKL_NUM_THREADS). Figures, median and min-max over
--rounds:

  a. encoding STS-B test (all 2,758 sentences, batch 64), fp32 and bf16: sentences/s; the fp32
     embeddings of the two sides are compared (max abs diff).
  b. an unsupervised-SimCSE training step, batch 64, max length 32 and 64, fp32 and bf16:
     pairs/s. Toolkit: SimcseModel's train_step (mean pooling, temperature 0.05) through Keras'
     train function, AdamW; sentence-transformers: MultipleNegativesRankingLoss (scale 20) over
     (s, s) pairs in model.train(), torch AdamW, a manual zero_grad/forward/backward/step loop.
     Both sides get the same batches, tokenized before the clock starts.
  c. `test_sts.py --model=minilm --precision=P` end to end (a subprocess of this Python, wall
     time including start-up and model load) against the same job in sentence-transformers
     (`st_worker.py --sts --precision=P`, same sets, same batch size and max length), for P in
     --sts_precisions (fp32 and bf16); the seven headline Spearman numbers of both are printed,
     compared in fp32, and each side's bf16 against its own fp32.

bf16: the toolkit's is `EncoderConfig(precision="bf16")` (`toolkit_encoder`: Keras' mixed_bfloat16
on the backbone's layers, float32 outputs), sentence-transformers' is
torch.autocast("cpu", dtype=torch.bfloat16).

Writes the dated results page (the table) and results.json (every raw timing, load averages,
versions) to --results_dir, and prints the table.
"""

from __future__ import annotations

import glob
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

from absl import app, flags

from common import cli

from bench import harness
from bench.harness import machine_busy_ticks, other_cores, process_ticks

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRECISIONS = ("fp32", "bf16")
MEASUREMENTS = ("encode", "train", "sts")
HEADLINE = ("sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr")

FLAGS = flags.FLAGS


def define_flags() -> None:
    """The benchmark's flags, defined when it runs, not at import (see bench/harness.py)."""
    flags.DEFINE_string("data_path", "data", "Data root (holds downstream/).")
    flags.DEFINE_string("sts_data_path", None, "Data root of the end-to-end STS job; defaults to --data_path.")
    flags.DEFINE_string("reference_python", ".venv-ref/bin/python",
                        "Python of the reference environment (`make reference-env`).")
    flags.DEFINE_string("results_dir", "docs/benchmarks/vs_sentence_transformers", "Where the results page "
                        "(README.md, the table) and results.json (every raw timing, load averages, versions) "
                        "are written.")
    flags.DEFINE_integer("threads", 2, "Threads of both sides (intra- and inter-op).", lower_bound=1)
    flags.DEFINE_integer("rounds", 5, "Rounds; each runs every figure on both sides.", lower_bound=1)
    flags.DEFINE_integer("sts_rounds", None, "Rounds of the end-to-end STS job (minutes each); defaults to --rounds.",
                         lower_bound=1)
    flags.DEFINE_float("max_load", 0.5, "Refuse to start when the 1-minute load average exceeds this.")
    flags.DEFINE_bool("allow_loaded", False, "Run on a loaded machine anyway; the table is then marked LOADED.")
    flags.DEFINE_list("measure", list(MEASUREMENTS), f"Which figures to measure: {', '.join(MEASUREMENTS)}.")
    flags.DEFINE_list("precisions", list(PRECISIONS), "Precisions of the encoding and training figures.")
    flags.DEFINE_integer("encode_sentences", 0, "STS-B test sentences to encode; 0 takes all 2,758.", lower_bound=0)
    flags.DEFINE_integer("encode_batch_size", 64, "Encoding batch size.", lower_bound=1)
    flags.DEFINE_integer("encode_max_seq_len", 256, "Encoding max length (MiniLM's own is 256).", lower_bound=8)
    flags.DEFINE_integer("train_batch_size", 64, "Training batch size (pairs per step).", lower_bound=2)
    flags.DEFINE_list("train_max_seq_lens", ["32", "64"], "Training max lengths.")
    flags.DEFINE_integer("train_steps", 10, "Timed training steps per round.", lower_bound=1)
    flags.DEFINE_integer("train_warmup_steps", 2, "Untimed training steps before each timed run.", lower_bound=0)
    flags.DEFINE_float("train_lr", 3e-5, "AdamW learning rate (SimCSE's).")
    flags.DEFINE_float("weight_decay", 0.01, "AdamW weight decay (torch's default).")
    flags.DEFINE_list("sts_precisions", ["fp32", "bf16"], "Precisions of the end-to-end STS job (test_sts.py "
                      "--precision; torch.autocast on the sentence-transformers side).")
    flags.DEFINE_integer("sts_batch_size", 128,
                         "Encoding batch size of the end-to-end STS job (test_sts.py's default).", lower_bound=1)
    flags.DEFINE_float("sts_tolerance", 0.01, "Largest accepted |toolkit - sentence-transformers| of a headline "
                       "Spearman (x100) in the end-to-end job; a larger one is flagged.")
    flags.DEFINE_integer("seed", 0, "Seed of the training batches.")


# === Machine state ===

def load_average():
    return tuple(round(x, 2) for x in os.getloadavg())


class LoadLog:
    """Machine-load readings with a label each, printed as they are taken.

    The 1-minute load average is recorded, but it counts the benchmark's own threads (about
    `--threads` while it runs), so it cannot say whether anything else ran. What decides
    whether a stretch was loaded is the CPU time other processes used since the previous
    reading: the machine's busy time (/proc/stat) minus this process's, its finished
    children's (test_sts.py, the worker's STS jobs) and the persistent worker's (`own_pids`),
    in cores on average. Above `threshold` cores the run is LOADED. The first reading, taken
    before anything starts, judges by the load average. Off Linux, every reading does.
    """

    def __init__(self, threshold: float):
        self.threshold = threshold
        self.readings = []
        self.own_pids = []
        self._last = None  # (wall seconds, machine busy ticks, own ticks)

    def _own_ticks(self) -> int:
        return process_ticks() + sum(process_ticks(pid) for pid in self.own_pids)

    def read(self, label: str):
        load = load_average()
        now, busy, own = time.time(), machine_busy_ticks(), self._own_ticks()
        others = None
        if busy is not None and self._last is not None:
            others = other_cores(self._last, (now, busy, own))
        self._last = (now, busy, own) if busy is not None else None
        over = (others > self.threshold) if others is not None else load[0] > self.threshold
        self.readings.append({"label": label, "load": load, "other_cores": others, "over_threshold": over})
        since = "" if others is None else f"; other processes: {others:.2f} cores since the last reading"
        print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}  ({label}{since})"
              + (f"  ** above --max_load={self.threshold} **" if over else ""), flush=True)
        return load

    @property
    def loaded(self) -> bool:
        return any(r["over_threshold"] for r in self.readings)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_bf16_flags() -> list:
    """The CPU's native bf16 instructions (avx512_bf16, amx_bf16); without them bf16 runs emulated."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return sorted({"avx512_bf16", "amx_bf16", "amx_tile"} & set(line.split(":", 1)[1].split()))
    except OSError:
        pass
    return []


def thread_env(threads: int) -> dict:
    """Environment of a process with `threads` threads: TensorFlow reads TF_NUM_*_THREADS, PyTorch
    and oneDNN/MKL the OpenMP ones."""
    return {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
            "TF_NUM_INTRAOP_THREADS": str(threads), "TF_NUM_INTEROP_THREADS": str(threads)}


# === The sentence-transformers side ===

class Reference:
    """A worker script of bench/ (default bench/st_worker.py) in the reference environment, one JSON
    line each way: the first line it writes describes it (`info`), then one answer per `ask`."""

    def __init__(self, python: str, folder: str, threads: int, worker: str = "st_worker.py"):
        if not os.path.exists(python):
            raise FileNotFoundError(f"{python} not found: build the reference environment with `make reference-env` "
                                    f"or pass --reference_python.")
        env = {**os.environ, **thread_env(threads), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        self.process = subprocess.Popen(
            [python, os.path.join(REPO, "bench", worker), f"--model={folder}", f"--threads={threads}"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=REPO)
        self.info = self._answer()

    def _answer(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the sentence-transformers worker exited (code {self.process.wait()}); "
                               f"its error is above.")
        answer = json.loads(line)
        if not answer.get("ok"):
            raise RuntimeError(f"the sentence-transformers worker failed: {answer.get('error')}")
        return answer

    def ask(self, **cmd) -> dict:
        self.process.stdin.write(json.dumps(cmd) + "\n")
        self.process.stdin.flush()
        return self._answer()

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.ask(cmd="quit")
            finally:
                self.process.stdin.close()
                self.process.wait(timeout=60)


# === The toolkit side ===

def toolkit_encoder(precision: str, **config):
    """THE TOOLKIT'S PRECISION PATH: MiniLM as a SentenceEncoder in `precision` ("fp32" or "bf16"),
    through `EncoderConfig.precision` (`common/models/precision.py`: bf16 is Keras' mixed_bfloat16
    set on the backbone's layers, with float32 outputs, GELU and LayerNorm statistics)."""
    from common.models.encoder import EncoderConfig, build_encoder

    return build_encoder(EncoderConfig(spec="minilm", precision=precision, **config))


def toolkit_train_model(precision: str, max_seq_len: int, lr: float, weight_decay: float):
    """Unsupervised SimCSE on MiniLM (mean pooling, temperature 0.05) in `precision`, compiled as
    train.py compiles it (jit_compile=False), with a constant-rate AdamW."""
    import keras

    from simcse_tf.model import SimcseModel

    encoder = toolkit_encoder(precision, max_seq_len=max_seq_len, pooling="mean")
    model = SimcseModel(encoder, "unsup", temperature=0.05, name="simcse")
    model.compile(optimizer=keras.optimizers.AdamW(learning_rate=lr, weight_decay=weight_decay), jit_compile=False)
    model.make_train_function()
    return model


class ToolkitTrainer:
    """One SimCSE model per (precision, max length), its batches tokenized once, stepped through
    Keras' own train function as `common.training.loop` does."""

    def __init__(self, precision: str, max_seq_len: int, batches, warmup_steps: int, lr: float, weight_decay: float):
        import tensorflow as tf

        self.model = toolkit_train_model(precision, max_seq_len, lr, weight_decay)
        tokenizer = self.model.encoder.tokenizer
        tokenized = [{"sentences": tokenizer(tf.constant(b, tf.string))} for b in batches]
        self.padded_lengths = [int(t["sentences"]["token_ids"].shape[1]) for t in tokenized]
        self.pairs = sum(len(b) for b in batches)
        self.steps = len(batches)
        self.warmup_steps = warmup_steps
        steps = tokenized[:warmup_steps] + tokenized
        dataset = tf.data.Dataset.from_tensors(steps[0])
        for t in steps[1:]:
            dataset = dataset.concatenate(tf.data.Dataset.from_tensors(t))
        self.dataset = dataset
        # One untimed step traces Keras' train function for this dataset's element spec, which every
        # later `iter(self.dataset)` shares, so no trace falls inside a timed step.
        float(self.model.train_function(iter(self.dataset))["loss"][0])

    def run(self) -> dict:
        iterator = iter(self.dataset)
        train = self.model.train_function
        for _ in range(self.warmup_steps):
            float(train(iterator)["loss"][0])
        losses = []
        start = time.perf_counter()
        for _ in range(self.steps):
            losses.append(train(iterator)["loss"])
        losses = [float(x[0]) for x in losses]  # the last step has finished once its loss is read
        seconds = time.perf_counter() - start
        return {"seconds": seconds, "steps": self.steps, "pairs": self.pairs, "losses": losses}


# === Summaries ===

def summary(values):
    values = sorted(values)
    return {"median": statistics.median(values), "min": values[0], "max": values[-1], "n": len(values)}


def _fmt(stats, digits: int = 1) -> str:
    if not stats:
        return "n/a"
    return f"{stats['median']:.{digits}f} [{stats['min']:.{digits}f}-{stats['max']:.{digits}f}]"


def run_sts_jobs(rounds: int, data_path: str, folder: str, loads: LoadLog, raw: dict) -> None:
    """Round after round, per precision of --sts_precisions: test_sts.py --precision=P (toolkit),
    then st_worker.py --sts --precision=P (sentence-transformers, torch.autocast for bf16)."""
    env = {**os.environ, **thread_env(FLAGS.threads), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    raw["sts"] = {p: {"toolkit": [], "sentence_transformers": []} for p in FLAGS.sts_precisions}
    for r in range(rounds):
        for precision in FLAGS.sts_precisions:
            with tempfile.TemporaryDirectory() as tmp:
                command = [sys.executable, os.path.join(REPO, "test_sts.py"), "--model=minilm",
                           f"--data_path={data_path}", f"--artifacts_dir={tmp}", f"--batch_size={FLAGS.sts_batch_size}",
                           f"--precision={precision}"]
                start = time.perf_counter()
                done = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True)
                seconds = time.perf_counter() - start
                if done.returncode:
                    raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
                with open(glob.glob(os.path.join(tmp, "test", "sts_*.json"))[0], encoding="utf-8") as f:
                    results = json.load(f)
            scores = {y: results[y]["all"] for y in HEADLINE[:5]}
            scores.update(stsb=results["stsb"]["test"], stsb_dev=results["stsb"]["dev"],
                          sickr=results["sickr"]["test"], avg=results["avg"])
            raw["sts"][precision]["toolkit"].append({"seconds": seconds, "scores": scores})
            print(f"  round {r + 1} end-to-end STS {precision}, toolkit: {seconds:.1f} s", flush=True)
            command = [FLAGS.reference_python, os.path.join(REPO, "bench", "st_worker.py"), "--sts",
                       f"--model={folder}", f"--data_path={data_path}", f"--threads={FLAGS.threads}",
                       f"--batch_size={FLAGS.sts_batch_size}", f"--precision={precision}"]
            start = time.perf_counter()
            done = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True)
            seconds = time.perf_counter() - start
            if done.returncode:
                raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
            theirs = json.loads(done.stdout.strip().splitlines()[-1])
            raw["sts"][precision]["sentence_transformers"].append({"seconds": seconds, "scores": theirs["scores"],
                                                                   "sentences": theirs["sentences"]})
            print(f"  round {r + 1} end-to-end STS {precision}, sentence-transformers: {seconds:.1f} s", flush=True)
            loads.read(f"after end-to-end STS {precision} round {r + 1}")


def main(argv):
    unknown = (sorted(set(FLAGS.measure) - set(MEASUREMENTS))
               + sorted((set(FLAGS.precisions) | set(FLAGS.sts_precisions)) - set(PRECISIONS)))
    if unknown:
        raise app.UsageError(f"Unknown --measure/--precisions/--sts_precisions values {unknown}; expected "
                             f"{MEASUREMENTS} and {PRECISIONS}.")
    max_lens = [int(x) for x in FLAGS.train_max_seq_lens]
    loads = LoadLog(FLAGS.max_load)
    first = loads.read("before start")
    if first[0] > FLAGS.max_load and not FLAGS.allow_loaded:
        print(f"Refusing to benchmark: the 1-minute load average is {first[0]:.2f}, above --max_load="
              f"{FLAGS.max_load}. PyTorch slows 3-6x on an oversubscribed machine, so the ratio would be "
              f"meaningless. Run on an idle machine, or pass --allow_loaded for a run marked LOADED.",
              file=sys.stderr)
        return 2
    # Threads before TensorFlow starts its runtime; the same numbers reach the worker.
    os.environ.update(thread_env(FLAGS.threads))
    sys.path.insert(0, REPO)
    from common import cli  # noqa: F401  (quiets TensorFlow's start-up)

    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    tf.config.threading.set_inter_op_parallelism_threads(FLAGS.threads)
    import keras

    from common.data.sts import load_stsb
    from common.loading.embedding import embed_sentences
    from common.models.sources.names import minilm_dir

    folder = minilm_dir()
    test = load_stsb(FLAGS.data_path, "test")
    sentences = test.sentences1 + test.sentences2
    if FLAGS.encode_sentences:
        sentences = sentences[:FLAGS.encode_sentences]
    rng = np.random.default_rng(FLAGS.seed)
    pool = [sentences[i] for i in rng.permutation(len(sentences))]
    needed = FLAGS.train_steps * FLAGS.train_batch_size
    pool = (pool * (needed // len(pool) + 1))[:needed]
    batches = [pool[i:i + FLAGS.train_batch_size] for i in range(0, needed, FLAGS.train_batch_size)]

    reference = Reference(FLAGS.reference_python, folder, FLAGS.threads)
    loads.own_pids.append(reference.process.pid)
    raw = {"encode": {}, "train": {}}
    embeddings_dir = tempfile.mkdtemp(prefix="vs_st_")
    try:
        encoders = {}
        if "encode" in FLAGS.measure:
            for precision in FLAGS.precisions:
                encoder = toolkit_encoder(precision, max_seq_len=FLAGS.encode_max_seq_len)
                fn = tf.function(encoder.embed_strings, input_signature=[tf.TensorSpec([None], tf.string)])
                embed_sentences(fn, sentences[:2 * FLAGS.encode_batch_size], FLAGS.encode_batch_size, progress=False)
                # The toolkit's own path as well (test_sts.py, SentenceModel.encode): the same model,
                # batches sorted by token count (`embedding_function` carries the counter) where the
                # plain function above, like sentence-transformers, is batched by characters.
                own = encoder.embedding_function()
                embed_sentences(own, sentences[:2 * FLAGS.encode_batch_size], FLAGS.encode_batch_size, progress=False)
                encoders[precision] = (fn, own)
                raw["encode"][precision] = {"toolkit": [], "toolkit_token_sorted": [], "sentence_transformers": []}
        trainers = {}
        if "train" in FLAGS.measure:
            for length in max_lens:
                for precision in FLAGS.precisions:
                    trainers[(precision, length)] = ToolkitTrainer(
                        precision, length, batches, FLAGS.train_warmup_steps, FLAGS.train_lr, FLAGS.weight_decay)
                    raw["train"][f"{precision}/{length}"] = {"toolkit": [], "sentence_transformers": []}
        loads.read("models built, before round 1")
        embeddings = {}
        for r in range(FLAGS.rounds):
            for precision, (fn, own) in encoders.items():
                start = time.perf_counter()
                ours = embed_sentences(fn, sentences, FLAGS.encode_batch_size, progress=False)
                seconds = time.perf_counter() - start
                raw["encode"][precision]["toolkit"].append({"seconds": seconds, "sentences": len(sentences)})
                start = time.perf_counter()
                embed_sentences(own, sentences, FLAGS.encode_batch_size, progress=False)
                raw["encode"][precision]["toolkit_token_sorted"].append(
                    {"seconds": time.perf_counter() - start, "sentences": len(sentences)})
                path = os.path.join(embeddings_dir, f"{precision}.npy")
                theirs = reference.ask(cmd="encode", sentences=sentences, batch_size=FLAGS.encode_batch_size,
                                       max_seq_len=FLAGS.encode_max_seq_len, precision=precision,
                                       embeddings_path=path if r == 0 else "")
                raw["encode"][precision]["sentence_transformers"].append(
                    {"seconds": theirs["seconds"], "sentences": theirs["sentences"]})
                if r == 0:
                    embeddings[precision] = (ours, np.load(path))
                print(f"  round {r + 1} encode {precision}: toolkit {len(sentences) / seconds:.1f}, "
                      f"sentence-transformers {theirs['sentences'] / theirs['seconds']:.1f} sentences/s", flush=True)
            for (precision, length), trainer in trainers.items():
                ours = trainer.run()
                theirs = reference.ask(cmd="train", batches=batches, max_seq_len=length, precision=precision,
                                       lr=FLAGS.train_lr, weight_decay=FLAGS.weight_decay,
                                       warmup_steps=FLAGS.train_warmup_steps)
                theirs.pop("ok")
                entry = raw["train"][f"{precision}/{length}"]
                entry["toolkit"].append(ours)
                entry["sentence_transformers"].append(theirs)
                entry["padded_lengths"] = {"toolkit": trainer.padded_lengths,
                                           "sentence_transformers": theirs["padded_lengths"]}
                print(f"  round {r + 1} train {precision} max length {length}: toolkit "
                      f"{ours['pairs'] / ours['seconds']:.1f}, sentence-transformers "
                      f"{theirs['pairs'] / theirs['seconds']:.1f} pairs/s", flush=True)
            loads.read(f"after round {r + 1}")
    finally:
        reference.close()
    if "sts" in FLAGS.measure:
        run_sts_jobs(FLAGS.sts_rounds or FLAGS.rounds, FLAGS.sts_data_path or FLAGS.data_path, folder, loads, raw)
    loads.read("after the last round")

    checks = {}
    for precision, (ours, theirs) in embeddings.items():
        checks[f"encode_{precision}_max_abs_diff"] = float(np.abs(ours - theirs).max())
    if "fp32" in embeddings and "bf16" in embeddings:
        checks["toolkit_bf16_vs_fp32_max_abs_diff"] = float(np.abs(embeddings["bf16"][0] - embeddings["fp32"][0]).max())
        checks["st_bf16_vs_fp32_max_abs_diff"] = float(np.abs(embeddings["bf16"][1] - embeddings["fp32"][1]).max())
    for name, entry in raw["train"].items():
        lengths = entry["padded_lengths"]
        checks[f"train_{name}_same_padded_lengths"] = lengths["toolkit"] == lengths["sentence_transformers"]
    for precision, entry in raw.get("sts", {}).items():
        # Scores are deterministic per side and precision: the first round's stand for all.
        ours, theirs = entry["toolkit"][0]["scores"], entry["sentence_transformers"][0]["scores"]
        suffix = "" if precision == "fp32" else f"_{precision}"
        checks[f"sts_scores{suffix}"] = {k: {"toolkit": ours[k], "sentence_transformers": theirs[k],
                                             "diff": ours[k] - theirs[k]} for k in (*HEADLINE, "stsb_dev", "avg")}
        checks[f"sts_max_abs_diff{suffix}"] = max(abs(ours[k] - theirs[k]) for k in HEADLINE)

    import keras_hub  # noqa: F401  (version only)

    versions = {"toolkit": {"python": sys.version.split()[0], "tensorflow": tf.__version__,
                            "keras": keras.__version__, "keras_hub": keras_hub.__version__,
                            "numpy": np.__version__},
                "sentence_transformers_side": {k: v for k, v in reference.info.items() if k not in ("ok", "ready")}}
    record = {"flags": {k: FLAGS[k].value for k in (
                  "threads", "rounds", "sts_rounds", "max_load", "allow_loaded", "measure", "precisions",
                  "encode_sentences", "encode_batch_size", "encode_max_seq_len", "train_batch_size",
                  "train_max_seq_lens", "train_steps", "train_warmup_steps", "train_lr", "weight_decay",
                  "sts_precisions", "sts_batch_size", "sts_tolerance", "seed")},
              "machine": {"cpu": cpu_model(), "cpus": os.cpu_count(), "bf16_instructions": cpu_bf16_flags(),
                          "platform": platform.platform()},
              "versions": versions, "loaded": loads.loaded,
              "load_averages": loads.readings, "raw": raw, "checks": checks}
    table = format_table(record, len(sentences))
    others = [r["other_cores"] for r in loads.readings if r.get("other_cores") is not None]
    load_line = (f"Load: {'LOADED' if loads.loaded else 'idle'}; 1-minute load average {first[0]:.2f} at the start"
                 + (f", other processes used at most {max(others):.2f} cores between any two readings"
                    if others else ""))
    harness.write_page(FLAGS.results_dir, "Speed against sentence-transformers", "bench.vs_sentence_transformers",
                       table.split("\n"), record, setting=[load_line])
    print(table)
    print(f"\nwritten: {FLAGS.results_dir}/README.md, results.json")
    return 0


def format_table(record: dict, encoded: int) -> str:
    """The Markdown table: figure | toolkit | sentence-transformers | ratio (toolkit speed / theirs)."""
    raw, flags_, checks = record["raw"], record["flags"], record["checks"]
    rows = []
    for precision, entry in raw["encode"].items():
        ours = summary([x["sentences"] / x["seconds"] for x in entry["toolkit"]])
        theirs = summary([x["sentences"] / x["seconds"] for x in entry["sentence_transformers"]])
        rows.append((f"encode STS-B test, {encoded} sentences, batch {flags_['encode_batch_size']}, {precision} "
                     f"(sentences/s)", ours, theirs, ours["median"] / theirs["median"]))
        if entry.get("toolkit_token_sorted"):
            own = summary([x["sentences"] / x["seconds"] for x in entry["toolkit_token_sorted"]])
            rows.append((f"same, {precision}, toolkit batched by token count as test_sts.py does (sentences/s)", own,
                         theirs, own["median"] / theirs["median"]))
    for name, entry in raw["train"].items():
        precision, length = name.split("/")
        ours = summary([x["pairs"] / x["seconds"] for x in entry["toolkit"]])
        theirs = summary([x["pairs"] / x["seconds"] for x in entry["sentence_transformers"]])
        rows.append((f"unsup SimCSE / MNRL train step, batch {flags_['train_batch_size']}, max length {length}, "
                     f"{precision} (pairs/s)", ours, theirs, ours["median"] / theirs["median"]))
    for precision, entry in raw.get("sts", {}).items():
        ours = summary([x["seconds"] for x in entry["toolkit"]])
        theirs = summary([x["seconds"] for x in entry["sentence_transformers"]])
        rows.append((f"test_sts.py --model=minilm --precision={precision} end to end, wall (s)", ours, theirs,
                     theirs["median"] / ours["median"]))
    v, st = record["versions"]["toolkit"], record["versions"]["sentence_transformers_side"]
    lines = []
    if record["loaded"]:
        lines.append(f"**LOADED: other processes used more than --max_load={flags_['max_load']} cores during this run "
                     f"(or the load average exceeded it at the start); these numbers are not a fair comparison.**\n")
    lines += ["| figure | toolkit | sentence-transformers | toolkit speed / theirs |", "| --- | --- | --- | --- |"]
    lines += [f"| {name} | {_fmt(a)} | {_fmt(b)} | {ratio:.2f} |" for name, a, b, ratio in rows]
    n = {r[1]["n"] for r in rows}
    lines.append("")
    lines.append(f"Median [min-max] over {'/'.join(str(x) for x in sorted(n))} rounds, the two sides alternating "
                 f"within each round; a ratio above 1 means the toolkit is faster. Threads: {flags_['threads']} "
                 f"on both sides. CPU: {record['machine']['cpu']} ({record['machine']['cpus']} logical CPUs; "
                 f"native bf16 instructions: {', '.join(record['machine'].get('bf16_instructions') or ['none'])}).")
    lines.append("Load average (1 min, the benchmark's own threads included): " + ", ".join(
        f"{r['load'][0]:.2f} ({r['label']})" for r in record["load_averages"]) + ".")
    others = [r["other_cores"] for r in record["load_averages"] if r.get("other_cores") is not None]
    if others:
        lines.append(f"CPU used by other processes between readings: at most {max(others):.2f} cores "
                     f"(mean over each stretch; /proc/stat minus the benchmark's own processes).")
    lines.append(f"Toolkit: Python {v['python']}, TensorFlow {v['tensorflow']}, Keras {v['keras']}, keras-hub "
                 f"{v['keras_hub']} (bf16: EncoderConfig.precision, mixed_bfloat16). sentence-transformers "
                 f"{st['sentence_transformers']}, torch {st['torch']}, transformers {st['transformers']}, tokenizers "
                 f"{st['tokenizers']} (bf16: torch.autocast).")
    for key in ("encode_fp32_max_abs_diff", "encode_bf16_max_abs_diff", "toolkit_bf16_vs_fp32_max_abs_diff",
                "st_bf16_vs_fp32_max_abs_diff"):
        if key in checks:
            lines.append(f"{key.replace('_', ' ')}: {checks[key]:.2e}")
    same = [k for k in checks if k.endswith("_same_padded_lengths")]
    if same:
        lines.append("training batches padded alike on both sides: "
                     + ", ".join(f"{k[len('train_'):-len('_same_padded_lengths')]} {checks[k]}" for k in same))
    score_tables = [(k, "fp32" if k == "sts_scores" else k[len("sts_scores_"):]) for k in checks
                    if k.startswith("sts_scores")]
    for key, precision in score_tables:
        table = checks[key]
        lines.append("")
        lines.append(f"| STS (Spearman x100), {precision} | " + " | ".join(table) + " |")
        lines.append("| --- |" + " --- |" * len(table))
        for side in ("toolkit", "sentence_transformers"):
            lines.append(f"| {side.replace('_', '-')} | " + " | ".join(f"{s[side]:.2f}" for s in table.values()) + " |")
        worst = checks[key.replace("sts_scores", "sts_max_abs_diff")]
        if precision == "fp32":
            verdict = "agree" if worst <= flags_["sts_tolerance"] else "DISAGREE"
            lines.append(f"\nheadline scores {verdict}: largest |difference| {worst:.4f} "
                         f"(tolerance {flags_['sts_tolerance']})")
        else:  # two different bf16 kernels round differently: compare each side with its own fp32
            lines.append(f"\n{precision} headline scores: largest |toolkit - sentence-transformers| {worst:.4f}")
            if "sts_scores" in checks:
                for side in ("toolkit", "sentence_transformers"):
                    moved = max(abs(table[k][side] - checks["sts_scores"][k][side]) for k in HEADLINE)
                    lines.append(f"{side.replace('_', '-')}: {precision} vs fp32, largest headline change "
                                 f"{moved:.4f}, STS-B test "
                                 f"{table['stsb'][side] - checks['sts_scores']['stsb'][side]:+.4f}")
    return "\n".join(lines)


if __name__ == "__main__":
    define_flags()
    cli.run(main)
