"""The sentence-transformers side of bench/st6_folder_parity.py, run with the reference environment's
Python (`make reference-env`). Imports nothing of this project.

    .venv-ref/bin/python bench/st6_folder_reference.py --minilm=<MiniLM folder> --out=<dir> \
        --sentences=<JSON list of str> --threads=2

Saves folders with the installed sentence-transformers' `save` (its own layout: for 6.x the
`pooling_mode` key, a Normalize `config.json`, no `vocab.txt` nor `max_seq_length`), each built
from MiniLM's transformer:

    minilm             MiniLM loaded and saved again (Transformer, mean Pooling, Normalize)
    dense_normalize    Transformer, mean Pooling, Dense 384->128 (bias, Tanh), Dense 128->64
                       (no bias, Identity), Normalize; the Dense weights drawn from seed 0
    prompts            MiniLM with prompts {"query": "query: ", "document": "passage: "} and
                       default_prompt_name "query"
    prompt_excluded    Transformer, mean Pooling with include_prompt=False, Normalize, the same prompts
    cls_prompt_excluded  Transformer, CLS Pooling with include_prompt=False, Dense 384->384 (bias,
                       Tanh), the same prompts

then embeds the sentences with each folder as loaded back by `SentenceTransformer(folder)`:
`encode(sentences, **kwargs)` for each kwargs of RUNS (prompt-less folders: the default only),
and writes `<out>/<folder>/<run>.npy` and `<out>/manifest.json` ({folder: {run: kwargs}}, versions).

HF_HUB_OFFLINE and TRANSFORMERS_OFFLINE are set before anything of Hugging Face is imported.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

PROMPTS = {"query": "query: ", "document": "passage: "}
# encode() keyword arguments of each run: the model's default prompt, none, and a named one.
RUNS = {"default": {}, "no_prompt": {"prompt": ""}, "document": {"prompt_name": "document"}}
FOLDERS = ("minilm", "dense_normalize", "prompts", "prompt_excluded", "cls_prompt_excluded")


def _modules():
    try:  # sentence-transformers 6
        from sentence_transformers.sentence_transformer import modules
    except ImportError:  # earlier versions
        from sentence_transformers import models as modules
    return modules


def build(name: str, minilm: str):
    """The SentenceTransformer of one folder of the module docstring."""
    import torch
    from sentence_transformers import SentenceTransformer

    if name == "minilm":
        return SentenceTransformer(minilm, device="cpu")
    m = _modules()
    torch.manual_seed(0)
    transformer = m.Transformer(minilm, max_seq_length=256)
    width = 384
    if name == "dense_normalize":
        stack = [transformer, m.Pooling(width, pooling_mode="mean"),
                 m.Dense(width, 128, bias=True, activation_function=torch.nn.Tanh()),
                 m.Dense(128, 64, bias=False, activation_function=torch.nn.Identity()), m.Normalize()]
        return SentenceTransformer(modules=stack, device="cpu")
    if name == "prompts":
        model = SentenceTransformer(minilm, device="cpu", prompts=PROMPTS, default_prompt_name="query")
        return model
    if name == "prompt_excluded":
        stack = [transformer, m.Pooling(width, pooling_mode="mean", include_prompt=False), m.Normalize()]
    else:
        stack = [transformer, m.Pooling(width, pooling_mode="cls", include_prompt=False),
                 m.Dense(width, width, bias=True, activation_function=torch.nn.Tanh())]
    return SentenceTransformer(modules=stack, device="cpu", prompts=PROMPTS, default_prompt_name="query")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minilm", required=True, help="MiniLM's sentence-transformers folder.")
    parser.add_argument("--out", required=True, help="Where the folders, embeddings and manifest.json go.")
    parser.add_argument("--sentences", required=True, help="JSON file: the list of sentences to embed.")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch_size", type=int, default=64)
    args = parser.parse_args()
    import numpy as np
    import sentence_transformers
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(args.threads)
    with open(args.sentences) as f:
        sentences = json.load(f)
    manifest = {"versions": {"sentence_transformers": sentence_transformers.__version__,
                             "transformers": transformers.__version__, "torch": torch.__version__},
                "folders": {}}
    for name in FOLDERS:
        folder = os.path.join(args.out, name)
        build(name, args.minilm).save(folder)
        model = SentenceTransformer(folder, device="cpu")  # as a user loads the saved folder
        model.eval()
        runs = RUNS if model.default_prompt_name else {"default": {}}
        manifest["folders"][name] = runs
        for run, kwargs in runs.items():
            embeddings = model.encode(sentences, batch_size=args.batch_size, convert_to_numpy=True, **kwargs)
            np.save(os.path.join(folder, f"{run}.npy"), np.asarray(embeddings, np.float32))
        print(f"{name}: saved and embedded ({', '.join(runs)})", file=sys.stderr)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
