"""The sentence-transformers side of bench/encode_backends.py, run with the reference environment's Python
(`make reference-backends-env`, `make reference-onnx-env`). Imports nothing of this project.

    .venv-ref-backends/bin/python bench/backends_worker.py --folder=<sentence-transformers folder> --threads=2 \\
        --work_dir=<scratch folder> --calibration_file=<one sentence a line>

One JSON command per line on stdin, one JSON answer per line on stdout (each answer has "ok"; a failed
command answers "ok": false and "error", and the worker stays up):

    {"cmd": "info"}: versions and threads.
    {"cmd": "encode", "variant": V, "sentences": [...], "batch_size": 32, "embeddings_path": optional .npy}:
        {"seconds", "sentences"}. The variant's model is built on its first command and kept; that
        command also encodes two batches untimed first. Timed with time.perf_counter around
        `SentenceTransformer.encode`.
    {"cmd": "quit"}.

The variants are what sentence-transformers' efficiency guide ("Speeding up Inference") offers on a CPU,
each built as the guide builds it from the plain folder:

    torch           SentenceTransformer(folder, device="cpu")
    onnx            backend="onnx": Optimum exports the model to ONNX
    onnx-int8       export_dynamic_quantized_onnx_model(model, "avx512_vnni", ...), then loaded from its file
    openvino        backend="openvino": Optimum Intel exports the model to OpenVINO
    openvino-int8   export_static_quantized_openvino_model's steps (OVQuantizer, NNCF static quantization,
                    inputs padded to 384 tokens as that function pads them), calibrated on --calibration_file
                    instead of the GLUE download it defaults to
    openvino-bf16   backend="openvino" with the CPU plugin computing in bfloat16, its default on CPUs with
                    bfloat16 instructions

The ONNX and OpenVINO variants need `optimum-onnx[onnxruntime]` / `optimum-intel[openvino]`; where they
are not installed the variant's commands fail with the import error, which the benchmark reports. The two
ask for different transformers, so each has its environment (bench/reference-backends-requirements.txt:
sentence-transformers 6 with OpenVINO's; bench/reference-onnx-requirements.txt: sentence-transformers 5.7
with ONNX Runtime's), and the benchmark starts one worker in each. OpenVINO computes in float32 on both
sides (`INFERENCE_PRECISION_HINT`), its int8 variant in int8 where NNCF quantized, its bf16 variant in
bfloat16.

HF_HUB_OFFLINE and TRANSFORMERS_OFFLINE are set before anything of Hugging Face is imported. argparse,
not absl: the reference environment has no absl.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

VARIANTS = ("torch", "onnx", "onnx-int8", "openvino", "openvino-int8", "openvino-bf16")
# What export_static_quantized_openvino_model pads calibration inputs to.
CALIBRATION_LENGTH = 384


def set_threads(threads: int) -> None:
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(threads)
    import torch

    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:
        pass


def versions() -> dict:
    import importlib.metadata as metadata

    out = {"python": sys.version.split()[0]}
    for name in ("torch", "sentence-transformers", "transformers", "tokenizers", "optimum", "optimum-onnx",
                 "optimum-intel", "onnxruntime", "openvino", "nncf"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


class Models:
    """Builds each variant's model once, from a copy of the folder where it writes files."""

    def __init__(self, folder: str, work_dir: str, threads: int, calibration: list):
        self.folder, self.work_dir, self.threads, self.calibration = folder, work_dir, threads, calibration
        self.models = {}

    def _copy(self, variant: str) -> str:
        target = os.path.join(self.work_dir, variant)
        if not os.path.exists(target):
            shutil.copytree(self.folder, target)
        return target

    def _ov_config(self, precision: str = "f32") -> dict:
        """float32 inference, as the toolkit's OpenVINO reader asks (the CPU plugin's default is bfloat16 where
        the CPU has it), or `precision`, on --threads threads."""
        return {"INFERENCE_PRECISION_HINT": precision, "INFERENCE_NUM_THREADS": self.threads}

    def _build(self, variant: str):
        if not self.models:
            set_threads(self.threads)  # here, not at start: the worker answers `info` without torch
        from sentence_transformers import SentenceTransformer

        if variant == "torch":
            return SentenceTransformer(self.folder, device="cpu")
        if variant in ("onnx", "openvino"):
            kwargs = {"ov_config": self._ov_config()} if variant == "openvino" else {}
            return SentenceTransformer(self._copy(variant), device="cpu", backend=variant, model_kwargs=kwargs)
        if variant == "openvino-bf16":
            return SentenceTransformer(self._copy(variant), device="cpu", backend="openvino",
                                       model_kwargs={"ov_config": self._ov_config("bf16")})
        if variant == "onnx-int8":
            from sentence_transformers import export_dynamic_quantized_onnx_model

            folder = self._copy(variant)
            export_dynamic_quantized_onnx_model(SentenceTransformer(folder, device="cpu", backend="onnx"),
                                                "avx512_vnni", folder)
            return SentenceTransformer(folder, device="cpu", backend="onnx",
                                       model_kwargs={"file_name": "onnx/model_qint8_avx512_vnni.onnx"})
        if variant == "openvino-int8":
            import nncf
            from optimum.intel.openvino import OVConfig, OVQuantizationConfig, OVQuantizer

            folder = self._copy(variant)
            model = SentenceTransformer(folder, device="cpu", backend="openvino")
            quantizer = OVQuantizer.from_pretrained(model[0].auto_model)
            features = model.tokenizer(self.calibration, padding="max_length", max_length=CALIBRATION_LENGTH,
                                       truncation=True, return_tensors="np")
            # One sentence an item, as an nncf.Dataset (which quantize takes besides a `datasets` one).
            items = [{name: value[i:i + 1] for name, value in features.items()} for i in range(len(self.calibration))]
            config = OVConfig(quantization_config=OVQuantizationConfig(num_samples=len(self.calibration)))
            # sentence-transformers' model saves into an openvino/ subfolder of the directory it is given.
            quantizer.quantize(nncf.Dataset(items), save_directory=os.path.join(folder, "openvino_int8"),
                               ov_config=config)
            return SentenceTransformer(folder, device="cpu", backend="openvino",
                                       model_kwargs={"file_name": "openvino_int8/openvino/openvino_model.xml",
                                                     "ov_config": self._ov_config()})
        raise ValueError(f"unknown variant {variant!r}; expected one of {', '.join(VARIANTS)}")

    def encode(self, cmd: dict) -> dict:
        import numpy as np

        variant, sentences, batch_size = cmd["variant"], cmd["sentences"], int(cmd["batch_size"])
        if variant not in self.models:
            model = self._build(variant)
            model.encode(sentences[:2 * batch_size], batch_size=batch_size, convert_to_numpy=True)  # warm-up
            self.models[variant] = model
        start = time.perf_counter()
        embeddings = self.models[variant].encode(sentences, batch_size=batch_size, convert_to_numpy=True)
        seconds = time.perf_counter() - start
        if cmd.get("embeddings_path"):
            np.save(cmd["embeddings_path"], np.asarray(embeddings, np.float32))
        return {"seconds": seconds, "sentences": len(sentences)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", required=True, help="A sentence-transformers folder.")
    parser.add_argument("--work_dir", required=True, help="Scratch folder for the variants' exports.")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--calibration_file", default="", help="openvino-int8's calibration sentences, one a line.")
    args = parser.parse_args(argv)
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    sys.stdout = sys.stderr  # anything a library prints goes to stderr
    calibration = []
    if args.calibration_file:
        with open(args.calibration_file, encoding="utf-8") as f:
            calibration = [line.strip() for line in f if line.strip()]
    models = Models(args.folder, args.work_dir, args.threads, calibration)
    answers.write(json.dumps({"ok": True, "ready": True, **versions()}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        cmd = json.loads(line)
        try:
            if cmd["cmd"] == "quit":
                answers.write(json.dumps({"ok": True}) + "\n")
                return 0
            if cmd["cmd"] == "info":
                answer = versions()
            elif cmd["cmd"] == "encode":
                answer = models.encode(cmd)
            else:
                raise ValueError(f"unknown command {cmd['cmd']!r}; expected info, encode or quit")
            answer = {"ok": True, **answer}
        except Exception as error:  # the parent reports it; the worker stays up
            answer = {"ok": False, "error": f"{type(error).__name__}: {error}"}
        answers.write(json.dumps(answer) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
