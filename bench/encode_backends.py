"""Every CPU path of the toolkit beside every sentence-transformers backend: encoding speed and STS-B test.

    # once: sentence-transformers with its OpenVINO backend, and with its ONNX Runtime backend
    # (two environments: their optimum packages ask for different transformers; docs/installation.md)
    make reference-backends-env reference-onnx-env
    .venv/bin/python -m bench.encode_backends --data_path=../shared/data

Encodes the distinct sentences of STS-B test in batches of --batch_size with each variant, in one run,
alternating the two sides (toolkit variant, sentence-transformers variant, toolkit, ...) over --rounds:

    toolkit (this process, --model exported here)   sentence-transformers (bench/backends_worker.py)
    fp32, bf16: SentenceModel(model, precision)      torch
    tflite, tflite-int8: export.py --format=tflite   onnx, onnx-int8 (dynamic, avx512_vnni)
    onnx, onnx-int8: export.py --format=onnx         openvino, openvino-int8 (NNCF static, calibrated)
    openvino, openvino-int8: --format=openvino       openvino-bf16 (bfloat16 inference)
    openvino-bf16: the float export, bf16 inference

Both int8 OpenVINO variants calibrate on the same sentences (export.py's default: 300 STS-B train
sentences). Each variant is warmed up before its first timed round; sentences/s is the median over
the rounds, with min-max. STS-B test is the Spearman correlation (x100) of the cosine of each pair's
embeddings with the gold scores. `ratio_best` is the toolkit's fastest variant over
sentence-transformers' fastest. Where the toolkit's fp32 time goes: its tokenizer alone is timed on
the same batches (`tokenizer_sentences_per_s`).

The sentence-transformers side runs in worker subprocesses with the reference environments' Pythons:
torch and the OpenVINO variants in --reference_python's (sentence-transformers 6 with optimum-intel),
the ONNX variants in --onnx_reference_python's (sentence-transformers 5.7 with optimum-onnx, which asks
for transformers < 4.58); each side's versions go into results.json. A variant a worker cannot build
is reported with its error rather than a number. OpenVINO computes in float32 on both sides, except in
the openvino-bf16 variants, which ask its CPU plugin for bfloat16 (`INFERENCE_PRECISION_HINT`), the
plugin's own default on CPUs with bfloat16 instructions and so what a sentence-transformers user there
gets unless they ask for float32.
Threads: --threads for TensorFlow, ONNX Runtime, OpenVINO, TFLite and torch alike. Refuses to start
when the 1-minute load average exceeds --max_load (--allow_loaded runs anyway and marks the page
LOADED). Writes the dated page and results.json to --results_dir. Not part of the test suite.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
import time
from typing import Callable, Dict, List, Optional

from absl import flags

from common import cli
from common.errors import UserError

from bench import harness

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLKIT_VARIANTS = ("fp32", "bf16", "tflite", "tflite-int8", "onnx", "onnx-int8", "openvino", "openvino-int8",
                    "openvino-bf16")
ST_VARIANTS = ("torch", "onnx", "onnx-int8", "openvino", "openvino-int8", "openvino-bf16")
TOOLKIT, ST = "toolkit", "sentence-transformers"
# Each sentence-transformers worker's environment: the flag naming its Python, the make target building it.
ENVIRONMENTS = {"main": ("reference_python", "reference-backends-env"),
                "onnx": ("onnx_reference_python", "reference-onnx-env")}

FLAGS = flags.FLAGS


def define_flags() -> None:
    """The benchmark's flags, defined when it runs, not at import (see bench/harness.py)."""
    flags.DEFINE_string("data_path", "data", "Data root (holds downstream/).")
    flags.DEFINE_string("model", "minilm", "The model both sides encode with (any --model of export.py).")
    flags.DEFINE_string("reference_python", ".venv-ref-backends/bin/python",
                        "Python of the reference environment with sentence-transformers and its OpenVINO backend "
                        "(bench/reference-backends-requirements.txt); runs every variant but the ONNX ones.")
    flags.DEFINE_string("onnx_reference_python", ".venv-ref-onnx/bin/python",
                        "Python of the reference environment with sentence-transformers' ONNX Runtime backend "
                        "(bench/reference-onnx-requirements.txt); runs the onnx and onnx-int8 variants.")
    flags.DEFINE_string("results_dir", "docs/benchmarks/encode_backends", "Where README.md and results.json go.")
    flags.DEFINE_integer("threads", 2, "Threads of every runtime on both sides.", lower_bound=1)
    flags.DEFINE_integer("rounds", 3, "Timed rounds; each encodes every sentence with every variant.", lower_bound=1)
    flags.DEFINE_integer("batch_size", 32, "Sentences per batch on both sides.", lower_bound=1)
    flags.DEFINE_list("toolkit_variants", list(TOOLKIT_VARIANTS), "The toolkit's variants to run.")
    flags.DEFINE_list("st_variants", list(ST_VARIANTS), "sentence-transformers' variants to run.")
    flags.DEFINE_float("max_load", 0.5, "Refuse to start above this 1-minute load average.")
    flags.DEFINE_bool("allow_loaded", False, "Run on a loaded machine anyway; the page is marked LOADED.")


