"""The reference side of bench/parity.py: one training job in sentence-transformers, run with the
reference environment's Python (`make reference-env`). Imports nothing of this project.

    .venv-ref/bin/python bench/parity_worker.py --job=<job.json> --out=<folder>

The job (JSON, written by bench/parity.py) names the start (a Hugging Face BERT folder), the
loss and every setting, and holds the training examples in the order the toolkit's sampler drew
them: `examples` is a list of rows (a row's texts; `labels` one float per row for the regression
losses), `batch_size` rows per step, exactly `steps` steps. The rows are fed in that order
(`DataLoader(shuffle=False)`) to sentence-transformers' own trainer of the pre-4.0 API (`old_fit`,
which needs neither `datasets` nor `accelerate`): AdamW (biases and LayerNorm weights without
decay), `WarmupLinear` (linear warm-up over `warmup_steps`, then linear decay to 0), the gradient
norm clipped to `clip_norm` (0: no clip), dropout on (the model in train mode).

Losses (`loss`):
- "mnrl": `MultipleNegativesRankingLoss(scale)` on a SentenceTransformer made of
  `Transformer(start, max_seq_length)` and `Pooling(pooling)`; a row is (anchor, positive[,
  hard negative]). Unsupervised SimCSE is the row (s, s): two forward passes, two dropout masks.
- "cosine": `CosineSimilarityLoss` (MSE between cos(u, v) and the label) on the same model; a row
  is (sentence1, sentence2).
- "cross": `CrossEncoder(start, num_labels=1, max_length)` (Hugging Face's
  `BertForSequenceClassification`) with `old_fit`'s default loss for one label, `BCEWithLogitsLoss`,
  on soft labels; a row is (sentence1, sentence2).

`dropout` (optional) replaces the start's hidden and attention dropout rates. `snapshot_every`
(optional, bi-encoder losses) saves the model as it stands after every that many steps, as
`snapshots/step_<k>/` (the same plain folder as `model/`), for bench/parity.py to score on STS-B dev
with the toolkit's evaluator: the reference side's training curve. The saving time is left out of
the fit's seconds and reported on its own.

Writes into --out: `model/` (the trained Hugging Face model under the SentenceTransformer or
CrossEncoder, `BertModel` or `BertForSequenceClassification`, as a plain folder with `vocab.txt`:
what the toolkit loads; the pooling is the job's) and `result.json` (the fit's seconds, each step's
training loss, the padded lengths of the first batch, versions). Seeds torch with `seed` (dropout
masks and the fresh pooler/classifier initial values). HF_HUB_OFFLINE and TRANSFORMERS_OFFLINE are
set before anything of Hugging Face is imported. argparse, not absl: the reference environment has
no absl.
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

LOSSES = ("mnrl", "cosine", "cross")


def versions() -> dict:
    import numpy
    import sentence_transformers
    import tokenizers
    import torch
    import transformers

    return {"python": sys.version.split()[0], "torch": torch.__version__,
            "sentence_transformers": sentence_transformers.__version__, "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__, "numpy": numpy.__version__,
            "torch_threads": torch.get_num_threads()}


def _recording(loss_module, before_step=None):
    """`loss_module` wrapped so that every call's value is kept (old_fit reports none). old_fit calls
    the loss once per step, so the call after k values is the (k+1)-th step, and the weights are those
    of k optimizer steps: `before_step(k)`, if given, runs then."""
    import torch

    class Recording(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner
            self.values = []

        def forward(self, *args, **kwargs):
            if before_step is not None:
                before_step(len(self.values))
            value = self.inner(*args, **kwargs)
            self.values.append(float(value.detach()))
            return value

    return Recording(loss_module)


class Snapshots:
    """Saves the model every `every` steps (after steps every, 2 every, ...) under `out`/snapshots/,
    and keeps the seconds it took (left out of the fit's time)."""

    def __init__(self, every: int, save, out: str):
        self.every, self.save, self.folder = every, save, os.path.join(out, "snapshots")
        self.seconds = 0.0
        self.steps = []

    def __call__(self, done: int) -> None:
        if not self.every or done == 0 or done % self.every:
            return
        began = time.perf_counter()
        self.save(os.path.join(self.folder, f"step_{done}"))
        self.steps.append(done)
        self.seconds += time.perf_counter() - began

    def finish(self, done: int, final: str) -> None:
        """The last step's snapshot is the saved model itself: linked, not saved twice."""
        if self.every and done % self.every == 0:
            os.makedirs(self.folder, exist_ok=True)
            os.symlink(os.path.relpath(final, self.folder), os.path.join(self.folder, f"step_{done}"))
            self.steps.append(done)


def _fit_arguments(job: dict) -> dict:
    """old_fit's optimizer, schedule and clipping settings from the job."""
    import torch

    clip = float(job["clip_norm"])
    return dict(epochs=1, scheduler="WarmupLinear", warmup_steps=int(job["warmup_steps"]),
                optimizer_class=torch.optim.AdamW,
                optimizer_params={"lr": float(job["lr"]), "eps": float(job["adam_epsilon"])},
                weight_decay=float(job["weight_decay"]),
                # torch's clip with an infinite norm leaves the gradient as it is: no clip.
                max_grad_norm=clip if clip > 0 else float("inf"), show_progress_bar=False)


def _config_kwargs(job: dict) -> dict:
    """The job's dropout as Hugging Face config settings (none: the start's own)."""
    if job.get("dropout") is None:
        return {}
    rate = float(job["dropout"])
    return {"hidden_dropout_prob": rate, "attention_probs_dropout_prob": rate}


def _batches(job: dict):
    from sentence_transformers import InputExample
    from torch.utils.data import DataLoader

    rows, batch, steps = job["examples"], int(job["batch_size"]), int(job["steps"])
    if len(rows) != batch * steps:
        raise ValueError(f"the job holds {len(rows)} rows; {steps} steps of {batch} need {batch * steps}")
    labels = job.get("labels")
    examples = [InputExample(texts=list(r), label=float(labels[i]) if labels is not None else 0)
                for i, r in enumerate(rows)]
    return DataLoader(examples, batch_size=batch, shuffle=False, drop_last=True)


def save_hf_folder(hf_model, tokenizer, folder: str) -> None:
    """The trained Hugging Face model (`BertModel` or `BertForSequenceClassification`) as a plain
    folder, with `vocab.txt` (one token per line, in id order): transformers 5 saves a BERT
    tokenizer as `tokenizer.json` only, and the toolkit reads a BERT folder's `vocab.txt`. (The
    sentence-transformers folder around it adds only the pooling, which the job names.)"""
    hf_model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    vocab = tokenizer.get_vocab()
    tokens = sorted(vocab, key=vocab.get)
    if [vocab[t] for t in tokens] != list(range(len(tokens))):
        raise ValueError("the tokenizer's vocabulary ids are not 0..n-1; cannot write vocab.txt")
    with open(os.path.join(folder, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(tokens) + "\n")


def train_bi_encoder(job: dict, out: str) -> dict:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import (CosineSimilarityLoss,
                                                                   MultipleNegativesRankingLoss)
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    transformer = Transformer(job["start"], max_seq_length=int(job["max_seq_len"]), config_kwargs=_config_kwargs(job))
    pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode=job["pooling"])
    model = SentenceTransformer(modules=[transformer, pooling], device="cpu")
    if job["loss"] == "mnrl":
        loss = MultipleNegativesRankingLoss(model, scale=float(job["scale"]))
    else:
        loss = CosineSimilarityLoss(model)
    snapshots = Snapshots(int(job.get("snapshot_every") or 0),
                          lambda folder: save_hf_folder(transformer.auto_model, model.tokenizer, folder), out)
    loss = _recording(loss, snapshots)
    loader = _batches(job)
    first = model.smart_batching_collate([loader.dataset[i] for i in range(int(job["batch_size"]))])[0]
    start = time.perf_counter()
    model.old_fit(train_objectives=[(loader, loss)], steps_per_epoch=int(job["steps"]), **_fit_arguments(job))
    seconds = time.perf_counter() - start - snapshots.seconds
    final = os.path.join(out, "model")
    save_hf_folder(transformer.auto_model, model.tokenizer, final)
    snapshots.finish(len(loss.values), final)
    return {"seconds": seconds, "losses": loss.values, "snapshot_steps": snapshots.steps,
            "snapshot_seconds": snapshots.seconds,
            "first_batch_padded_lengths": [int(f["input_ids"].shape[1]) for f in first]}


def train_cross_encoder(job: dict, out: str) -> dict:
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(job["start"], num_labels=1, max_length=int(job["max_seq_len"]), device="cpu",
                         config_kwargs=_config_kwargs(job) or None)
    loss = _recording(__import__("torch").nn.BCEWithLogitsLoss())
    loader = _batches(job)
    start = time.perf_counter()
    model.old_fit(loader, loss_fct=loss, **_fit_arguments(job))
    seconds = time.perf_counter() - start
    save_hf_folder(model.model, model.tokenizer, os.path.join(out, "model"))
    return {"seconds": seconds, "losses": loss.values}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--job", required=True, help="The job's JSON file (bench/parity.py writes it).")
    parser.add_argument("--out", required=True, help="Folder for model/ and result.json.")
    args = parser.parse_args(argv)
    with open(args.job, encoding="utf-8") as f:
        job = json.load(f)
    if job["loss"] not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {job['loss']!r}")
    import torch

    if job.get("threads"):
        torch.set_num_threads(int(job["threads"]))
    torch.manual_seed(int(job["seed"]))
    os.makedirs(args.out, exist_ok=True)
    began = time.perf_counter()
    result = train_cross_encoder(job, args.out) if job["loss"] == "cross" else train_bi_encoder(job, args.out)
    result.update(steps=len(result["losses"]), process_seconds=time.perf_counter() - began, **versions())
    with open(os.path.join(args.out, "result.json"), "w", encoding="utf-8") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
