"""The table of source kinds: every form `--model` takes is told apart in one place, and only
the artifact kind needs the others (a run is rebuilt from what it started from)."""

import ast
import os

import pytest

from common import artifacts
from common.errors import UserError
from common.models.sources import LOADERS, Source, locate_spec
from common.models.sources.names import minilm_dir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_each_form_of_model_is_its_kind(tmp_path):
    from fixtures import write_hf_bert_dir

    assert locate_spec("minilm") == Source("hf", minilm_dir())
    assert locate_spec("random_tiny") == Source("fresh", "random_tiny")
    assert locate_spec("bert_mini") == Source("fresh", "random_bert_mini")  # an old spelling
    assert locate_spec("tfhub_bert_small").kind == "hub"
    assert locate_spec("https://tfhub.dev/google/some/bert/1") == Source("hub", "https://tfhub.dev/google/some/bert/1")
    config = tmp_path / "bert_config.json"
    config.write_text("{}")
    assert locate_spec(str(config)) == Source("fresh", str(config))
    hf = write_hf_bert_dir(str(tmp_path / "hf"), os.path.join(minilm_dir(), "vocab.txt"))
    assert locate_spec(hf) == Source("hf", hf)
    run = tmp_path / "run"
    (run / "weights").mkdir(parents=True)
    artifacts.write_json(str(run / "config.json"), {"encoder": {}})
    assert locate_spec(str(run)) == Source("artifact", str(run))
    saved = tmp_path / "saved"
    saved.mkdir()
    (saved / "saved_model.pb").write_bytes(b"")
    assert locate_spec(str(saved)) == Source("hub", str(saved))
    with pytest.raises(UserError, match="neither a train.py artifact"):
        locate_spec(str(tmp_path))
    with pytest.raises(FileNotFoundError, match="no such BERT configuration file"):
        locate_spec(str(tmp_path / "missing.json"))
    with pytest.raises(UserError, match="Unknown encoder spec 'nonsense'"):
        locate_spec("nonsense")


def test_weights_are_read_into_an_encoder_only_inside_the_sources_room():
    """One loader per kind: outside common/models/sources, no module rebuilds an encoder from a
    run's checkpoint or reads Hugging Face weights into a backbone (a second loader drifts)."""
    assert set(LOADERS) == {"fresh", "hf", "hub"}
    offenders = []
    for folder, _, files in os.walk(ROOT):
        rel = os.path.relpath(folder, ROOT)
        if rel.startswith((".", "tests", "bench", os.path.join("common", "models", "sources"))) or "venv" in rel:
            continue
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            for node in ast.walk(ast.parse(open(path).read())):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                        node.func.attr in ("load_hf_weights", "from_hf_config"):
                    offenders.append(f"{os.path.relpath(path, ROOT)}:{node.lineno} {node.func.attr}")
    assert not offenders, offenders
