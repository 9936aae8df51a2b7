import datetime
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from common import artifacts
from common.export.saved_model import export_encoder, save_encoder_artifact
from common.artifacts import model_path
from common.loading.resolve import resolve_model, safe_name


def test_unknown_spec_lists_the_valid_forms():
    with pytest.raises(ValueError, match=r"Unknown --model 'bert-large'.*run ID.*minilm.*small.*base.*TF Hub URL"):
        resolve_model("bert-large")


def test_a_path_that_does_not_exist_is_named_first_with_a_short_list(tmp_path):
    from common.models.encoder import EncoderConfig, build_encoder
    from common.loading.resolve import resolve_encoder

    missing = str(tmp_path / "no" / "such")
    for load in (resolve_model, resolve_encoder, lambda m: build_encoder(EncoderConfig(spec=m))):
        for model in (missing, "./no_such_folder", "~/no_such_folder"):
            with pytest.raises(FileNotFoundError) as error:
                load(model)
            message = str(error.value)
            assert message.startswith(f"no such file or folder: {model}; --model takes a run ID")
            assert len(message) < len(model) + 160  # the forms in short, not the 846-character list
    # A spec that is not a path keeps the full list of forms.
    with pytest.raises(ValueError, match=r"Unknown encoder spec 'bert-large'; valid encoder specs"):
        build_encoder(EncoderConfig(spec="bert-large"))


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


# Longer than 32 tokens, the length SimCSE trains at, except the second.
LONG = [" ".join(["guitar"] * 60) + " .", "a man plays a guitar .", " ".join(f"word{i}" for i in range(50))]


def test_a_run_is_used_at_the_models_own_length_not_the_one_it_trained_at(tmp_path, monkeypatch):
    from common import SentenceModel
    from common.loading import resolve
    from common.export import ExportConfig, export_model
    from common.models.encoder import EncoderConfig, build_encoder
    from common.training import registry
    from common.training.runs import train

    root = str(tmp_path / "artifacts")
    settings = {**registry.get("simcse").smoke(str(tmp_path / "data")), "artifacts_dir": root, "max_seq_len": 32,
                "train_epochs": 1, "train_steps_per_epoch": 2, "eval_each_epoch": False}
    run = train(registry.build_config("simcse", settings))
    record = json.load(open(os.path.join(run["model_dir"], "config.json")))
    assert record["encoder"]["max_seq_len"] == record["config"]["encoder"]["max_seq_len"] == 32  # what it trained at

    def weights_at(length):
        """The run's weights read by hand into the tiny architecture, truncating at `length`."""
        encoder = build_encoder(EncoderConfig(spec="random_tiny", max_seq_len=length, pooling="cls"))
        checkpoint = tf.train.Checkpoint(model=tf.train.Checkpoint(encoder=encoder))
        checkpoint.read(os.path.join(run["model_dir"], "weights", "weights")).expect_partial() \
            .assert_existing_objects_matched()
        assert max(encoder.token_counts(tf.constant(LONG)).numpy()) > 32 or length == 32
        return encoder.embed_strings(tf.constant(LONG)).numpy()

    full, cut = weights_at(512), weights_at(32)
    assert not np.allclose(full[0], cut[0], atol=1e-4) and not np.allclose(full[2], cut[2], atol=1e-4)
    np.testing.assert_allclose(full[1], cut[1], atol=1e-6)  # a short sentence is the same either way

    # test_sts.py, senteval_eval.py, cluster_eval.py and SentenceModel: the published SavedModel, untruncated.
    scored = resolve_model(run["run_id"], artifacts_dir=root)
    assert scored.source == os.path.join(run["model_dir"], "embedding")
    np.testing.assert_allclose(scored.embed(LONG, progress=False), full, atol=1e-6)
    np.testing.assert_allclose(SentenceModel(run["run_id"], artifacts_dir=root).encode(LONG), full, atol=1e-6)
    # A caller's length still truncates: the run is rebuilt from its weights at that length.
    for embedder in (resolve_model(run["run_id"], artifacts_dir=root, max_seq_len=32),
                     SentenceModel(run["run_id"], artifacts_dir=root, max_seq_len=32)._embedder):
        assert embedder.source == run["model_dir"]
        np.testing.assert_allclose(embedder.embed(LONG, progress=False), cut, atol=1e-6)
    # An exported model cannot be rebuilt: another length is refused, its own accepted.
    embedding = os.path.join(run["model_dir"], "embedding")
    with pytest.raises(ValueError, match=f"--max_seq_len=32: {embedding} is an exported model, which truncates at "
                                         "512 tokens and cannot be rebuilt at another; pass the run it came from"):
        resolve_model(embedding, max_seq_len=32)
    np.testing.assert_allclose(resolve_model(embedding, max_seq_len=512).embed(LONG, progress=False), full, atol=1e-6)

    # export.py: the sentence-transformers folder declares the model's own length, and loads back untruncated.
    out = str(tmp_path / "st")
    assert export_model(ExportConfig(model=run["run_id"], format="sentence-transformers", out=out,
                                     artifacts_dir=root))["encoder"]["max_seq_len"] == 512
    assert json.load(open(os.path.join(out, "sentence_bert_config.json")))["max_seq_length"] == 512
    assert json.load(open(os.path.join(out, "tokenizer_config.json")))["model_max_length"] == 512
    np.testing.assert_allclose(SentenceModel(out).encode(LONG), full, atol=1e-5)

    # A run published before SavedModels recorded their length is rebuilt from its weights ...
    monkeypatch.setattr(resolve, "_exported_length", lambda loaded: None)
    legacy = resolve_model(run["run_id"], artifacts_dir=root)
    assert legacy.source == run["model_dir"]
    np.testing.assert_allclose(legacy.embed(LONG, progress=False), full, atol=1e-6)
    # ... and when that cannot be done (the model it started from is gone), its SavedModel is scored.
    def gone(config):
        raise FileNotFoundError("the start model is gone")

    monkeypatch.setattr(resolve, "build_encoder", gone)
    assert resolve_model(run["run_id"], artifacts_dir=root).source == embedding
    with pytest.raises(FileNotFoundError, match="the start model is gone"):
        resolve_model(run["run_id"], artifacts_dir=root, max_seq_len=32)


