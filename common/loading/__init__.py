"""Loading: any `--model` value to what embeds, above the models and below what uses them.

- `resolve`: a run ID, "latest", a path (a run's directory, an export of any format) or an encoder
  spec to an `Embedder` (`resolve_model`: the evaluation scripts and the API), a `CrossScorer`
  (`resolve_cross_model`) or the Keras encoder to export (`resolve_encoder`).
- `embedding`: batched, length-sorted embedding (`embed_sentences`) and pair scoring
  (`score_sentence_pairs`) by any embedding or scoring function.
- `sentence_model`: `SentenceModel` and `similarity`, the Python API (`common.api` names them).

Which kind of source a spec names and how its encoder is built is `common.models.sources`; which
format an export is in, and its reader, `common.models.formats`. Training, evaluation and export
import this layer; it imports none of them.
"""

from common.loading.embedding import embed_sentences, score_sentence_pairs
from common.loading.resolve import CrossScorer, Embedder, resolve_cross_model, resolve_encoder, resolve_model
from common.loading.sentence_model import SentenceModel, similarity

__all__ = ["CrossScorer", "Embedder", "SentenceModel", "embed_sentences", "resolve_cross_model", "resolve_encoder",
           "resolve_model", "score_sentence_pairs", "similarity"]
