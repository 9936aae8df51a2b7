"""Does `SentenceTransformer(folder).encode` give this toolkit's embeddings for an exported folder?

The check runs in two environments, since this project does not depend on PyTorch:

    # 1. Here (the project's .venv): this toolkit's embeddings of the test sentences
    .venv/bin/python check_sentence_transformers.py --folder=exports/run-st --write_reference=ref.npz
    # 2. Anywhere with PyTorch and sentence-transformers (pip install torch sentence-transformers)
    python check_sentence_transformers.py --folder=exports/run-st --reference=ref.npz
    # ... or with one of the backends an export carries (export.py --st_backends=onnx,openvino), each in
    # an environment with that backend (make reference-backends-env / make reference-onnx-env)
    .venv-ref-backends/bin/python check_sentence_transformers.py --folder=exports/run-st \
        --reference=ref.npz --backend=openvino
    .venv-ref-onnx/bin/python check_sentence_transformers.py --folder=exports/run-st \
        --reference=ref.npz --backend=onnx

Step 2 imports nothing of this project: it reads the sentences and embeddings from the
.npz, encodes the sentences with `SentenceTransformer(folder, device="cpu")`, prints the
largest absolute difference and the smallest cosine similarity per sentence, and exits
with 1 when the difference exceeds --atol. `--backend=onnx|openvino` loads the folder's `onnx/` or
`openvino/` model (`SentenceTransformer(folder, backend=...)`, OpenVINO asked for float32 inference)
and fails if the folder has none (sentence-transformers would export one of its own instead).
`--sentences_file` (one sentence a line) replaces the built-in sentences in step 1.

argparse, not absl: step 2 runs in an environment that need not have this project's
dependencies (copy this one file there).
"""

from __future__ import annotations

import argparse
import os
import sys

SENTENCES = [
    "A man is playing a guitar.",
    "Someone is playing an instrument.",
    "The stock market fell sharply on Monday afternoon after the announcement.",
    "",
    "Crème brûlée, isn't it?",
    "A woman is slicing an onion.",
    "Two dogs run across a grassy field while their owner watches from the porch.",
    "What is the capital of France?",
    "lowercase words only here",
    "The quick brown fox jumps over the lazy dog. " * 12,
]


def _write_reference(folder: str, path: str, sentences_file: str) -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the repository root, wherever it runs from
    import numpy as np

    from common import cli  # noqa: F401  (first: it quiets TensorFlow's start-up)
    from common import SentenceModel

    sentences = SENTENCES
    if sentences_file:
        with open(sentences_file, encoding="utf-8") as f:
            sentences = [line.rstrip("\n") for line in f]
    embeddings = SentenceModel(folder).encode(sentences)
    np.savez(path, sentences=np.array(sentences, dtype=object), embeddings=embeddings)
    print(f"wrote {len(sentences)} sentences and this toolkit's embeddings {embeddings.shape} to {path}")


def _compare(folder: str, path: str, atol: float, batch_size: int, backend: str = "torch") -> int:
    import numpy as np
    from sentence_transformers import SentenceTransformer

    reference = np.load(path, allow_pickle=True)
    sentences = [str(s) for s in reference["sentences"]]
    ours = reference["embeddings"]
    if backend != "torch":
        expected = {"onnx": os.path.join("onnx", "model.onnx"),
                    "openvino": os.path.join("openvino", "openvino_model.xml")}[backend]
        if not os.path.exists(os.path.join(folder, expected)):
            print(f"FAIL: {folder} has no {expected}; export it with export.py --st_backends={backend}")
            return 1
    # OpenVINO's CPU plugin computes in bfloat16 by default where the CPU has it; the check is of float32.
    kwargs = {"model_kwargs": {"ov_config": {"INFERENCE_PRECISION_HINT": "f32"}}} if backend == "openvino" else {}
    model = SentenceTransformer(folder, device="cpu", backend=backend, **kwargs)
    theirs = model.encode(sentences, batch_size=batch_size, convert_to_numpy=True)
    diff = np.abs(theirs - ours).max(axis=1)
    cosine = np.sum(theirs * ours, axis=1) / np.maximum(
        np.linalg.norm(theirs, axis=1) * np.linalg.norm(ours, axis=1), 1e-12)
    import sentence_transformers
    import torch

    print(f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}, backend "
          f"{backend}; {folder}: {model}")
    print(f"{len(sentences)} sentences, embeddings {theirs.shape}: max abs diff {diff.max():.2e} "
          f"(sentence {int(diff.argmax())}), min cosine {cosine.min():.8f}")
    if theirs.shape != ours.shape or diff.max() > atol:
        print(f"FAIL: the difference exceeds --atol={atol}")
        return 1
    print(f"OK: within --atol={atol}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", required=True, help="An export of export.py --format=sentence-transformers.")
    parser.add_argument("--write_reference", default="", help="Step 1: write this toolkit's embeddings here (.npz).")
    parser.add_argument("--reference", default="", help="Step 2: the .npz of step 1 to compare against.")
    parser.add_argument("--sentences_file", default="", help="Step 1: sentences to use, one a line.")
    parser.add_argument("--atol", type=float, default=1e-4, help="Largest absolute difference accepted.")
    parser.add_argument("--batch_size", type=int, default=32, help="sentence-transformers' batch size.")
    parser.add_argument("--backend", default="torch", choices=("torch", "onnx", "openvino"),
                        help="Step 2: sentence-transformers' backend; onnx and openvino load the folder's "
                             "onnx/ or openvino/ subfolder (export.py --st_backends).")
    args = parser.parse_args(argv)
    if bool(args.write_reference) == bool(args.reference):
        parser.error("give exactly one of --write_reference (step 1) and --reference (step 2)")
    if args.write_reference:
        try:
            _write_reference(args.folder, args.write_reference, args.sentences_file)
        except (OSError, ValueError) as error:
            from common.cli import USER_ERRORS

            if not isinstance(error, USER_ERRORS):
                raise
            parser.exit(2, f"{parser.prog}: {error}\n")
        return 0
    return _compare(args.folder, args.reference, args.atol, args.batch_size, args.backend)


if __name__ == "__main__":
    sys.exit(main())
