"""The Hugging Face side of bench/roberta_reference.py, run with the reference environment's Python
(`make reference-env`). Imports nothing of this project.

    .venv-ref/bin/python bench/roberta_worker.py --folder=<RoBERTa folder> --sentences=<in.json> \
        --max_seq_len=64 --out=<out.npz>

Reads the sentences (a JSON list) and writes, for the folder:
- `ids_<i>`: `AutoTokenizer`'s ids of sentence i, truncated at --max_seq_len;
- `transformers_mean`: `RobertaModel`'s last hidden states mean-pooled over the attention mask;
- `mlm_logits`: `RobertaForMaskedLM`'s logits at every real position, rows concatenated sentence by
  sentence (the same order as the toolkit's side);
- `sentence_transformers`: `SentenceTransformer(modules=[Transformer(folder, max_seq_length), Pooling(mean)])`
  `.encode`;
- `versions`: a JSON string.

HF_HUB_OFFLINE and TRANSFORMERS_OFFLINE are set before anything of Hugging Face is imported. argparse,
not absl: the reference environment has no absl.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", required=True, help="A Hugging Face RoBERTa folder.")
    parser.add_argument("--sentences", required=True, help="A JSON file holding a list of sentences.")
    parser.add_argument("--max_seq_len", type=int, required=True, help="Truncation length, <s> and </s> included.")
    parser.add_argument("--out", required=True, help="Where the .npz goes.")
    args = parser.parse_args(argv)

    import numpy as np
    import sentence_transformers
    import tokenizers
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer, models
    from transformers import AutoTokenizer, RobertaForMaskedLM, RobertaModel

    torch.manual_seed(0)
    with open(args.sentences, encoding="utf-8") as f:
        sentences = json.load(f)
    tokenizer = AutoTokenizer.from_pretrained(args.folder)
    batch = tokenizer(sentences, padding=True, truncation=True, max_length=args.max_seq_len, return_tensors="pt")
    mask = batch["attention_mask"]  # [B, T]
    out = {f"ids_{i}": np.asarray(row[m.bool()].tolist(), np.int64)
           for i, (row, m) in enumerate(zip(batch["input_ids"], mask))}
    with torch.no_grad():
        hidden = RobertaModel.from_pretrained(args.folder, add_pooling_layer=False).eval()(**batch).last_hidden_state
        m = mask.unsqueeze(-1).to(hidden.dtype)  # [B, T, 1]
        out["transformers_mean"] = ((hidden * m).sum(1) / m.sum(1)).numpy()
        logits = RobertaForMaskedLM.from_pretrained(args.folder).eval()(**batch).logits  # [B, T, V]
        out["mlm_logits"] = logits[mask.bool()].numpy()  # [M, V], row-major: sentence by sentence
    transformer = models.Transformer(args.folder, max_seq_length=args.max_seq_len)
    pooling = models.Pooling(transformer.get_word_embedding_dimension(), pooling_mode="mean")
    st = SentenceTransformer(modules=[transformer, pooling], device="cpu")
    out["sentence_transformers"] = st.encode(sentences, batch_size=len(sentences), convert_to_numpy=True)
    out["versions"] = np.asarray(json.dumps({
        "torch": torch.__version__, "transformers": transformers.__version__,
        "sentence_transformers": sentence_transformers.__version__, "tokenizers": tokenizers.__version__,
        "tokenizer_class": type(tokenizer).__name__}))
    np.savez(args.out, **out)
    print(f"wrote {args.out}: {len(sentences)} sentences", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
