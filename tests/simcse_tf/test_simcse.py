import numpy as np
import pytest
import tensorflow as tf

from common.models.encoder import EncoderConfig, build_encoder
from distributed_checks import assert_replicas_agree, replica_check
from fixtures import NLI_ROWS
from common.data.nli import DEFAULT_NLI_TRAIN
from common.data.synthetic import write_nli_jsonl
from common.errors import UserError
from common.training import registry
from simcse_tf.data import read_sentences, read_triples
from simcse_tf.model import SimcseModel

SENTENCES = ["a man plays a guitar .", "two dogs run outside .", "a child eats an apple .", "stocks fell today .",
             "it rains in london .", "a cat sleeps on the mat ."]


def _model(dropout):
    encoder = build_encoder(EncoderConfig(spec="random_tiny", max_seq_len=16, dropout=dropout, seed=2, pooling="cls"))
    return SimcseModel(encoder, mode="unsup", mlp=True)


def _mlp(seed, pooling="cls"):
    """The MLP's kernel and bias as SimcseModel initialises them, on a fresh tiny BERT (hidden 32)."""
    encoder = build_encoder(EncoderConfig(spec="random_tiny", max_seq_len=16, seed=2, pooling=pooling))
    model = SimcseModel(encoder, mode="unsup", mlp=True, seed=seed)
    dense = encoder.backbone.pooled_dense
    assert dense.trainable and any(v is dense.kernel for v in model.trainable_variables)
    return dense.kernel.numpy(), dense.bias.numpy()


def test_the_mlp_starts_as_the_official_one_and_its_seed_determines_it():
    kernel, bias = _mlp(seed=7)
    # princeton-nlp/SimCSE: BERT's _init_weights, N(0, 0.02) kernel, zero bias. 1,024 draws: the
    # standard deviation within 10%, the mean within 3 standard errors (0.02 / 32 each).
    assert kernel.shape == (32, 32) and abs(kernel.std() - 0.02) < 0.002 and abs(kernel.mean()) < 0.002
    np.testing.assert_array_equal(bias, 0.0)
    # A normal, not BERT's truncated normal: about 47 of 1,024 values lie beyond 2 stddev.
    assert (np.abs(kernel) > 0.04).sum() > 10
    np.testing.assert_array_equal(_mlp(seed=7, pooling="pooler")[0], kernel)
    assert np.abs(_mlp(seed=8)[0] - kernel).max() > 1e-3


def test_flag_combinations_that_make_no_sense_are_refused():
    encoder = build_encoder(EncoderConfig(spec="random_tiny", max_seq_len=16, pooling="mean"))
    with pytest.raises(ValueError, match=r"the encoder's pooling must be one of \('cls', 'pooler'\); got 'mean'"):
        SimcseModel(encoder, mlp=True)


def test_without_dropout_the_views_are_identical_and_the_loss_is_minimal():
    model = _model(dropout=0.0)
    tokens = model.encoder.tokenizer(tf.constant(SENTENCES))
    v1 = model.embed_for_training(tokens, training=True).numpy()
    v2 = model.embed_for_training(tokens, training=True).numpy()
    np.testing.assert_array_equal(v1, v2)
    z = v1 / np.linalg.norm(v1, axis=1, keepdims=True)
    sim = z @ z.T
    assert (sim.argmax(axis=1) == np.arange(len(SENTENCES))).all()  # each view's positive is its best match
    loss = float(model.compute_losses({"sentences": tokens}, training=True)["total"])
    # Any other choice of positives (a shuffled pairing) costs more.
    perm = np.roll(np.arange(len(SENTENCES)), 1)
    logits = sim / 0.05
    shuffled = np.mean([-(logits[i, perm[i]] - np.log(np.exp(logits[i]).sum())) for i in range(len(SENTENCES))])
    identical = np.mean([-(logits[i, i] - np.log(np.exp(logits[i]).sum())) for i in range(len(SENTENCES))])
    assert loss == pytest.approx(identical, rel=1e-4) and loss < shuffled


