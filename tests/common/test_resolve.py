import datetime

import numpy as np
import pytest
import tensorflow as tf

from common import artifacts
from common.models.export import export_encoder, save_encoder_artifact
from common.artifacts import model_path
from common.evaluation.resolve import resolve_model, safe_name


def test_unknown_spec_lists_the_valid_forms():
    with pytest.raises(ValueError, match=r"Unknown --model 'bert-large'.*run ID.*minilm.*small.*base.*TF Hub URL"):
        resolve_model("bert-large")


def test_latest_needs_a_trained_model(tmp_path):
    with pytest.raises(FileNotFoundError, match="--model=latest: no trained model"):
        resolve_model("latest", artifacts_dir=str(tmp_path))


def test_missing_run_id_lists_available_ids(tmp_path):
    (tmp_path / "model" / "20260101-000000").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match=r"No model with ID 20261122-101500.*20260101-000000"):
        resolve_model("20261122-101500", artifacts_dir=str(tmp_path))


def test_gcs_location_builds_the_original_bucket_path():
    assert model_path("20261122-101500", model_location="gcs", gcs_bucket="my-bucket") == \
        "gs://my-bucket/model/20261122-101500"
    assert model_path("20261122-101500", model_location="gcs", gcs_bucket="gs://b/") == "gs://b/model/20261122-101500"
    assert model_path("gs://b/model/x") == "gs://b/model/x"
    with pytest.raises(ValueError, match="needs --gcs_bucket"):
        model_path("20261122-101500", model_location="gcs")
    with pytest.raises(ValueError, match="model_location must be one of"):
        model_path("minilm", model_location="s3")
    assert model_path("minilm") is None


def test_not_a_model_directory_is_explained(tmp_path):
    with pytest.raises(ValueError, match="not a model directory"):
        resolve_model(str(tmp_path))


def test_run_id_path_and_savedmodel_resolve_to_the_same_embeddings(tiny_encoder, tmp_path):
    root = str(tmp_path / "artifacts")
    run_id = artifacts.new_run_id(root, now=datetime.datetime(2026, 11, 22, 10, 15))
    final = save_encoder_artifact(tiny_encoder, artifacts.model_dir(root, run_id))
    export_encoder(tiny_encoder, str(tmp_path / "bare"))
    want = tiny_encoder(tf.constant(["a test", "another one"]))["embedding"].numpy()
    by_id = resolve_model(run_id, artifacts_dir=root)
    assert by_id.name == run_id
    assert resolve_model("latest", artifacts_dir=root).name == run_id
    for embedder in (by_id, resolve_model(final), resolve_model(str(tmp_path / "bare"))):
        np.testing.assert_allclose(embedder.embed(["a test", "another one"], progress=False), want, atol=1e-6)


def test_spec_names_are_file_safe():
    assert safe_name("https://tfhub.dev/tensorflow/small_bert/bert_en_uncased_L-2_H-128_A-2/1") == \
        "tfhub.dev_tensorflow_small_bert_bert_en_uncased_L-2_H-128_A-2_1"
    assert safe_name("minilm") == "minilm"


def test_models_given_by_path_never_share_a_result_name(tiny_encoder, tmp_path):
    # Two exported embeddings in folders of the same name, and an artifact given by its path.
    export_encoder(tiny_encoder, str(tmp_path / "a" / "embedding"))
    export_encoder(tiny_encoder, str(tmp_path / "b" / "embedding"))
    first, second = resolve_model(str(tmp_path / "a" / "embedding")), resolve_model(str(tmp_path / "b" / "embedding"))
    assert first.name != second.name and first.name.startswith("embedding-")
    assert resolve_model(str(tmp_path / "a" / "embedding")).name == first.name  # stable
    root = str(tmp_path / "artifacts")
    run_id = artifacts.new_run_id(root, now=datetime.datetime(2026, 11, 22, 10, 15))
    final = save_encoder_artifact(tiny_encoder, artifacts.model_dir(root, run_id), {"run_id": run_id})
    assert resolve_model(final).name == run_id and resolve_model(final + "/embedding").name == run_id
    # The same run published again elsewhere (--resume --model_dir=<new>): its own name, never the first one's.
    elsewhere = save_encoder_artifact(tiny_encoder, str(tmp_path / "extended"), {"run_id": run_id})
    name = resolve_model(elsewhere).name
    assert name.startswith(f"{run_id}-extended-") and name == resolve_model(elsewhere + "/embedding").name
