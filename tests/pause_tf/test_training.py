"""PAUSE runs end to end on tiny models: NaN handling, STS-B fine-tuning (resume: tests/test_methods.py)."""

import os

import numpy as np
import pytest
import tensorflow as tf

from common.training import registry
from common.training.loop import NonFiniteLossError
from common.training.runs import train
from fixtures import write_senteval_snli, write_sts_root
from resume_check import saved_weights


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("data"))
    write_sts_root(root)
    write_senteval_snli(root, "dev", n=90)
    return root


def _config(data_root, artifacts_dir, **overrides):
    base = dict(model="random_tiny", train_data=("senteval:dev",), data_path=data_root, train_epochs=2,
                train_steps_per_epoch=4, batch_size=8, max_seq_len=16, pos_sample_prec=30.0,
                checkpoint_every=3, log_every=1, eval_each_epoch=False, artifacts_dir=str(artifacts_dir))
    return registry.build_config("pause", {**base, **overrides})


def test_nan_loss_stops_and_keeps_the_last_good_checkpoint(data_root, tmp_path):
    def poison(step, model):
        if step == 3:
            v = model.classifier.kernel
            v.assign(tf.fill(v.shape, float("nan")))

    with pytest.raises(NonFiniteLossError, match=r"loss became nan at step 4.*ckpt-3") as error:
        train(_config(data_root, tmp_path), after_step=poison)
    run_id = os.listdir(tmp_path / "ckpt")[0]
    assert tf.train.latest_checkpoint(str(tmp_path / "ckpt" / run_id)).endswith("ckpt-3")
    assert not os.path.exists(tmp_path / "model" / run_id)
    # Follow the advice the error gives: the same flags, parsed as train.py parses them.
    advice = str(error.value).split("python train.py ")[1].split()
    assert advice == [f"--resume={run_id}", f"--artifacts_dir={tmp_path}", "--train_lr=3.75e-05"]
    from absl import flags

    from common.flags import define_train_flags, train_config_from_flags

    flag_values = flags.FlagValues()
    owners = define_train_flags(flag_values)
    flag_values(["train.py", *advice])
    resumed = train(train_config_from_flags(flag_values, owners))
    assert resumed["run_id"] == run_id and resumed["metrics"]["step"] == 8
    assert np.isfinite(resumed["metrics"]["loss"]) and os.path.isdir(resumed["model_dir"])
    assert resumed["config"].optimizer.train_lr == 3.75e-05
    # A finished, published run is not overwritten: extending it needs a new --model_dir.
    with pytest.raises(ValueError, match=r"never overwritten.*--model_dir"):
        train(resumed["config"].replace(train_epochs=3))
    extended = train(resumed["config"].replace(train_epochs=3, model_dir=str(tmp_path / "extended")))
    assert extended["metrics"]["step"] == 12 and extended["model_dir"] == str(tmp_path / "extended")


@pytest.mark.filterwarnings("error::UserWarning")  # e.g. Keras' "build() was called ... unbuilt state"
def test_stsb_fine_tuning_from_a_pause_run_and_size_mismatch(data_root, tmp_path):
    pause = train(_config(data_root, tmp_path, train_epochs=1))
    for objective in ("cosine", "head_mse"):
        ft = train(_config(data_root, tmp_path, task="stsb", pretrained_weights=pause["run_id"],
                           stsb_objective=objective, batch_size=4, train_epochs=1))
        assert np.isfinite(ft["metrics"]["loss"]) and os.path.isdir(ft["model_dir"])
    # Fine-tuning starts from the PAUSE weights (the trunk), not from a fresh encoder.
    stsb_config = _config(data_root, tmp_path, task="stsb", pretrained_weights=pause["run_id"])
    start = registry.get("pause").build_model(stsb_config)
    saved = saved_weights(pause["model_dir"])
    kernel = [v for n, v in saved.items() if "classifier/_kernel" in n]
    assert len(kernel) == 1
    np.testing.assert_array_equal(start.classifier.kernel.numpy(), kernel[0])
    embedding = [v for n, v in saved.items() if "token_embedding/_embeddings/" in n]
    np.testing.assert_array_equal(start.encoder.backbone.token_embedding.embeddings.numpy(), embedding[0])
    with pytest.raises(ValueError, match=r"does not fit --model="):
        train(_config(data_root, tmp_path, task="stsb", pretrained_weights=pause["run_id"], model="minilm"))
    with pytest.raises(ValueError, match="--pretrained_weights"):
        train(_config(data_root, tmp_path, task="stsb"))