def test_dropout_makes_the_views_differ():
    model = _model(dropout=0.1)
    tokens = model.encoder.tokenizer(tf.constant(SENTENCES))
    v1 = model.embed_for_training(tokens, training=True).numpy()
    v2 = model.embed_for_training(tokens, training=True).numpy()
    assert np.abs(v1 - v2).max() > 1e-4
    np.testing.assert_array_equal(model.embed_for_training(tokens, training=False).numpy(),
                                  model.embed_for_training(tokens, training=False).numpy())


def _numpy_cls_and_mlp(run_dir, cls):
    """The published weights' MLP (BERT's pooler) applied to [CLS] vectors, in NumPy."""
    prefix = tf.train.latest_checkpoint(f"{run_dir}/weights")
    names = [name for name, _ in tf.train.list_variables(prefix)]
    reader = tf.train.load_checkpoint(prefix)
    kernel, bias = (reader.get_tensor(next(n for n in names if f"/pooled_dense/{w}/" in n))
                    for w in ("_kernel", "bias"))
    return np.tanh(cls @ kernel + bias)


@pytest.mark.parametrize("mode", ["unsup", "sup"])
def test_a_published_run_scores_with_the_official_test_time_pooler(mode, tmp_path):
    """unsup: [CLS] before the MLP (official `cls_before_pooler`); sup: [CLS] -> MLP (`cls`, BERT's pooler)."""
    from common import SentenceModel
    from common.loading.resolve import resolve_encoder, resolve_model
    from common.training.runs import train

    settings = {**registry.get("simcse").smoke(str(tmp_path / "data")), "artifacts_dir": str(tmp_path / "artifacts"),
                "train_epochs": 1, "train_steps_per_epoch": 2, "eval_each_epoch": False, "simcse_mode": mode}
    if mode == "sup":
        settings["train_data"] = [write_nli_jsonl(str(tmp_path / "data" / "nli.jsonl"))]
    config = registry.build_config("simcse", settings)
    assert config.options.pooling == {"unsup": "cls_mlp", "sup": "cls_mlp_test"}[mode]
    run_id = train(config)["run_id"]
    run_dir = str(tmp_path / "artifacts" / "model" / run_id)
    encoder = resolve_encoder(run_id, artifacts_dir=str(tmp_path / "artifacts"))
    assert encoder.encoder_config.pooling == {"unsup": "cls", "sup": "pooler"}[mode]
    cls = encoder(tf.constant(SENTENCES))["sequence_output"].numpy()[:, 0]
    through_mlp = _numpy_cls_and_mlp(run_dir, cls)
    want = through_mlp if mode == "sup" else cls
    # The embedding SavedModel (what test_sts.py and senteval_eval.py score), the encoder rebuilt from
    # the weights checkpoint (what export.py exports) and SentenceModel.
    published = resolve_model(run_id, artifacts_dir=str(tmp_path / "artifacts")).embed(SENTENCES, progress=False)
    np.testing.assert_allclose(published, want, atol=1e-5)
    np.testing.assert_allclose(encoder(tf.constant(SENTENCES))["embedding"].numpy(), want, atol=1e-5)
    model = SentenceModel(run_id, artifacts_dir=str(tmp_path / "artifacts"))
    np.testing.assert_allclose(model.encode(SENTENCES), want, atol=1e-5)
    assert np.abs(through_mlp - cls).max() > 1e-2  # the two poolers differ: the test can fail


def test_supervised_mode_one_replica_equals_two_replicas(tmp_path):
    # The registry-wide check (tests/test_methods.py) runs the unsup smoke settings; this
    # covers the hard negatives gathered across replicas, weighted as the paper's alpha. A 2-layer BERT:
    # random_tiny's one layer gives this loss gradients below the check's floor of 1e-4.
    nli = write_nli_jsonl(str(tmp_path / "nli.jsonl"))
    assert_replicas_agree(replica_check("simcse", {"simcse_mode": "sup", "train_data": [nli],
                                                   "model": "random_bert_tiny", "hard_negative_weight": 2.0}))


