"""The sentence-transformers side of bench/vs_sentence_transformers.py, run with the reference
environment's Python (`make reference-env`). Imports nothing of this project.

Two modes:

    # A persistent worker: one JSON command per line on stdin, one JSON answer per line on stdout.
    .venv-ref/bin/python bench/st_worker.py --model=<sentence-transformers folder> --threads=2
    # The end-to-end STS job (what test_sts.py --model=minilm does): load, read, encode, score, print JSON.
    .venv-ref/bin/python bench/st_worker.py --sts --model=<folder> --data_path=../shared/data

Worker commands (each answer has "ok"; a failed command answers "ok": false and "error"):
    {"cmd": "info"}: versions and threads.
    {"cmd": "encode", "sentences": [...], "batch_size": 64, "max_seq_len": 256, "precision": "fp32"|"bf16",
     "embeddings_path": optional .npy path}: {"seconds", "sentences"}. Timed with
     time.perf_counter around `SentenceTransformer.encode` after a warm-up (the first command of each
     precision and max length encodes two batches untimed first).
    {"cmd": "train", "batches": [[sentence, ...], ...], "max_seq_len": 32, "precision": ..., "lr": 3e-5,
     "weight_decay": 0.01, "warmup_steps": 2}: unsupervised SimCSE as sentence-transformers writes it,
     MultipleNegativesRankingLoss (scale 20 = 1 / temperature 0.05) over (s, s) pairs with dropout
     (model.train()), torch AdamW, a manual zero_grad/forward/backward/step loop. Batches are tokenized
     before the clock starts; `warmup_steps` untimed steps run first (on the first batches). Answers
     {"seconds", "steps", "pairs", "losses", "padded_lengths"}. Each max length trains its own copy of the
     model, kept between commands (as the toolkit's side keeps its model).
    {"cmd": "quit"}.

HF_HUB_OFFLINE and TRANSFORMERS_OFFLINE are set before anything of Hugging Face is imported: the
model is a local folder and nothing may reach the hub. argparse, not absl: the reference environment
has no absl.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# SentEval's STS12-16 subsets, as test_sts.py reads them (common/data/sts.py).
STS_SUBSETS = {
    "sts12": ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"),
    "sts13": ("FNWN", "headlines", "OnWN"),
    "sts14": ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"),
    "sts15": ("answers-forums", "answers-students", "belief", "headlines", "images"),
    "sts16": ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
}


def set_threads(threads: int) -> None:
    """The same thread count as the toolkit's side: OpenMP/MKL pools and torch's intra/inter-op pools."""
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(threads)
    import torch

    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:  # already set (it can be set once, before any inter-op work)
        pass


def versions() -> dict:
    import huggingface_hub
    import numpy
    import sentence_transformers
    import tokenizers
    import torch
    import transformers

    return {"python": sys.version.split()[0], "torch": torch.__version__,
            "sentence_transformers": sentence_transformers.__version__, "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__, "huggingface_hub": huggingface_hub.__version__,
            "numpy": numpy.__version__, "torch_threads": torch.get_num_threads(),
            "torch_interop_threads": torch.get_num_interop_threads()}


def _autocast(precision: str):
    import contextlib

    import torch

    if precision == "fp32":
        return contextlib.nullcontext()
    if precision == "bf16":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    raise ValueError(f"precision must be fp32 or bf16, got {precision!r}")


class Worker:
    """Holds the encoding model and one training copy per max length between commands."""

    def __init__(self, folder: str):
        from sentence_transformers import SentenceTransformer

        start = time.perf_counter()
        self.folder = folder
        self.model = SentenceTransformer(folder, device="cpu")
        self.model.eval()
        self.load_seconds = time.perf_counter() - start
        self.trainers = {}
        self.warm = set()

    def encode(self, cmd: dict) -> dict:
        import numpy as np

        sentences, batch_size, precision = cmd["sentences"], int(cmd["batch_size"]), cmd["precision"]
        self.model.max_seq_length = int(cmd["max_seq_len"])
        key = ("encode", precision, self.model.max_seq_length)
        if key not in self.warm:
            with _autocast(precision):
                self.model.encode(sentences[:2 * batch_size], batch_size=batch_size, convert_to_numpy=True)
            self.warm.add(key)
        start = time.perf_counter()
        with _autocast(precision):
            embeddings = self.model.encode(sentences, batch_size=batch_size, convert_to_numpy=True)
        seconds = time.perf_counter() - start
        if cmd.get("embeddings_path"):
            np.save(cmd["embeddings_path"], np.asarray(embeddings, np.float32))
        return {"seconds": seconds, "sentences": len(sentences), "dim": int(embeddings.shape[1])}

    def _trainer(self, max_seq_len: int, lr: float, weight_decay: float):
        if max_seq_len not in self.trainers:
            import torch
            from sentence_transformers import SentenceTransformer
            from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

            model = SentenceTransformer(self.folder, device="cpu")
            model.max_seq_length = max_seq_len
            model.train()
            loss = MultipleNegativesRankingLoss(model, scale=20.0)
            optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
            self.trainers[max_seq_len] = (model, loss, optimizer)
        return self.trainers[max_seq_len]

    def train(self, cmd: dict) -> dict:
        batches, precision = cmd["batches"], cmd["precision"]
        warmup = int(cmd.get("warmup_steps", 2))
        model, loss_fn, optimizer = self._trainer(int(cmd["max_seq_len"]), float(cmd.get("lr", 3e-5)),
                                                  float(cmd.get("weight_decay", 0.01)))
        model.train()
        features = [model.preprocess(batch) for batch in batches]

        def step(f):
            optimizer.zero_grad(set_to_none=True)
            with _autocast(precision):
                # The same tokens twice: two forward passes, two dropout masks (unsup SimCSE).
                loss = loss_fn([dict(f), dict(f)], None)
            loss.backward()
            optimizer.step()
            return float(loss.detach().float())

        for f in features[:warmup]:
            step(f)
        start = time.perf_counter()
        losses = [step(f) for f in features]
        seconds = time.perf_counter() - start
        return {"seconds": seconds, "steps": len(features), "pairs": sum(len(b) for b in batches),
                "losses": losses, "padded_lengths": [int(f["input_ids"].shape[1]) for f in features]}


def serve(folder: str, threads: int) -> int:
    # Answers go to the real stdout alone; anything a library prints goes to stderr.
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    sys.stdout = sys.stderr
    set_threads(threads)
    worker = Worker(folder)
    answers.write(json.dumps({"ok": True, "ready": True, "load_seconds": worker.load_seconds, **versions()}) + "\n")
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
                answer = worker.encode(cmd)
            elif cmd["cmd"] == "train":
                answer = worker.train(cmd)
            else:
                raise ValueError(f"unknown command {cmd['cmd']!r}; expected info, encode, train or quit")
            answer = {"ok": True, **answer}
        except Exception as error:  # the parent reports it; the worker stays up
            answer = {"ok": False, "error": f"{type(error).__name__}: {error}"}
        answers.write(json.dumps(answer) + "\n")
    return 0


# === The end-to-end STS job ===

def _read_lines(path: str) -> list:
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} not found; --data_path must hold SentEval's downstream/ folder.")
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def load_sets(data_path: str) -> dict:
    """{set: {subset: (sentences1, sentences2, scores)}}: the sets and rules of common/data/sts.py
    (STS12-16 pairs with an empty gold line skipped; STS-B score in column 4, sentences in 5 and 6;
    SICK relatedness with its header line)."""
    root = os.path.join(data_path, "downstream")
    sets = {}
    for year, subsets in STS_SUBSETS.items():
        sets[year] = {}
        for name in subsets:
            directory = os.path.join(root, "STS", f"{year.upper()}-en-test")
            inputs = _read_lines(os.path.join(directory, f"STS.input.{name}.txt"))
            golds = _read_lines(os.path.join(directory, f"STS.gs.{name}.txt"))
            pairs = [(line.split("\t"), float(gold)) for line, gold in zip(inputs, golds) if gold.strip()]
            sets[year][name] = ([p[0][0] for p in pairs], [p[0][1] for p in pairs], [p[1] for p in pairs])
    sets["stsb"] = {}
    for split in ("test", "dev"):
        rows = [line.split("\t") for line in _read_lines(os.path.join(root, "STS", "STSBenchmark", f"sts-{split}.csv"))
                if line.strip()]
        sets["stsb"][split] = ([r[5] for r in rows], [r[6] for r in rows], [float(r[4]) for r in rows])
    rows = [line.split("\t") for line in _read_lines(os.path.join(root, "SICK", "SICK_test_annotated.txt"))[1:]
            if line.strip()]
    sets["sickr"] = {"test": ([r[1] for r in rows], [r[2] for r in rows], [float(r[3]) for r in rows])}
    return sets


def run_sts(folder: str, data_path: str, threads: int, batch_size: int, max_seq_len: int,
            precision: str = "fp32") -> dict:
    """Scores the model as test_sts.py does: each distinct sentence encoded once, the cosine
    similarity of a pair against its gold score, Spearman x100; STS12-16 "all" pools a year's pairs."""
    set_threads(threads)
    import numpy as np
    from scipy.stats import spearmanr
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(folder, device="cpu")
    if max_seq_len:
        model.max_seq_length = max_seq_len
    sets = load_sets(data_path)
    unique = sorted({s for group in sets.values() for s1, s2, _ in group.values() for s in s1 + s2})
    with _autocast(precision):
        vectors = model.encode(unique, batch_size=batch_size, convert_to_numpy=True)
    vectors = np.asarray(vectors, np.float64)
    index = {s: i for i, s in enumerate(unique)}

    def predict(s1, s2):
        a, b = vectors[[index[s] for s in s1]], vectors[[index[s] for s in s2]]
        return np.sum(a * b, axis=1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)

    def spearman(pred, gold):
        return float(spearmanr(pred, gold).correlation * 100.0)

    results = {}
    for year in STS_SUBSETS:
        group = sets[year].values()
        results[year] = spearman(np.concatenate([predict(s1, s2) for s1, s2, _ in group]),
                                 np.concatenate([g for _, _, g in group]))
    for name, split in (("stsb", "test"), ("stsb_dev", "dev")):
        s1, s2, gold = sets["stsb"][split]
        results[name] = spearman(predict(s1, s2), gold)
    s1, s2, gold = sets["sickr"]["test"]
    results["sickr"] = spearman(predict(s1, s2), gold)
    results["avg"] = float(np.mean([results[k] for k in (*STS_SUBSETS, "stsb", "sickr")]))
    return {"scores": results, "sentences": len(unique), "max_seq_len": model.max_seq_length, "precision": precision,
            **versions()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="A sentence-transformers folder (loaded offline).")
    parser.add_argument("--threads", type=int, default=2, help="torch intra- and inter-op threads.")
    parser.add_argument("--sts", action="store_true", help="Run the end-to-end STS job once and exit.")
    parser.add_argument("--data_path", default="data", help="--sts: data root holding downstream/.")
    parser.add_argument("--batch_size", type=int, default=128, help="--sts: encoding batch size.")
    parser.add_argument("--max_seq_len", type=int, default=0, help="--sts: max tokens; 0 keeps the model's.")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16"],
                        help="--sts: fp32, or bf16 under torch.autocast (as the encoding figures).")
    args = parser.parse_args(argv)
    if args.sts:
        print(json.dumps(run_sts(args.model, args.data_path, args.threads, args.batch_size, args.max_seq_len,
                                   args.precision)))
        return 0
    return serve(args.model, args.threads)


if __name__ == "__main__":
    sys.exit(main())
