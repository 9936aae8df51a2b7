"""Writes `--method=mlm`'s packed windows to one .npz, for pretraining where TensorFlow is not installed.

    .venv/bin/python -m bench.pack_books --data_path=../shared/data --out=artifacts/books_128.npz

The windows are exactly those the toolkit's masked-LM method trains on: the same uncased WordPiece
tokenizer (in the graph), the same seeded whole-book held-out split and the same packing into
`[CLS] ... [SEP]` windows. `bench/hf_pretrain.py` reads the file with NumPy alone (PyTorch and Hugging
Face `transformers`, e.g. on a GPU machine), so a model pretrained there sees the toolkit's tokens.

Arrays: `train_ids`, `heldout_ids` (uint16 [N, max_seq_len]), `train_lengths`, `heldout_lengths`
(real tokens per window, [CLS] and [SEP] included), the special ids, the vocabulary, and STS-B dev
(`stsb_ids`, `stsb_lengths` for its 2 x 1,500 sentences as the toolkit tokenizes them, pairs in rows
i and 1,500 + i, and `stsb_scores`) when the data root has it, so pretraining can be watched on
STS-B dev (mean pooling) beside its loss.
"""

from __future__ import annotations

import json
import os

import numpy as np
from absl import flags

from common import cli

FLAGS = flags.FLAGS


def define_flags() -> None:
    """The script's flags, defined when it runs, not at import: `pack` is imported beside other bench
    modules (the tests, a notebook), whose flags of the same names would clash."""
    flags.DEFINE_string("data_path", "data", "Data root holding documents/gutenberg/books.txt.")
    flags.DEFINE_string("out", "artifacts/books_128.npz", "The .npz to write.")
    flags.DEFINE_integer("max_seq_len", 128, "Window length, [CLS] and [SEP] included.")
    flags.DEFINE_integer("heldout_books", 6, "Whole books held out (as --method=mlm's --heldout_books).")
    flags.DEFINE_integer("seed", 0, "Seed of the held-out choice (as --method=mlm's --seed).")


def pack(data_path: str, max_seq_len: int, heldout_books: int, seed: int) -> dict:
    """The arrays described in the module docstring."""
    import tensorflow as tf

    from common.data.sources import resolve_sources
    from common.models.encoder import EncoderConfig, build_encoder
    from mlm_tf.config import DEFAULTS
    from mlm_tf.data import pack_windows, read_books, split_books, wordpieces

    tokenizer = build_encoder(EncoderConfig(spec="random_bert_tiny", max_seq_len=max_seq_len)).tokenizer
    books = read_books(resolve_sources(DEFAULTS["train_data"], data_path))
    train_docs, held_docs, titles = split_books(books, heldout_books, seed)
    special = dict(cls_id=tokenizer.cls_id, sep_id=tokenizer.sep_id, pad_id=tokenizer.pad_id)
    out = {}
    for name, docs in (("train", train_docs), ("heldout", held_docs)):
        ids, mask = pack_windows(wordpieces(tokenizer, docs), max_seq_len, **special)
        out[f"{name}_ids"] = ids.astype(np.uint16)
        out[f"{name}_lengths"] = mask.sum(1).astype(np.int16)
    try:
        from common.data.sts import load_stsb

        stsb = load_stsb(data_path, "dev")
        batch = tokenizer(tf.constant(list(stsb.sentences1) + list(stsb.sentences2)))
        out.update(stsb_ids=batch["token_ids"].numpy().astype(np.uint16),
                   stsb_lengths=batch["padding_mask"].numpy().sum(1).astype(np.int16), stsb_scores=stsb.scores)
    except FileNotFoundError:
        pass
    vocab = tokenizer.vocabulary
    out.update({k: np.int32(v) for k, v in special.items()}, mask_id=np.int32(tokenizer.mask_id),
               vocab=np.asarray(vocab), heldout_titles=np.asarray(titles),
               info=np.asarray(json.dumps(dict(seed=seed, heldout_books=heldout_books, max_seq_len=max_seq_len,
                                               books=len(books.documents)))))
    return out


def main(argv):
    arrays = pack(FLAGS.data_path, FLAGS.max_seq_len, FLAGS.heldout_books, FLAGS.seed)
    os.makedirs(os.path.dirname(os.path.abspath(FLAGS.out)), exist_ok=True)
    tmp = FLAGS.out + ".tmp.npz"
    np.savez_compressed(tmp, **arrays)
    os.replace(tmp, FLAGS.out)
    tokens = int(arrays["train_lengths"].sum())
    print(f"{FLAGS.out}: {len(arrays['train_ids'])} training windows ({tokens:,} tokens), "
          f"{len(arrays['heldout_ids'])} held-out windows from {len(arrays['heldout_titles'])} books; "
          f"{os.path.getsize(FLAGS.out) / 2**20:.1f} MiB")


if __name__ == "__main__":
    define_flags()
    cli.run(main)