def _shape(config):
    return (config.run.batch_size, config.optimizer.train_lr, config.encoder.max_seq_len, config.run.train_epochs)


def test_mode_defaults_are_the_papers():
    unsup = registry.build_config("simcse", {})
    sup = registry.build_config("simcse", {"simcse_mode": "sup"})
    assert _shape(unsup) == (64, 3e-5, 32, 1) and unsup.options.mode == "unsup"
    assert _shape(sup) == (512, 5e-5, 32, 3) and sup.options.mode == "sup"
    # Neither mode's default data is an evaluation split.
    assert unsup.run.train_data == ("sentences:documents/gutenberg/books.txt",)
    assert sup.run.train_data == DEFAULT_NLI_TRAIN
    assert registry.build_config("simcse", {"simcse_mode": "sup", "batch_size": 8}).run.batch_size == 8
    with pytest.raises(ValueError, match="simcse_mode"):
        registry.build_config("simcse", {"simcse_mode": "semi", "train_steps_per_epoch": 1}).validate()


def test_readers(tmp_path):
    import json

    txt = tmp_path / "sentences.txt"
    txt.write_text("first sentence .\n\nsecond sentence .\nfirst sentence .\n")
    jsonl = tmp_path / "nli.jsonl"
    jsonl.write_text("".join(json.dumps({"gold_label": g, "sentence1": a, "sentence2": b}) + "\n"
                             for a, b, g in NLI_ROWS))
    sentences = read_sentences([str(txt), str(jsonl)], str(tmp_path))
    assert sentences[:2] == ["first sentence .", "second sentence ."]
    # Unsupervised SimCSE needs no labels: the sentences of unlabelled pairs count too.
    assert len(sentences) == 2 + len({a for a, _, _ in NLI_ROWS} | {b for _, b, _ in NLI_ROWS})
    premises, entailed, contradicted = read_triples([str(jsonl)], str(tmp_path))
    assert premises == ["a man plays a guitar .", "two dogs run on grass ."]
    assert entailed == ["a person makes music .", "animals are outside ."]
    assert contradicted == ["nobody is playing .", "the dogs are asleep ."]
    # A CSV with other column names, mapped as --columns maps them.
    csv_path = tmp_path / "nli.csv"
    csv_path.write_text("a,b,y\n" + "".join(f'"{a}","{b}",{g}\n' for a, b, g in NLI_ROWS))
    mapping = {"premise": "a", "hypothesis": "b", "label": "y"}
    assert read_triples([str(csv_path)], str(tmp_path), mapping) == (premises, entailed, contradicted)
    assert read_sentences([str(csv_path)], str(tmp_path), columns=mapping) == sentences[2:]


def test_tab_separated_txt_with_columns_is_a_table(tmp_path):
    # MRPC ships as a `.txt` table (byte-order mark, tab-separated, own column names): with --columns
    # its two sentence columns are read, not each whole line as one "sentence".
    mrpc = tmp_path / "pairs.txt"
    mrpc.write_text("\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
                    "1\t10\t11\tthe cat sat .\ta cat was sitting .\n"
                    "0\t12\t13\tit rained .\tthe sun shone .\n", encoding="utf-8")
    mapping = {"premise": "#1 String", "hypothesis": "#2 String"}
    assert read_sentences([str(mrpc)], str(tmp_path), columns=mapping) == [
        "the cat sat .", "it rained .", "a cat was sitting .", "the sun shone ."]
    # Without --columns a .txt is one sentence per line, as documented.
    assert len(read_sentences([str(mrpc)], str(tmp_path))) == 3
    # A named column the file lacks is an error that shows the header, not a silent fallback.
    with pytest.raises(UserError, match="#1 String"):
        read_sentences([str(mrpc)], str(tmp_path), columns={"premise": "#1 Sentence", "hypothesis": "#2 String"})
