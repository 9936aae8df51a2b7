"""An interrupted DeCLUTR or SimCSE run, resumed from its last checkpoint, ends with the
same weights as an uninterrupted one (PAUSE has its own test in tests/pause_tf).

This covers what each method adds to the shared run loop: DeCLUTR's span stream and
seeded MLM masking, SimCSE's dropout noise (the dropout seed states are checkpointed).
"""

import dataclasses
import os

import numpy as np
import pytest
import tensorflow as tf

from fixtures import write_sts_root


class Killed(Exception):
    pass


def _declutr(root, artifacts_dir):
    from declutr_tf.config import DeclutrConfig
    from declutr_tf.training import train

    docs = os.path.join(root, "docs.txt")
    with open(docs, "w") as f:
        f.write("\n".join(" ".join(f"w{d}_{(i * 7 + d) % 41}" for i in range(200)) for d in range(5)) + "\n")
    config = DeclutrConfig(model="tiny", train_data=(docs,), data_path=root, batch_size=2, max_seq_len=32,
                           min_span_len=8, max_span_len=32, train_epochs=2, train_steps_per_epoch=4,
                           checkpoint_every=3, log_every=1, eval_each_epoch=False, artifacts_dir=artifacts_dir)
    return train, config


def _simcse(root, artifacts_dir):
    from simcse_tf.config import SimcseConfig
    from simcse_tf.training import train

    sentences = os.path.join(root, "sentences.txt")
    with open(sentences, "w") as f:
        f.write("\n".join(f"sentence number {i} about topic {i % 5} ." for i in range(40)) + "\n")
    config = SimcseConfig(mode="unsup", model="tiny", train_data=(sentences,), data_path=root, batch_size=8,
                          max_seq_len=16, train_epochs=2, train_steps_per_epoch=4, checkpoint_every=3, log_every=1,
                          eval_each_epoch=False, artifacts_dir=artifacts_dir)
    return train, config


def _weights(model_dir):
    path = os.path.join(model_dir, "weights")
    reader = tf.train.load_checkpoint(path)
    return {n: reader.get_tensor(n) for n, _ in tf.train.list_variables(path) if n.startswith("model/")}


@pytest.mark.parametrize("method", [_declutr, _simcse], ids=["declutr", "simcse"])
def test_resumed_run_equals_uninterrupted_run(method, tmp_path):
    root = write_sts_root(str(tmp_path / "data"))
    train, config = method(root, "")
    full = train(dataclasses.replace(config, artifacts_dir=str(tmp_path / "a")))

    def kill(step, model):
        if step == 5:  # the last checkpoint is at step 3
            raise Killed()

    interrupted = dataclasses.replace(config, artifacts_dir=str(tmp_path / "b"))
    with pytest.raises(Killed):
        train(interrupted, after_step=kill)
    run_id = os.listdir(tmp_path / "b" / "ckpt")[0]
    assert not os.path.exists(tmp_path / "b" / "model" / run_id)  # no half-written artifact
    resumed = train(dataclasses.replace(interrupted, resume=run_id))
    assert resumed["run_id"] == run_id
    a, b = _weights(full["model_dir"]), _weights(resumed["model_dir"])
    assert a and a.keys() == b.keys()
    for name in a:
        np.testing.assert_allclose(a[name], b[name], atol=1e-6, err_msg=name)
    assert full["weights_fingerprint"] == resumed["weights_fingerprint"]
    # The runs did train: the weights moved away from a fresh model of the same seed.
    start = train(dataclasses.replace(config, artifacts_dir=str(tmp_path / "c"), train_epochs=1,
                                      train_steps_per_epoch=1))
    moved = _weights(start["model_dir"])
    assert any(not np.allclose(moved[n], a[n], atol=1e-6) for n in a)