# === The data ===

def stsb_test(data_path: str):
    """STS-B test: (its distinct sentences, sorted; a scorer of embeddings of them -> Spearman x100)."""
    import numpy as np
    from scipy.stats import spearmanr

    from common.data.sts import load_stsb

    pairs = load_stsb(data_path, "test")
    sentences = sorted(set(pairs.sentences1) | set(pairs.sentences2))
    index = {s: i for i, s in enumerate(sentences)}
    left = np.array([index[s] for s in pairs.sentences1])
    right = np.array([index[s] for s in pairs.sentences2])

    def score(embeddings) -> float:
        a, b = embeddings[left], embeddings[right]
        cosine = np.sum(a * b, axis=1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)
        return round(float(spearmanr(cosine, pairs.scores).correlation) * 100, 2)

    return sentences, score


# === The toolkit side ===

def toolkit_embedders(model: str, variants: List[str], work_dir: str, data_path: str,
                      threads: int) -> Dict[str, Callable]:
    """Each toolkit variant's embedding function (1-D strings -> embeddings), exports written under `work_dir`."""
    from common.export import ExportConfig, export_model
    from common.loading.resolve import resolve_encoder, resolve_model
    from common.models.formats.onnx import onnx_embedder
    from common.models.formats.openvino import openvino_embedder
    from common.models.formats.tflite import TFLiteEmbedder, tflite_model

    out = {}
    for variant in variants:
        if variant not in TOOLKIT_VARIANTS:
            raise UserError(f"--toolkit_variants: unknown variant {variant!r}; expected some of "
                            f"{', '.join(TOOLKIT_VARIANTS)}.")
        kind, _, suffix = variant.partition("-")
        quantize = "int8" if suffix == "int8" else "none"
        if kind in ("fp32", "bf16"):
            out[variant] = resolve_model(model, precision=kind).embed_fn
        elif kind == "tflite":
            out[variant] = TFLiteEmbedder(tflite_model(resolve_encoder(model), quantize), num_threads=threads)
        elif kind in ("onnx", "openvino"):
            folder = os.path.join(work_dir, variant)
            export_model(ExportConfig(model=model, format=kind, out=folder, quantize=quantize, data_path=data_path))
            if kind == "onnx":
                out[variant] = onnx_embedder(folder, num_threads=threads)
            else:
                out[variant] = openvino_embedder(folder, num_threads=threads,
                                                 inference_precision="bf16" if suffix == "bf16" else "f32")
    return out


def tokenizer_seconds(model: str, sentences: List[str], batch_size: int) -> float:
    """Seconds the toolkit's tokenizer alone takes over the batches `embed_sentences` forms."""
    import numpy as np
    import tensorflow as tf

    from common.loading.embedding import sort_lengths
    from common.loading.resolve import resolve_encoder

    tokenizer = resolve_encoder(model).tokenizer
    tokenize = tf.function(tokenizer.__call__, input_signature=[tf.TensorSpec([None], tf.string)])
    tokenize(tf.constant(sentences[:batch_size]))  # traced before the clock starts
    start = time.perf_counter()
    order = np.argsort(-sort_lengths(tokenizer, sentences), kind="stable")
    for i in range(0, len(order), batch_size):
        tokenize(tf.constant([sentences[j] for j in order[i:i + batch_size]]))
    return time.perf_counter() - start


# === The sentence-transformers side ===

