"""Shared pieces of every method, one subpackage per concern:

- `common.models`: tokenizer, BERT backbones (Keras, TF Hub), pooling, the sentence encoder,
  and the formats `export.py` writes (`common.models.formats`: one module per format, with its
  writer, reader and detector, and their table).
- `common.export`: the SavedModels a run publishes, and `export_model` behind `export.py`.
- `common.data`: file access, documents from files and folders, NLI / STS / SICK readers,
  training-source resolution, dataset fingerprints, the seeded resumable batch sampler, downloads.
- `common.training`: the method contract (`MethodModel`) and registry, typed run
  configs, the run's life (IDs, checkpoints, publishing), the step loop,
  distribution, schedules and optimizers, contrastive losses.
- `common.loading`: any `--model` value (run ID, path, export, spec) to what embeds
  (`resolve_model`), batched embedding, and `SentenceModel`.
- `common.evaluation`: STS, SentEval, clustering, retrieval, and the evaluators that training is given.
- `common.artifacts`: run IDs, the artifacts layout and atomic publishing.
- `common.api`: `SentenceModel` (load any `--model` value, `encode`) and `similarity`,
  the Python API for users; `from common import SentenceModel, similarity` works too.
- `common.models.encoder.SentenceEncoder`: the encoder as a Keras 3 layer for users' models
  (`SentenceEncoder.from_preset("minilm")`); `from common import SentenceEncoder` works too.
- `common.errors`: `UserError`, raised for input the user gave that is wrong (a
  `ValueError`); `from common import UserError` works too.

Only `common.errors` and `common.quiet` (no dependencies; it sets TF_CPP_MIN_LOG_LEVEL) are imported
here, so `import common.training` never loads an evaluator: the three API names are looked up in
their modules when first used (PEP 562), after TensorFlow is loaded quietly, so that a notebook on a
CPU machine shows no CUDA or CPU-feature lines.
"""

from common import quiet
from common.errors import UserError

# The release: the newest section of CHANGELOG.md and pyproject.toml's version say the same (a test checks).
__version__ = "0.6.15"

# The public names looked up when first used, and the module each lives in.
_API = {"SentenceModel": "common.api", "similarity": "common.api", "SentenceEncoder": "common.models.encoder"}
__all__ = [*_API, "UserError", "__version__"]


def __getattr__(name: str):
    if name in _API:
        if not quiet.VERBOSE_REQUESTED:
            quiet.load_tensorflow()
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'common' has no attribute {name!r}")
