"""A small Python API in the style of sentence-transformers, for use without a command line.

    from common import SentenceModel

    model = SentenceModel("minilm")  # any --model value: spec, run ID or path
    embeddings = model.encode(["A man is playing a guitar.", "Someone plays an instrument."])
    scores = model.similarity(embeddings, embeddings)  # [2, 2] cosine similarities

Both names live in `common.loading.sentence_model`, the layer that turns any `--model` value into
what embeds; this module is where users import them from.
"""

from common.loading.sentence_model import SentenceModel, similarity

__all__ = ["SentenceModel", "similarity"]
