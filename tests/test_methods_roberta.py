"""Every registered method on a tiny random RoBERTa folder: the checks of tests/test_methods.py in one
cheap pass. One process measures one replica against two for every model the methods train; each
method's run, killed after its last checkpoint and resumed, publishes the weights of an uninterrupted
run, and that published model embeds as its encoder rebuilt from the weights, away from the folder's.

Like tests/test_methods.py, it reads the registry: a new method is covered by registering itself.
"""

import json

import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file

from common.loading.resolve import resolve_encoder, resolve_model
from common.models.encoder import EncoderConfig, build_encoder
from common.training import registry
from common.training.runs import train
from distributed_checks import assert_replicas_agree, replica_checks
from fixtures import write_hf_roberta_dir
from resume_check import full_and_resumed_runs, saved_weights

METHODS = list(registry.methods())
MODELS = [(name, phase) for name, method in registry.methods().items() for phase in (method.phase_models or [None])]
SENTENCES = ["A man is playing a guitar.", "Café naïve 😀", "short"]
# The fixture's 300-token BPE splits the smoke data's words into bytes: at the smoke lengths (16) every
# sentence would be cut to the same first tokens; the tiny RoBERTa holds 64.
MAX_SEQ_LEN = 64


@pytest.fixture(scope="module")
def roberta_dir(tmp_path_factory):
    """The tiniest folder that is still a RoBERTa: one layer, with RobertaForMaskedLM's head."""
    return write_hf_roberta_dir(str(tmp_path_factory.mktemp("roberta") / "rb"), num_layers=1, lm_head=True)


@pytest.fixture(scope="module")
def replica_results(roberta_dir):
    settings = {"model": roberta_dir, "max_seq_len": MAX_SEQ_LEN}
    return dict(zip(MODELS, replica_checks([{"method": name, "phase": phase, "settings": settings}
                                            for name, phase in MODELS])))


@pytest.mark.parametrize("name,phase", MODELS)
def test_one_replica_equals_two_replicas_on_roberta(replica_results, name, phase):
    assert_replicas_agree(replica_results[(name, phase)])


@pytest.mark.parametrize("name", METHODS)
def test_resumed_run_equals_uninterrupted_run_and_publishes_on_roberta(name, roberta_dir, tmp_path):
    config = registry.build_config(name, {
        **registry.get(name).smoke(str(tmp_path / "data")), "model": roberta_dir, "max_seq_len": MAX_SEQ_LEN,
        "train_epochs": 1, "train_steps_per_epoch": 3, "checkpoint_every": 2, "log_every": 1, "eval_each_epoch": False})
    # Killed after step 3, resumed from the checkpoint of step 2.
    full, resumed = full_and_resumed_runs(train, config, tmp_path, kill_at=3)
    a, b = saved_weights(full["model_dir"]), saved_weights(resumed["model_dir"])
    assert a and a.keys() == b.keys()
    for key in a:
        np.testing.assert_allclose(a[key], b[key], atol=1e-6, err_msg=key)
    assert full["weights_fingerprint"] == resumed["weights_fingerprint"]

    # The published SavedModel (raw strings in, the BPE tokenizer inside) is the run's encoder.
    got = resolve_model(full["run_id"], artifacts_dir=str(tmp_path / "a")).embed(SENTENCES, progress=False)
    rebuilt = resolve_encoder(full["model_dir"])
    assert rebuilt.backbone.config.model_type == "roberta"
    np.testing.assert_allclose(got, rebuilt(tf.constant(SENTENCES))["embedding"].numpy(), atol=1e-5)
    start = build_encoder(EncoderConfig(spec=roberta_dir, pooling=rebuilt.pooling, normalize=rebuilt.normalize))
    assert np.abs(got - start(tf.constant(SENTENCES))["embedding"].numpy()).max() > 1e-5  # it trained


def test_masked_lm_starts_from_the_folders_head_and_masks_with_its_mask_token(roberta_dir, tmp_path):
    method = registry.get("mlm")
    config = registry.build_config("mlm", {**method.smoke(str(tmp_path / "data")), "model": roberta_dir})
    model = method.build_model(config)
    head_bias = load_file(f"{roberta_dir}/model.safetensors")["lm_head.bias"]
    np.testing.assert_array_equal(model.mlm_head.bias.numpy(), head_bias)
    batch = next(iter(method.make_data(config, model)[0](0)))
    vocab = json.load(open(f"{roberta_dir}/vocab.json"))
    selected = batch["mlm_weights"].numpy() > 0
    masked = batch["token_ids"].numpy() == vocab["<mask>"]
    assert masked.any() and not (masked & ~selected).any()
    assert not np.isin(batch["mlm_labels"].numpy()[selected], [vocab["<s>"], vocab["</s>"], vocab["<pad>"]]).any()