def test_unlabelled_pairs_from_a_csv_and_unlabeled_data_reach_the_run_and_change_it(data_root, tmp_path):
    """A CSV with foreign column names and empty labels trains; its unlabelled pairs, and those of
    --unlabeled_data, are counted in the run's data record and change the trained weights."""
    import csv

    from common.data.nli import read_nli

    snli = read_nli("senteval:dev", data_root)
    path, extra = tmp_path / "pairs.csv", tmp_path / "more.jsonl"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["sentence_a", "sentence_b", "relation"])
        for i, (p, h, y) in enumerate(zip(snli.premises, snli.hypotheses, snli.labels)):
            w.writerow([p, h, ("entailment", "neutral", "contradiction")[y] if i < 30 else ""])
    extra.write_text("".join(f'{{"sentence_a": "extra {i} .", "sentence_b": "more {i} ."}}\n' for i in range(20)))
    columns = ("premise:sentence_a", "hypothesis:sentence_b", "label:relation")
    common = dict(train_data=(str(path),), columns=columns, pos_sample_prec=None, prior=None, train_epochs=1,
                  checkpoint_every=100)
    with_pool = train(_config(data_root, tmp_path / "a", **common))
    data = with_pool["data"]
    assert (data["labelled"], data["unlabelled"], data["read"]) == (30, 60, 90)
    assert data["summary"].startswith("data: 30 labelled (10/10/10 entailment/neutral/contradiction), 60 unlabelled")
    config = with_pool["config"].options
    assert config.pos_sample_prec == 100.0 and config.class_priors == ("0.333333",) * 3
    more = train(_config(data_root, tmp_path / "b", unlabeled_data=(str(extra),), **common))
    assert (more["data"]["labelled"], more["data"]["unlabelled"]) == (30, 80)
    assert "20 from --unlabeled_data" in more["data"]["summary"]
    assert more["weights_fingerprint"] != with_pool["weights_fingerprint"]


def test_a_paraphrase_tsv_with_a_byte_order_mark_trains_and_its_mistakes_are_refused(data_root, tmp_path, capsys):
    """MRPC as it ships: a byte-order mark before `Quality`, 0/1 labels. Mapped, it trains and the
    `data:` line is printed on stdout; a mistyped label column or forgotten --labels ends in one
    line whose advice, followed, trains."""
    from common import notices
    from common.errors import UserError

    path = tmp_path / "msr.txt"
    path.write_text("\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n" + "".join(
        f"{i % 3 != 0:d}\t{i}\t{i + 100}\ta sentence number {i} .\tanother sentence {i} .\n" for i in range(40)),
        encoding="utf-8")
    pause = registry.get("pause")
    pairs = ("premise:#1 String", "hypothesis:#2 String")
    common = dict(train_data=(str(path),), pos_sample_prec=25.0, prior=None, train_epochs=1,
                  train_steps_per_epoch=2, checkpoint_every=100)
    with pytest.raises(UserError, match=r"no column for 'label' \(looked for \['Qualty'\]\); the file has "
                                        r"\['Quality', '#1 ID', '#2 ID', '#1 String', '#2 String'\]"):
        pause.resolve(_config(data_root, tmp_path, columns=(*pairs, "label:Qualty"), labels=("0", "1"), **common))
    with pytest.raises(UserError, match=r"it holds \['0', '1'\].*--labels=0,1;") as forgotten:
        pause.resolve(_config(data_root, tmp_path, columns=(*pairs, "label:Quality"), **common))
    advice = str(forgotten.value).split("--labels=")[1].split(";")[0]
    notices.to_stdout()
    try:
        run = train(_config(data_root, tmp_path, columns=(*pairs, "label:Quality"), labels=tuple(advice.split(",")),
                            **common))
    finally:
        notices.to_stdout(False)
    # 14 pairs labelled 0 and 26 labelled 1; a quarter of each keeps its label (rounded half to even).
    line = "data: 10 labelled (4/6 0/1), 30 unlabelled (30 of them labelled pairs whose label was hidden"
    assert run["data"]["summary"].startswith(line)
    assert [x for x in capsys.readouterr().out.splitlines() if x.startswith("data:")] == [run["data"]["summary"]]


