"""Masked-LM pretraining with Hugging Face `transformers`' BertForMaskedLM (PyTorch), the reference.

Runs where PyTorch and `transformers` are installed and TensorFlow need not be (the reference
environment of `make reference-env`, or a GPU machine), on the windows `bench/pack_books.py` wrote
with the toolkit's tokenizer and whole-book split:

    python -m bench.hf_pretrain --windows=artifacts/books_128.npz --size=random_bert_mini \
        --epochs=20 --batch_size=256 --lrs=5e-4,1e-3,2e-3 --precision=bf16 --out_dir=artifacts/bert_mini_books

Recipe (BERT's, Devlin et al. 2019): 15 % of the real tokens selected, 80 % [MASK] / 10 % random /
10 % unchanged, fresh masks every step; AdamW (weight decay 0.01, none on biases and LayerNorm),
linear warm-up over `--warmup_fraction` of the steps, then linear decay to zero at the end of the
budget; dropout `--dropout` during pretraining (0 by default: with a few epochs of data the model
underfits, and dropout is the downstream methods' business). With several `--lrs`, each is piloted
for `--pilot_epochs` and the one with the lowest held-out loss trains the full run (held-out books
only: no STS set is read here).

At every epoch end the fixed held-out windows (fixed masks) are scored, beside the unigram-frequency
predictor on the same masks (it predicts every masked token from the training tokens' frequencies),
so the log shows how far the model is above that plateau; and, when the windows file carries STS-B
dev, the Spearman x100 of its mean-pooled cosine similarities (the toolkit's tokens), so the curve
shows what pretraining does to sentence similarity before any method trains.

Writes a Hugging Face BERT folder the toolkit loads as `--model=<out_dir>` (config.json,
model.safetensors with the MLM head, vocab.txt) and `pretraining.json` (recipe, curve, unigram
floor, throughput). The saved config carries `--downstream_dropout` (BERT's 0.1 by default), not
the pretraining dropout: a method trained from this model gets BERT's usual dropout back.

`--mode=throughput` instead times training steps (tokens/s) at each `--precisions`, alternating
rounds, for the side-by-side table against the toolkit's `--method=mlm` step.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time

import numpy as np
from absl import app, flags

# (layers, hidden size, heads) of Google's small BERTs, as the toolkit's FRESH_BERTS; and their old
# spellings, as its SPEC_ALIASES. This script runs without TensorFlow, so it cannot import the toolkit's
# tables; tests/bench/test_pretraining.py checks that these agree with them.
SHAPES = {"random_bert_tiny": (2, 128, 2), "random_bert_mini": (4, 256, 4), "random_bert_small": (4, 512, 8),
          "random_bert_medium": (8, 512, 8), "random_bert_base": (12, 768, 12)}
OLD_SIZES = {name.removeprefix("random_"): name for name in SHAPES}

FLAGS = flags.FLAGS


def define_flags() -> None:
    """The script's flags, defined when it runs, not at import: the bench modules import beside each other
    (the tests), and several define flags of the same names."""
    flags.DEFINE_enum("mode", "pretrain", ["pretrain", "throughput"], "Pretrain a model, or time training steps.")
    flags.DEFINE_string("windows", None, "The .npz written by bench/pack_books.py.")
    flags.DEFINE_string("out_dir", None, "Where the Hugging Face folder and pretraining.json are written (pretrain).")
    flags.DEFINE_enum("size", "random_bert_mini", [*SHAPES, *OLD_SIZES],
                      "Google's small-BERT shape, by the toolkit's name for a fresh BERT of it (random_bert_tiny ... "
                      "random_bert_base).")
    flags.DEFINE_integer("epochs", 10, "Passes over the training windows (the full run).")
    flags.DEFINE_integer("batch_size", 256, "Windows per step.")
    flags.DEFINE_list("lrs", ["1e-3"], "Peak learning rates; with several, short pilots choose one on held-out loss.")
    flags.DEFINE_float("pilot_epochs", 1.0, "Epochs of each learning-rate pilot.")
    flags.DEFINE_float("warmup_fraction", 0.05, "Share of the steps spent warming up.")
    flags.DEFINE_float("weight_decay", 0.01, "AdamW weight decay (BERT's).")
    flags.DEFINE_float("dropout", 0.0, "Dropout during pretraining.")
    flags.DEFINE_float("downstream_dropout", 0.1,
                       "Dropout written to the saved config.json, for methods trained from it.")
    flags.DEFINE_float("mask_rate", 0.15, "Share of real tokens selected for prediction.")
    flags.DEFINE_enum("precision", "bf16", ["fp32", "bf16"], "Training precision (bf16: autocast).")
    flags.DEFINE_list("precisions", ["fp32", "bf16"], "Precisions timed by --mode=throughput.")
    flags.DEFINE_integer("heldout_windows", 2048,
                         "Held-out windows scored at each epoch end (fixed subset, fixed masks).")
    flags.DEFINE_float("max_minutes", 0.0, "If > 0: fewer epochs when the measured step time says the run would "
                       "take longer (decided after 50 steps, before the schedule's decay).")
    flags.DEFINE_integer("rounds", 3, "Timed rounds per precision (throughput).")
    flags.DEFINE_integer("steps", 10, "Timed steps per round (throughput).")
    flags.DEFINE_integer("threads", 0, "torch.set_num_threads (0: PyTorch's default).")
    flags.DEFINE_integer("seed", 0, "Seed of initialisation, masks and order.")
    flags.DEFINE_enum("save_dtype", "fp32", ["fp32", "fp16"], "Dtype of the saved weights (fp16 halves the file; the "
                      "toolkit loads either as float32).")

IGNORE = -100


def load_windows(path: str) -> dict:
    if not os.path.exists(path):
        raise app.UsageError(f"--windows={path}: no such file; write it with `python -m bench.pack_books`.")
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def bert_config(size: str, vocab_size: int, dropout: float):
    from transformers import BertConfig

    layers, hidden, heads = SHAPES[size]
    return BertConfig(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                      intermediate_size=4 * hidden, hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout,
                      max_position_embeddings=512, type_vocab_size=2, hidden_act="gelu")


class Masker:
    """BERT's 80/10/10 masking on packed windows, from a torch generator."""

    def __init__(self, data: dict, rate: float, device):
        import torch

        self.torch, self.rate, self.device = torch, rate, device
        self.special = torch.tensor([int(data["cls_id"]), int(data["sep_id"]), int(data["pad_id"])], device=device)
        self.mask_id, self.vocab_size = int(data["mask_id"]), len(data["vocab"])

    def __call__(self, ids, lengths, generator):
        torch = self.torch
        positions = torch.arange(ids.shape[1], device=ids.device)[None, :]
        attention = positions < lengths[:, None]
        candidate = attention & ~torch.isin(ids, self.special)
        u = torch.rand(ids.shape, device=ids.device, generator=generator)
        action = torch.rand(ids.shape, device=ids.device, generator=generator)
        random_ids = torch.randint(0, self.vocab_size, ids.shape, device=ids.device, generator=generator)
        selected = candidate & (u < self.rate)
        inputs = torch.where(selected & (action < 0.8), torch.full_like(ids, self.mask_id),
                             torch.where(selected & (action >= 0.8) & (action < 0.9), random_ids, ids))
        labels = torch.where(selected, ids, torch.full_like(ids, IGNORE))
        return inputs, attention.long(), labels