class Worker:
    """bench/backends_worker.py in the reference environment, one JSON line each way."""

    def __init__(self, python: str, folder: str, work_dir: str, threads: int, calibration_file: str):
        env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
        self.process = subprocess.Popen(
            [python, os.path.join(REPO, "bench", "backends_worker.py"), f"--folder={folder}",
             f"--work_dir={work_dir}", f"--threads={threads}", f"--calibration_file={calibration_file}"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=REPO)
        self.info = self._answer()

    def _answer(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the sentence-transformers worker exited (code {self.process.wait()}); its error "
                               "is above.")
        return json.loads(line)

    def ask(self, **cmd) -> dict:
        self.process.stdin.write(json.dumps(cmd) + "\n")
        self.process.stdin.flush()
        return self._answer()

    def close(self) -> None:
        if self.process.poll() is None:
            self.ask(cmd="quit")
            self.process.stdin.close()
            self.process.wait(timeout=60)


def environment_python(name: str, python: str) -> str:
    """`python`, the Python of the reference environment `name` (ENVIRONMENTS), where it exists.

    Raises:
        UserError: naming the flag that points at it and the make target that builds it.
    """
    flag, target = ENVIRONMENTS[name]
    if not os.path.exists(python):
        raise UserError(f"--{flag}={python}: not found; build that reference environment with "
                        f"`make {target}` or pass --{flag}.")
    return python


def worker_of(variant: str) -> str:
    """Which reference environment runs a sentence-transformers variant: "onnx" (optimum-onnx) or "main"."""
    return "onnx" if variant.split("-")[0] == "onnx" else "main"


def reference_lines(versions: Dict[str, dict]) -> List[str]:
    """The page's line per reference environment: its sentence-transformers, transformers and runtime."""
    lines = []
    for name, info in sorted(versions.items()):
        runtime = "onnxruntime" if name == "onnx" else "openvino"
        lines.append(f"- sentence-transformers side, {'ONNX variants' if name == 'onnx' else 'torch and OpenVINO'}: "
                     f"sentence-transformers {info.get('sentence-transformers')}, transformers "
                     f"{info.get('transformers')}, torch {info.get('torch')}, {runtime} {info.get(runtime)}")
    return ["", "Reference environments:", ""] + lines if lines else []


# === The run ===

def interleaved(first: List[str], second: List[str]) -> List[tuple]:
    """(side, variant) alternating between the two lists, the longer one's rest at the end."""
    order = []
    for i in range(max(len(first), len(second))):
        order += [(TOOLKIT, first[i])] if i < len(first) else []
        order += [(ST, second[i])] if i < len(second) else []
    return order


def summarise(raw: Dict[str, dict], sentences: int) -> Dict[str, dict]:
    """Per variant: median sentences/s with min and max over the rounds, its STS-B test, or its error."""
    out = {}
    for key, entry in raw.items():
        if entry.get("error"):
            out[key] = {"error": entry["error"]}
            continue
        rates = [sentences / s for s in entry["seconds"]]
        out[key] = {"sentences_per_s": round(statistics.median(rates), 1), "min": round(min(rates), 1),
                    "max": round(max(rates), 1), "stsb_test": entry["stsb_test"]}
    return out


def ratio_best(variants: Dict[str, dict]) -> Optional[dict]:
    """The toolkit's fastest variant over sentence-transformers' fastest; None where a side has none."""
    best = {}
    for side in (TOOLKIT, ST):
        timed = {k: v for k, v in variants.items() if k.startswith(side + "/") and "sentences_per_s" in v}
        if not timed:
            return None
        best[side] = max(timed, key=lambda k: timed[k]["sentences_per_s"])
    ratio = variants[best[TOOLKIT]]["sentences_per_s"] / variants[best[ST]]["sentences_per_s"]
    return {"ratio": round(ratio, 3), "toolkit": best[TOOLKIT], "sentence_transformers": best[ST]}


def table(variants: Dict[str, dict], best: Optional[dict], tokenizer_rate: Optional[float], loaded: bool) -> List[str]:
    lines = (["**LOADED: another process used the CPU during this run; the speeds are not comparable.**", ""]
             if loaded else [])
    lines += ["| side | variant | sentences/s (median [min-max]) | STS-B test |", "| --- | --- | --- | --- |"]
    for key, v in variants.items():
        side, variant = key.split("/", 1)
        if "error" in v:
            lines.append(f"| {side} | {variant} | not run: {v['error'][:160]} | |")
        else:
            lines.append(f"| {side} | {variant} | {v['sentences_per_s']:,.1f} [{v['min']:,.1f}-{v['max']:,.1f}] | "
                         f"{v['stsb_test']:.2f} |")
    lines.append("")
    if best:
        lines.append(f"ratio_best = {best['ratio']:.2f}: the toolkit's fastest ({best['toolkit']}) over "
                     f"sentence-transformers' fastest ({best['sentence_transformers']}).")
    else:
        lines.append("ratio_best: not computed (a side has no variant that ran).")
    if tokenizer_rate:
        lines += ["", f"Where the toolkit's fp32 time goes: its tokenizer alone runs at {tokenizer_rate:,.1f} "
                      "sentences/s on the same batches; the rest of the fp32 time is the encoder's graph."]
    return lines


def main(argv):
    load = harness.Load()
    loaded = load.load1 > FLAGS.max_load
    if loaded and not FLAGS.allow_loaded:
        raise UserError(f"Refusing to benchmark: 1-minute load average {load.load1:.2f} > --max_load="
                            f"{FLAGS.max_load}; wait for an idle machine or pass --allow_loaded (the page is then "
                            "marked LOADED).")
    # Before any export: a missing reference environment ends the run at once.
    pythons = {name: environment_python(name, FLAGS[ENVIRONMENTS[name][0]].value)
               for name in sorted({worker_of(v) for v in FLAGS.st_variants})}
    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    tf.config.threading.set_inter_op_parallelism_threads(FLAGS.threads)
    from common.export import ExportConfig, export_model
    from common.loading.embedding import embed_sentences
    from common.models.formats.openvino import calibration_sentences

    sentences, score = stsb_test(FLAGS.data_path)
    raw: Dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as work:
        calibration = os.path.join(work, "calibration.txt")
        with open(calibration, "w", encoding="utf-8") as f:
            f.writelines(s + "\n" for s in calibration_sentences(None, FLAGS.data_path))
        embedders = toolkit_embedders(FLAGS.model, FLAGS.toolkit_variants, work, FLAGS.data_path, FLAGS.threads)
        folder = os.path.join(work, "st-folder")
        export_model(ExportConfig(model=FLAGS.model, format="sentence-transformers", out=folder))
        workers: Dict[str, Worker] = {}
        for name, python in pythons.items():
            os.makedirs(os.path.join(work, "st-work", name))
            workers[name] = Worker(python, folder, os.path.join(work, "st-work", name), FLAGS.threads, calibration)
        try:
            order = interleaved(FLAGS.toolkit_variants, FLAGS.st_variants)
            for side, variant in order:  # warm-up, and each variant's embeddings for STS-B test
                key = f"{side}/{variant}"
                if side == TOOLKIT:
                    embed_sentences(embedders[variant], sentences[:2 * FLAGS.batch_size], FLAGS.batch_size, False)
                    embeddings = embed_sentences(embedders[variant], sentences, FLAGS.batch_size, False)
                    raw[key] = {"seconds": [], "stsb_test": score(embeddings)}
                    continue
                path = os.path.join(work, f"{variant}.npy")
                answer = workers[worker_of(variant)].ask(cmd="encode", variant=variant, sentences=sentences,
                                                         batch_size=FLAGS.batch_size, embeddings_path=path)
                raw[key] = ({"seconds": [], "stsb_test": score(np.load(path))} if answer["ok"]
                            else {"error": answer["error"]})
                print(f"{key}: {'ready' if answer['ok'] else answer['error']}", flush=True)
            for round_index in range(FLAGS.rounds):
                for side, variant in order:
                    key = f"{side}/{variant}"
                    if raw[key].get("error"):
                        continue
                    if side == TOOLKIT:
                        start = time.perf_counter()
                        embed_sentences(embedders[variant], sentences, FLAGS.batch_size, False)
                        raw[key]["seconds"].append(time.perf_counter() - start)
                    else:
                        answer = workers[worker_of(variant)].ask(cmd="encode", variant=variant,
                                                                 sentences=sentences, batch_size=FLAGS.batch_size)
                        if not answer["ok"]:
                            raise RuntimeError(f"{key} failed in round {round_index}: {answer['error']}")
                        raw[key]["seconds"].append(answer["seconds"])
                print(f"round {round_index + 1}/{FLAGS.rounds} done", flush=True)
            reference_versions = {name: worker.info for name, worker in workers.items()}
        finally:
            for worker in workers.values():
                worker.close()
        tokenizer_rate = len(sentences) / tokenizer_seconds(FLAGS.model, sentences, FLAGS.batch_size)
    loaded = loaded or (load.other_cores() or 0.0) > FLAGS.max_load
    variants = summarise(raw, len(sentences))
    best = ratio_best(variants)
    data = {"variants": variants, "ratio_best": best["ratio"] if best else None, "fastest": best,
            "tokenizer_sentences_per_s": round(tokenizer_rate, 1), "sentences": len(sentences),
            "batch_size": FLAGS.batch_size, "threads": FLAGS.threads, "rounds": FLAGS.rounds, "model": FLAGS.model,
            "loaded": loaded, "raw": raw, "reference": reference_versions.get("main"),
            "reference_onnx": reference_versions.get("onnx")}
    lines = table(variants, best, tokenizer_rate, loaded) + reference_lines(reference_versions)
    harness.write_page(FLAGS.results_dir, "Encoding backends: the toolkit beside sentence-transformers",
                       "bench.encode_backends", lines, data, load,
                       setting=[f"{len(sentences)} distinct STS-B test sentences, batch {FLAGS.batch_size}, "
                                f"{FLAGS.threads} threads, {FLAGS.rounds} rounds, model {FLAGS.model}"])
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    define_flags()
    cli.run(main)
