"""An interrupted DeCLUTR or SimCSE run, resumed from its last checkpoint, ends with the
same weights as an uninterrupted one (PAUSE has its own test in tests/pause_tf).

This covers what each method adds to the shared run loop: DeCLUTR's span stream and
seeded MLM masking, SimCSE's dropout noise (the dropout seed states are checkpointed).
"""

import dataclasses
import os

import numpy as np
import pytest

from fixtures import write_sts_root
from resume_check import full_and_resumed_runs, saved_weights


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


@pytest.mark.parametrize("method", [_declutr, _simcse], ids=["declutr", "simcse"])
def test_resumed_run_equals_uninterrupted_run(method, tmp_path):
    root = write_sts_root(str(tmp_path / "data"))
    train, config = method(root, "")
    # The last checkpoint is at step 3; the run is killed after step 5.
    full, resumed = full_and_resumed_runs(train, config, tmp_path)
    a, b = saved_weights(full["model_dir"]), saved_weights(resumed["model_dir"])
    assert a and a.keys() == b.keys()
    for name in a:
        np.testing.assert_allclose(a[name], b[name], atol=1e-6, err_msg=name)
    assert full["weights_fingerprint"] == resumed["weights_fingerprint"]
    # The runs did train: the weights moved away from a fresh model of the same seed.
    start = train(dataclasses.replace(config, artifacts_dir=str(tmp_path / "c"), train_epochs=1,
                                      train_steps_per_epoch=1))
    moved = saved_weights(start["model_dir"])
    assert any(not np.allclose(moved[n], a[n], atol=1e-6) for n in a)