def unigram_log_probs(data: dict) -> np.ndarray:
    """log p(token) from the training windows' real, non-special tokens (add-one smoothed)."""
    ids, lengths = data["train_ids"].astype(np.int64), data["train_lengths"]
    real = np.arange(ids.shape[1])[None, :] < lengths[:, None]
    counts = np.bincount(ids[real], minlength=len(data["vocab"])).astype(np.float64)
    for key in ("cls_id", "sep_id", "pad_id"):
        counts[int(data[key])] = 0.0
    counts += 1.0
    return np.log(counts / counts.sum())


def param_groups(model, weight_decay: float):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if name.endswith("bias") or "LayerNorm" in name else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


class Run:
    """One pretraining run (a pilot or the full run) over the packed windows."""

    def __init__(self, data: dict, device, lr: float, epochs: float, log_every: int = 50):
        import torch
        from transformers import BertForMaskedLM

        self.torch, self.data, self.device, self.lr = torch, data, device, lr
        torch.manual_seed(FLAGS.seed)
        self.model = BertForMaskedLM(bert_config(FLAGS.size, len(data["vocab"]), FLAGS.dropout)).to(device)
        fused = device.type == "cuda"
        self.optimizer = torch.optim.AdamW(param_groups(self.model, FLAGS.weight_decay), lr=lr, betas=(0.9, 0.999),
                                           eps=1e-6, fused=fused)
        self.ids = torch.as_tensor(data["train_ids"].astype(np.int64), device=device)
        self.lengths = torch.as_tensor(data["train_lengths"].astype(np.int64), device=device)
        self.steps_per_epoch = len(self.ids) // FLAGS.batch_size
        self.total = max(1, int(round(epochs * self.steps_per_epoch)))
        self.masker = Masker(data, FLAGS.mask_rate, device)
        self.generator = torch.Generator(device=device).manual_seed(FLAGS.seed)
        self.log_every, self.curve, self.step = log_every, [], 0
        self.autocast = dict(device_type=device.type, dtype=torch.bfloat16, enabled=FLAGS.precision == "bf16")
        self._heldout()

    def _heldout(self):
        torch, data = self.torch, self.data
        rng = np.random.default_rng(FLAGS.seed)
        pick = np.sort(rng.permutation(len(data["heldout_ids"]))[:FLAGS.heldout_windows])
        ids = torch.as_tensor(data["heldout_ids"][pick].astype(np.int64), device=self.device)
        lengths = torch.as_tensor(data["heldout_lengths"][pick].astype(np.int64), device=self.device)
        generator = torch.Generator(device=self.device).manual_seed(10_000 + FLAGS.seed)
        self.held = self.masker(ids, lengths, generator)
        labels = self.held[2].cpu().numpy()
        chosen = labels[labels != IGNORE]
        log_p = unigram_log_probs(data)
        self.unigram = {"loss": float(-log_p[chosen].mean()), "accuracy": float((chosen == log_p.argmax()).mean()),
                        "masked_tokens": int(len(chosen))}

    def schedule(self, step: int) -> float:
        warmup = max(1, int(FLAGS.warmup_fraction * self.total))
        if step < warmup:
            return self.lr * (step + 1) / warmup
        return self.lr * max(0.0, (self.total - step) / max(1, self.total - warmup))

    def evaluate(self) -> dict:
        torch = self.torch
        self.model.eval()
        total, correct, count = 0.0, 0, 0
        with torch.no_grad(), torch.autocast(**self.autocast):
            for start in range(0, len(self.held[0]), FLAGS.batch_size):
                inputs, attention, labels = (t[start:start + FLAGS.batch_size] for t in self.held)
                logits = self.model(input_ids=inputs, attention_mask=attention).logits.float()
                chosen = labels != IGNORE
                total += float(torch.nn.functional.cross_entropy(logits[chosen], labels[chosen], reduction="sum"))
                correct += int((logits[chosen].argmax(-1) == labels[chosen]).sum())
                count += int(chosen.sum())
        result = {"loss": total / count, "accuracy": correct / count}
        if "stsb_ids" in self.data:
            result["stsb_dev"] = self.stsb_dev()
        self.model.train()
        return result

    def stsb_dev(self) -> float:
        """STS-B dev Spearman x100 of mean-pooled last-layer cosines (the model in eval mode, float32)."""
        from scipy.stats import spearmanr

        torch = self.torch
        ids = torch.as_tensor(self.data["stsb_ids"].astype(np.int64), device=self.device)
        lengths = torch.as_tensor(self.data["stsb_lengths"].astype(np.int64), device=self.device)
        attention = (torch.arange(ids.shape[1], device=self.device)[None, :] < lengths[:, None]).long()
        pooled = []
        with torch.no_grad():
            for start in range(0, len(ids), 256):
                out = self.model.bert(input_ids=ids[start:start + 256],
                                      attention_mask=attention[start:start + 256]).last_hidden_state.float()
                mask = attention[start:start + 256, :, None].float()
                pooled.append((out * mask).sum(1) / mask.sum(1))
        emb = torch.nn.functional.normalize(torch.cat(pooled), dim=-1)
        half = len(emb) // 2
        cosines = (emb[:half] * emb[half:]).sum(-1).cpu().numpy()
        return float(100 * spearmanr(cosines, self.data["stsb_scores"]).correlation)

    def train_step(self, rows) -> float:
        torch = self.torch
        inputs, attention, labels = self.masker(self.ids[rows], self.lengths[rows], self.generator)
        for group in self.optimizer.param_groups:
            group["lr"] = self.schedule(self.step)
        with torch.autocast(**self.autocast):
            loss = self.model(input_ids=inputs, attention_mask=attention, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        return loss

    def fit(self, budget_minutes: float = 0.0) -> dict:
        torch = self.torch
        self.model.train()
        began, tokens = time.time(), 0
        epoch_evals = [{"step": 0, "epoch": 0.0, **self.evaluate(), "seconds": 0.0}]
        timed_from = None
        while self.step < self.total:
            order = torch.randperm(len(self.ids), device=self.device, generator=self.generator)
            for i in range(self.steps_per_epoch):
                if self.step >= self.total:
                    break
                rows = order[i * FLAGS.batch_size:(i + 1) * FLAGS.batch_size]
                loss = self.train_step(rows)
                tokens += int(self.lengths[rows].sum())
                if self.step == 10:
                    self._sync()
                    timed_from = (time.time(), self.step)
                if self.step == 60 and budget_minutes > 0:
                    self._sync()
                    per_step = (time.time() - timed_from[0]) / (self.step - timed_from[1])
                    fit = int(budget_minutes * 60 / per_step) // self.steps_per_epoch * self.steps_per_epoch
                    if 0 < fit < self.total:
                        print(f"step time {per_step * 1000:.1f} ms: {fit // self.steps_per_epoch} epochs fit in "
                              f"{budget_minutes} min; the run is cut to them.", flush=True)
                        self.total = fit
                if self.step % self.log_every == 0:
                    self.curve.append({"step": self.step, "loss": float(loss), "lr": self.schedule(self.step - 1),
                                       "seconds": round(time.time() - began, 2)})
            held = self.evaluate()
            epoch_evals.append({"step": self.step, "epoch": self.step / self.steps_per_epoch, **held,
                                "seconds": round(time.time() - began, 2)})
            stsb = f", STS-B dev {held['stsb_dev']:.2f}" if "stsb_dev" in held else ""
            print(f"lr {self.lr:g} epoch {self.step / self.steps_per_epoch:.2f}: held-out loss {held['loss']:.3f} "
                  f"accuracy {100 * held['accuracy']:.1f} % (unigram {self.unigram['loss']:.3f}, "
                  f"{100 * self.unigram['accuracy']:.1f} %){stsb}, {time.time() - began:.0f} s", flush=True)
        self._sync()
        seconds = time.time() - began
        return {"lr": self.lr, "steps": self.step, "epochs": self.step / self.steps_per_epoch, "seconds": seconds,
                "tokens_per_second": tokens / seconds, "evals": epoch_evals, "curve": self.curve}

    def _sync(self):
        if self.device.type == "cuda":
            self.torch.cuda.synchronize()

    def save(self, out_dir: str) -> None:
        from safetensors.torch import save_file

        os.makedirs(out_dir, exist_ok=True)
        config = bert_config(FLAGS.size, len(self.data["vocab"]), FLAGS.downstream_dropout)
        config.architectures = ["BertForMaskedLM"]
        config.to_json_file(os.path.join(out_dir, "config.json"))
        tied = ("cls.predictions.decoder.weight", "cls.predictions.decoder.bias")  # = word embeddings, head bias
        dtype = self.torch.float16 if FLAGS.save_dtype == "fp16" else self.torch.float32
        state = {k: v.detach().to(dtype).cpu().clone().contiguous() for k, v in self.model.state_dict().items()
                 if k not in tied}
        save_file(state, os.path.join(out_dir, "model.safetensors"), metadata={"format": "pt"})
        with open(os.path.join(out_dir, "vocab.txt"), "w") as f:
            f.write("\n".join(str(t) for t in self.data["vocab"]) + "\n")
        with open(os.path.join(out_dir, "tokenizer_config.json"), "w") as f:
            json.dump({"do_lower_case": True}, f)


def device_description(torch) -> dict:
    if torch.cuda.is_available():
        return {"device": torch.cuda.get_device_name(0), "torch": torch.__version__}
    return {"device": f"cpu ({torch.get_num_threads()} threads)", "torch": torch.__version__}


def pretrain(data: dict, torch, device) -> dict:
    lrs = [float(x) for x in FLAGS.lrs]
    pilots = []
    if len(lrs) > 1:
        for lr in lrs:
            pilot = Run(data, device, lr, FLAGS.pilot_epochs).fit()
            pilots.append({k: v for k, v in pilot.items() if k != "curve"})
        best = min(pilots, key=lambda p: p["evals"][-1]["loss"])["lr"]
    else:
        best = lrs[0]
    run = Run(data, device, best, FLAGS.epochs)
    result = run.fit(FLAGS.max_minutes)
    run.save(FLAGS.out_dir)
    from transformers import __version__ as transformers_version

    return {"size": FLAGS.size, "precision": FLAGS.precision, "batch_size": FLAGS.batch_size,
            "window": int(data["train_ids"].shape[1]), "training_windows": int(len(data["train_ids"])),
            "training_tokens": int(data["train_lengths"].sum()), "heldout_titles": data["heldout_titles"].tolist(),
            "pretraining_dropout": FLAGS.dropout, "saved_dropout": FLAGS.downstream_dropout,
            "saved_dtype": FLAGS.save_dtype,
            "warmup_fraction": FLAGS.warmup_fraction, "weight_decay": FLAGS.weight_decay, "mask_rate": FLAGS.mask_rate,
            "unigram": run.unigram, "pilots": pilots, "chosen_lr": best, "run": result,
            "transformers": transformers_version, **device_description(torch)}


def throughput(data: dict, torch, device) -> dict:
    """Training tokens/s (real tokens of the windows) per precision, rounds alternated."""
    runs = {}
    for precision in FLAGS.precisions:
        FLAGS.precision = precision
        runs[precision] = Run(data, device, 1e-4, 1e9)
    rng = np.random.default_rng(FLAGS.seed)
    rates = {p: [] for p in runs}
    for r in range(FLAGS.rounds + 1):  # round 0 warms up
        for precision, run in runs.items():
            FLAGS.precision = precision
            rows = [torch.as_tensor(rng.choice(len(run.ids), FLAGS.batch_size, replace=False), device=device)
                    for _ in range(FLAGS.steps)]
            run._sync()
            began = time.perf_counter()
            for batch in rows:
                run.train_step(batch)
            run._sync()
            seconds = time.perf_counter() - began
            if r:
                rates[precision].append(sum(int(run.lengths[b].sum()) for b in rows) / seconds)
    return {"size": FLAGS.size, "batch_size": FLAGS.batch_size, "window": int(data["train_ids"].shape[1]),
            "steps": FLAGS.steps, "rounds": FLAGS.rounds, "tokens_per_second": rates, **device_description(torch)}


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}; every input is a flag (--name=value), "
                             "--helpshort lists them.")
    if not FLAGS.windows:
        raise app.UsageError("--windows is required (the .npz of bench/pack_books.py).")
    if FLAGS.mode == "pretrain" and not FLAGS.out_dir:
        raise app.UsageError("--out_dir is required with --mode=pretrain.")
    if FLAGS.size in OLD_SIZES:
        print(f"--size={FLAGS.size} is now spelled {OLD_SIZES[FLAGS.size]}; the old name still works.",
              file=sys.stderr)
        FLAGS.size = OLD_SIZES[FLAGS.size]
    import torch

    if FLAGS.threads:
        torch.set_num_threads(FLAGS.threads)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = load_windows(FLAGS.windows)
    if FLAGS.mode == "pretrain":
        result = pretrain(data, torch, device)
        path = os.path.join(FLAGS.out_dir, "pretraining.json")
    else:
        result = throughput(data, torch, device)
        path = FLAGS.out_dir and os.path.join(FLAGS.out_dir, "throughput.json")
    if path:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
    summary = {k: v for k, v in result.items() if k not in ("run", "pilots", "heldout_titles")}
    if "run" in result:
        summary["final"] = result["run"]["evals"][-1]
        summary["tokens_per_second"] = round(result["run"]["tokens_per_second"])
        summary["pilots"] = [(p["lr"], round(p["evals"][-1]["loss"], 3)) for p in result["pilots"]]
    print(json.dumps(summary, indent=1))
    if math.isnan(result.get("run", {}).get("evals", [{}])[-1].get("loss", 0.0)):
        raise SystemExit("held-out loss is NaN")


if __name__ == "__main__":
    define_flags()
    app.run(main)
