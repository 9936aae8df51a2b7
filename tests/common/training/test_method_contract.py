"""The method contract: a method is one registration; everything else comes from the registry.

A toy method is defined here in a few lines, registered, and trained for two steps
through train.py's own code path (flags -> config -> run), killed and resumed.
"""

import os

import numpy as np
import pytest
import tensorflow as tf
from absl import flags

from common.data.sampling import StreamSampler, batches_dataset
from common.data.synthetic import write_sentences
from common.flags import define_train_flags, train_config_from_flags
from common.models.encoder import EncoderConfig, build_encoder
from common.training import registry
from common.training.config import option
from common.training.method import MethodModel
from common.training.runs import train
from resume_check import Killed, saved_weights


# === The toy method: pull every sentence embedding towards unit norm ===

class ToyModel(MethodModel):
    metric_names = ("loss", "norm")

    def compute_losses(self, data, training):
        norm = tf.norm(self.encoder(data, training=training)["pooled"], axis=-1)  # [B]
        total = tf.reduce_mean((norm - self.target) ** 2)
        return {"loss": total, "total": total, "norm": tf.reduce_mean(norm)}


@pytest.fixture
def toy_method():
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class ToyOptions:
        target_norm: float = option(1.0, "Norm the embeddings are pulled to.")

    def build_model(config):
        encoder = build_encoder(EncoderConfig(spec=config.encoder.model, max_seq_len=config.encoder.max_seq_len))
        model = ToyModel(encoder, name="toy")
        model.target = config.options.target_norm
        return model

    def make_data(config, model):
        sentences = open(config.run.train_data[0]).read().split("\n")[:-1]
        sampler = StreamSampler([np.arange(len(sentences))], [1.0], config.run.batch_size, config.run.seed)
        return (lambda start: batches_dataset(sampler, [sentences], start).map(model.encoder.tokenizer),
                {"fingerprint": str(len(sentences))})

    method = registry.register(registry.Method(
        name="toy", description="A toy.", options=ToyOptions, build_model=build_model, make_data=make_data,
        smoke=lambda d: {"model": "random_tiny", "train_data": (write_sentences(os.path.join(d, "s.txt")),)}))
    yield method
    registry.unregister("toy")


def _parse(argv):
    flag_values = flags.FlagValues()
    owners = define_train_flags(flag_values)
    flag_values(["train.py", *argv])
    return train_config_from_flags(flag_values, owners)


def test_a_toy_method_trains_and_resumes_through_the_registry_alone(toy_method, tmp_path):
    data = str(tmp_path / "data")
    sentences = toy_method.smoke(data)["train_data"][0]
    common = ["--method=toy", "--model=random_tiny", f"--train_data={sentences}", "--batch_size=4", "--max_seq_len=16",
              "--train_epochs=1", "--train_steps_per_epoch=2", "--checkpoint_every=1", "--noeval_each_epoch",
              "--target_norm=2.5"]
    full = train(_parse([*common, f"--artifacts_dir={tmp_path / 'a'}"]))
    assert full["config"].options.target_norm == 2.5 and set(full["metrics"]) >= {"loss", "norm"}

    def kill(step, model):
        if step == 1:
            raise Killed()

    with pytest.raises(Killed):
        train(_parse([*common, f"--artifacts_dir={tmp_path / 'b'}"]), after_step=kill)
    run_id = os.listdir(tmp_path / "b" / "ckpt")[0]
    # --resume alone: the saved run config names the method and its settings.
    resumed = train(_parse([f"--resume={run_id}", f"--artifacts_dir={tmp_path / 'b'}"]))
    assert resumed["config"].method == "toy" and resumed["weights_fingerprint"] == full["weights_fingerprint"]
    a, b = saved_weights(full["model_dir"]), saved_weights(resumed["model_dir"])
    for key in a:
        np.testing.assert_allclose(a[key], b[key], atol=1e-6, err_msg=key)


def test_a_flag_of_another_method_is_an_error(toy_method):
    with pytest.raises(ValueError, match=r"--method=toy does not use --prior \(--prior is a setting of pause\)"):
        _parse(["--method=toy", "--prior=0.5"])
    with pytest.raises(ValueError, match=r"--method=pause does not use --target_norm"):
        _parse(["--method=pause", "--target_norm=2"])


def test_flags_given_with_resume_are_refused_not_ignored(tmp_path):
    from common import artifacts
    from common.training.run_settings import RUN_CONFIG_FILE

    config = registry.build_config("simcse", {"model": "random_tiny"})
    ckpt = artifacts.checkpoint_dir(str(tmp_path), "20260101-000000")
    os.makedirs(ckpt)
    artifacts.write_json(os.path.join(ckpt, RUN_CONFIG_FILE), config.to_dict())
    resumed = _parse(["--resume=20260101-000000", f"--artifacts_dir={tmp_path}"])
    assert resumed.method == "simcse"  # from the saved run config, not the --method default
    assert resumed.replace(resume="") == config.replace(artifacts_dir=str(tmp_path))
    # The documented settings apply on resume ...
    lower = _parse(["--resume=20260101-000000", f"--artifacts_dir={tmp_path}", "--train_lr=1e-5",
                    "--train_epochs=3"])
    assert (lower.optimizer.train_lr, lower.run.train_epochs, lower.run.batch_size) == (1e-5, 3, 64)
    # ... the others are refused, never silently ignored.
    with pytest.raises(ValueError, match=r"keeps the run's saved settings; it cannot change --batch_size"):
        _parse(["--resume=20260101-000000", f"--artifacts_dir={tmp_path}", "--batch_size=4"])
    with pytest.raises(ValueError, match=r"is a simcse run, not --method=pause"):
        _parse(["--resume=20260101-000000", f"--artifacts_dir={tmp_path}", "--method=pause"])


def test_defaults_are_written_once_and_the_config_round_trips():
    for name, method in registry.methods().items():
        config = registry.build_config(name, {})
        assert registry.config_from_dict(config.to_dict()) == config
        for setting, value in method.defaults.items():
            assert method.default_of(setting) == value
    pause = registry.build_config("pause", {"batch_size": 8, "prior": 0.25})
    assert (pause.run.batch_size, pause.options.prior, pause.run.train_epochs) == (8, 0.25, 4)
    with pytest.raises(ValueError, match=r"--train_lr must be a finite number > 0"):
        pause.replace(train_lr=float("nan")).validate()
    with pytest.raises(ValueError, match=r"--batch_size must be >= 1"):
        pause.replace(batch_size=0).validate()


def test_training_imports_no_evaluator():
    import subprocess
    import sys

    code = ("import sys, common.training.runs, common.training.registry; "
            "print(sorted(m for m in sys.modules if m.startswith('common.evaluation')))")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root,
                         env={**os.environ, "PYTHONPATH": root})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