def test_a_run_whose_config_names_an_old_spec_still_loads_and_resumes(tiny_encoder, tmp_path, monkeypatch, caplog):
    """What older versions wrote: an artifact's encoder spec "tiny", a run_config.json's --model "bert_tiny"."""
    import dataclasses

    from common import SentenceModel
    from common.models.sources import names as names_lib
    from common.training import registry
    from common.training.publishing import write_weights
    from common.training.run_settings import resume_changes

    monkeypatch.setattr(names_lib, "_NOTICED", set())  # as in a new process
    old = str(tmp_path / "old-run")
    write_weights(tf.train.Checkpoint(model=tf.train.Checkpoint(encoder=tiny_encoder)), old)
    # Seed 0, not the fixture's 1: the embeddings match only if the run's weights were read.
    record = {**dataclasses.asdict(tiny_encoder.encoder_config), "spec": "tiny", "seed": 0}
    artifacts.write_json(os.path.join(old, "config.json"), {"encoder": record})
    sentences = ["a man plays a guitar .", "stocks fell sharply on monday ."]
    want = tiny_encoder.embed_strings(tf.constant(sentences)).numpy()
    with caplog.at_level("WARNING"):
        for _ in range(2):
            np.testing.assert_allclose(SentenceModel(old, max_seq_len=32).encode(sentences), want, atol=1e-6)
        saved = registry.build_config("mlm", {"model": "random_bert_tiny"}).to_dict()
        saved["encoder"]["model"] = "bert_tiny"
        loaded = registry.config_from_dict(saved)
        assert loaded.encoder.model == "random_bert_tiny"  # recorded, and compared on --resume, by the new name
        resumed = registry.build_config("mlm", {"model": "bert_tiny", "resume": "20261122-101500"})
        assert resume_changes(loaded, resumed) == {"resume": "20261122-101500"}
    notices = [r.getMessage() for r in caplog.records if "is now spelled" in r.getMessage()]
    assert [n.split(" is now")[0] for n in notices] == ["--model=tiny", "--model=bert_tiny"]


def test_an_unknown_model_names_the_new_specs():
    with pytest.raises(ValueError, match=r"Unknown --model 'bert-large'.*run ID.*pretrained: 'minilm'.*"
                                         r"'tfhub_bert_small'.*'tfhub_bert_base'.*fresh, random \(no pretraining\): "
                                         r"'random_bert_tiny'.*'random_bert_base'.*'random_tiny'"):
        resolve_model("bert-large")


def test_a_run_with_more_layers_than_its_spec_builds_now_is_refused(tmp_path, monkeypatch):
    """A run trained when its spec built more layers (random_tiny had two) is refused, not read without them."""
    import dataclasses

    from common.errors import UserError
    from common.loading.resolve import resolve_encoder
    from common.models import EncoderConfig, build_encoder
    from common.models.sources.names import TINY_BERT
    from common.training.publishing import write_weights

    with monkeypatch.context() as patch:
        patch.setitem(TINY_BERT, "num_layers", TINY_BERT["num_layers"] + 1)
        deeper = build_encoder(EncoderConfig(spec="random_tiny", max_seq_len=16))
    old = str(tmp_path / "old-run")
    write_weights(tf.train.Checkpoint(model=tf.train.Checkpoint(encoder=deeper)), old)
    artifacts.write_json(os.path.join(old, "config.json"), {"encoder": dataclasses.asdict(deeper.encoder_config)})
    layers = TINY_BERT["num_layers"]
    with pytest.raises(UserError, match=rf"hold {layers + 1} transformer layers, but --model=random_tiny .* "
                                        rf"builds {layers} now; .* train it again"):
        resolve_encoder(old)
