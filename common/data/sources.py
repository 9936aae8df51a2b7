"""Where `--train_data` entries point: one resolver for every method."""

from __future__ import annotations

import os
import re
from typing import List, Sequence

from common import artifacts

# `senteval:dev`, `stsb:train`, `gs://bucket/...`: named sources and URLs are kept as given.
_NAMED = re.compile(r"^[a-z][a-z0-9_]*:")


def resolve_sources(sources: Sequence[str], data_path: str) -> List[str]:
    """Resolves `--train_data` entries.

    Named sources (`<name>:<part>`) and URLs (`gs://...`) are kept, so are absolute
    paths and relative paths that exist from the working directory; any other
    relative path is taken under `data_path`.
    """
    return [s if _NAMED.match(s) or os.path.isabs(s) or os.path.exists(s) else artifacts.join(data_path, s)
            for s in sources]


# Named sources that are evaluation splits: training on them is recorded, and the
# evaluator of that set refuses a model trained on it unless told otherwise.
EVALUATION_SOURCES = {"senteval:dev": "SNLI", "senteval:test": "SNLI", "stsb:dev": "STS-B", "stsb:test": "STS-B"}


def evaluation_sets_in(sources: Sequence[str]) -> List[str]:
    """Names of the evaluation sets (SentEval task names) that `sources` train on."""
    return sorted({EVALUATION_SOURCES[s] for s in sources if s in EVALUATION_SOURCES})