def test_the_original_codes_behaviour_trains_and_its_model_keeps_its_padded_length(data_root, tmp_path):
    """The documented set of flags that trains as the original code does (docs/methods/pause.md)."""
    from common.models.encoder import EncoderConfig, build_encoder

    original = dict(pooling="padded_mean", lr_decay_from="start", annealing="per_epoch", batch_without_labels="zero",
                    warmup_fraction=0.25)
    result = train(_config(data_root, tmp_path, **original))
    config = result["config"]
    assert (config.options.pooling, config.optimizer.lr_decay_from) == ("padded_mean", "start")
    # The published model pools as it trained: the mean over 16 positions, whatever the batch.
    encoder = build_encoder(EncoderConfig(spec=result["model_dir"]))
    assert encoder.pooling == "padded_mean" and encoder.model_max_seq_len == 16
    out = encoder(tf.constant(["a man plays ."]))
    assert out["sequence_output"].shape[1] == 16
    # sentence-transformers' Pooling cannot average padding: its export is refused, not written wrong.
    from common.export import ExportConfig, export_model

    with pytest.raises(ValueError, match="padded_mean"):
        export_model(ExportConfig(model=result["model_dir"], format="sentence-transformers",
                                  out=str(tmp_path / "st")))
    assert not os.path.exists(tmp_path / "st")
    # The Keras layer of a run, by its ID (or "latest") as every --model takes it.
    from common.models import SentenceEncoder

    for name in (result["run_id"], "latest"):
        layer = SentenceEncoder.from_preset(name, artifacts_dir=str(tmp_path))
        np.testing.assert_allclose(layer(tf.constant(["a man plays ."])), out["embedding"], atol=1e-6)
    # The learning rate dropped at the end of warm-up (step 2 of 8), as the original's did.
    from common.training.schedules import make_optimizer

    schedule = make_optimizer(config.optimizer, config.total_steps)._learning_rate
    rates = [float(schedule(s)) for s in range(4)]
    peak, end = config.optimizer.train_lr, config.optimizer.end_lr
    assert rates[1] == pytest.approx(peak / 2) and rates[2] == pytest.approx(peak * (1 - 2 / 8) + end * 2 / 8)


def test_a_batch_without_a_labelled_pair_trains_on_nothing_only_when_asked(data_root, tmp_path):
    model_pu = registry.get("pause").build_model(_config(data_root, tmp_path))
    model_zero = registry.get("pause").build_model(_config(data_root, tmp_path, batch_without_labels="zero"))
    pairs = tf.constant(["a man plays .", "a dog runs ."])
    for model in (model_pu, model_zero):
        model.compile(optimizer="adam")
        model.optimizer.iterations.assign(7)  # a PU weight above 0
    batch = ({"premise": pairs, "hypothesis": pairs}, tf.constant([-1, -1]))
    assert float(model_pu.compute_losses(batch, training=False)["loss"]) > 0
    assert float(model_zero.compute_losses(batch, training=False)["loss"]) == 0.0
    labelled = ({"premise": pairs, "hypothesis": pairs}, tf.constant([0, -1]))
    assert float(model_zero.compute_losses(labelled, training=False)["loss"]) > 0
