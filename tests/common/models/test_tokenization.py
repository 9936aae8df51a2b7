import glob
import os

import numpy as np
import pytest
import tensorflow as tf

from common.models.sources.names import minilm_dir
from common.models.tokenization import BertTokenizer, TokenizerConfig, bert_normalize, read_vocabulary

SMALL_VOCAB = ["[UNK]", "hello", "[SEP]", "world", "[PAD]", "##s", "[CLS]", "cafe", "[MASK]", ",", "!"]


def _write_vocab(tmp_path, tokens):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(tokens) + "\n")
    return str(path)


def _ids(tok, texts):
    out = tok(tf.constant(texts))
    return out["token_ids"].numpy(), out["padding_mask"].numpy(), out["segment_ids"].numpy()


def test_special_ids_come_from_the_vocabulary(tmp_path):
    tok = BertTokenizer(read_vocabulary(_write_vocab(tmp_path, SMALL_VOCAB)))
    assert tok.special_token_ids() == {"pad": 4, "unk": 0, "cls": 6, "sep": 2, "mask": 8}
    ids, mask, segments = _ids(tok, ["Hello, worlds!", "Café"])
    np.testing.assert_array_equal(ids, [[6, 1, 9, 3, 5, 10, 2], [6, 7, 2, 4, 4, 4, 4]])
    np.testing.assert_array_equal(mask, [[1] * 7, [1, 1, 1, 0, 0, 0, 0]])
    assert not segments.any()


def test_empty_and_whitespace_sentences_give_cls_sep(tmp_path):
    tok = BertTokenizer(read_vocabulary(_write_vocab(tmp_path, SMALL_VOCAB)))
    ids, mask, _ = _ids(tok, ["", "  \t \n"])
    np.testing.assert_array_equal(ids, [[6, 2], [6, 2]])
    np.testing.assert_array_equal(mask, [[1, 1], [1, 1]])


def test_invalid_utf8_is_replaced_not_fatal(tmp_path):
    tok = BertTokenizer(read_vocabulary(_write_vocab(tmp_path, SMALL_VOCAB)))
    ids = tok(tf.constant([b"hello \xff\xfe world"]))["token_ids"].numpy()
    np.testing.assert_array_equal(ids, [[6, 1, 3, 2]])


def test_truncation_and_dynamic_padding(tmp_path):
    vocab = read_vocabulary(_write_vocab(tmp_path, SMALL_VOCAB))
    tok = BertTokenizer(vocab, TokenizerConfig(max_seq_len=4))
    ids, mask, _ = _ids(tok, ["hello world hello world hello", "hello"])
    np.testing.assert_array_equal(ids, [[6, 1, 3, 2], [6, 1, 2, 4]])
    # Padded to the longest sentence of the batch, never to max_seq_len.
    long_tok = BertTokenizer(vocab, TokenizerConfig(max_seq_len=128))
    assert _ids(long_tok, ["hello", "hello world"])[0].shape == (2, 4)
    rounded = BertTokenizer(vocab, TokenizerConfig(max_seq_len=128, pad_to_multiple_of=8))
    ids, mask, _ = _ids(rounded, ["hello", "hello world"])
    assert ids.shape == (2, 8) and mask.sum() == 3 + 4


@pytest.mark.parametrize("max_seq_len,multiple", [(4, 1), (6, 1), (128, 1), (5, 8)])
def test_dense_packing_equals_the_ragged_one(tmp_path, max_seq_len, multiple):
    """`pack_pieces` (the TFLite export's packing) gives `__call__`'s tensors for any batch."""
    tok = BertTokenizer(read_vocabulary(_write_vocab(tmp_path, SMALL_VOCAB)),
                        TokenizerConfig(max_seq_len=max_seq_len, pad_to_multiple_of=multiple))
    batches = [["hello world hello world hello", "hello", "", "cafes, world!"], [""], ["", ""], ["hello"], []]
    for texts in batches:
        texts = tf.constant(texts, tf.string)
        pieces = tok.wordpiece_ids(texts)
        dense = tok.pack_pieces(pieces.flat_values, pieces.row_splits)
        for key, want in tok(texts).items():
            np.testing.assert_array_equal(dense[key].numpy(), want.numpy(), err_msg=f"{key} of {texts}")


def test_truncated_sentences_and_pairs_are_counted_at_the_boundary(tmp_path):
    tok = BertTokenizer(read_vocabulary(_write_vocab(tmp_path, SMALL_VOCAB)), TokenizerConfig(max_seq_len=5))
    # 3 word pieces fit in [CLS] x x x [SEP]; 4 do not ("worlds" is two pieces).
    texts = ["hello world hello", "hello worlds hello", "hello", "hello hello hello hello"]
    assert tok.count_truncated(texts) == 2 and tok.count_truncated(texts, batch_size=1) == 2
    # A pair keeps 2 pieces in all within [CLS] a [SEP] b [SEP].
    assert tok.count_truncated_pairs(["hello", "hello", "worlds"], ["world", "world hello", "hello"]) == 2


def test_tokenizer_runs_inside_tf_data_and_tf_function(tmp_path):
    tok = BertTokenizer(read_vocabulary(_write_vocab(tmp_path, SMALL_VOCAB)))
    ds = tf.data.Dataset.from_tensor_slices(["hello", "hello world !"]).batch(2).map(tok)
    batch = next(iter(ds))
    assert batch["token_ids"].shape == (2, 5)
    fn = tf.function(tok, input_signature=[tf.TensorSpec([None], tf.string)])
    np.testing.assert_array_equal(fn(tf.constant(["world"]))["token_ids"], [[6, 3, 2]])


def test_normalizer_matches_hf_rules():
    out = bert_normalize(tf.constant(["Café\u00a0NAÏVE\x00\u200b x", "中文", "a\tb\nc"])).numpy()
    assert [s.decode() for s in out] == ["cafe naive x", " 中  文 ", "a b c"]


def test_vocabulary_errors_name_file_and_line(tmp_path):
    with pytest.raises(ValueError, match=r"vocab.txt:3: token 'a' repeats line 1"):
        read_vocabulary(_write_vocab(tmp_path, ["a", "b", "a"]))
    with pytest.raises(ValueError, match=r"special tokens \['\[MASK\]'\]"):
        read_vocabulary(_write_vocab(tmp_path, ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]))
    with pytest.raises(FileNotFoundError, match="Vocabulary file not found"):
        read_vocabulary(str(tmp_path / "missing.txt"))


def _sts_sentences(data_path):
    sentences = set()
    for path in glob.glob(os.path.join(data_path, "downstream", "STS", "*", "STS.input.*.txt")):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                sentences.update(line.rstrip("\n").split("\t")[:2])
    for path in glob.glob(os.path.join(data_path, "downstream", "STS", "STSBenchmark", "sts-*.csv")):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                sentences.update(line.rstrip("\n").split("\t")[5:7])
    with open(os.path.join(data_path, "downstream", "SICK", "SICK_test_annotated.txt"), encoding="utf-8") as f:
        for line in f:
            sentences.update(line.split("\t")[1:3])
    return sorted(sentences)


@pytest.mark.large
def test_token_ids_equal_hf_tokenizer_json_on_every_sts_sentence(data_path):
    from tokenizers import Tokenizer

    hf = Tokenizer.from_file(os.path.join(minilm_dir(), "tokenizer.json"))
    hf.no_truncation()
    hf.no_padding()
    tok = BertTokenizer(read_vocabulary(os.path.join(minilm_dir(), "vocab.txt")), TokenizerConfig(max_seq_len=100000))
    sentences = _sts_sentences(data_path)
    sentences += ["Crème brûlée ´ ™ Ｆｕｌｌｗｉｄｔｈ 中文 \u200bzero\u00a0width", "İstanbul Straße ǅ", "e\u0301"]
    assert len(sentences) > 25000
    mismatches = []
    for start in range(0, len(sentences), 4096):
        chunk = sentences[start:start + 4096]
        out = tok(tf.constant(chunk))
        ids, mask = out["token_ids"].numpy(), out["padding_mask"].numpy()
        for i, sentence in enumerate(chunk):
            if ids[i][mask[i] == 1].tolist() != hf.encode(sentence).ids:
                mismatches.append(sentence)
    assert mismatches == [], f"{len(mismatches)} sentences differ, e.g. {mismatches[:3]}"


def test_tokenizers_of_one_vocabulary_share_one_word_piece_model(tmp_path):
    """A run builds several tokenizers of one vocabulary (data, models, export, each at its own
    length): they share the word-piece model, built once, and keep the vocabulary out of
    tf.Module's tracking (a tracked list of 30,522 entries cost ~0.1 s per tokenizer)."""
    tokens = SMALL_VOCAB + [f"w{i}" for i in range(50)]
    short = BertTokenizer(tokens, TokenizerConfig(max_seq_len=4))
    long = short.with_config(TokenizerConfig(max_seq_len=64))
    assert short._wordpiece is long._wordpiece is BertTokenizer(list(tokens))._wordpiece
    assert BertTokenizer(tokens[:-1])._wordpiece is not short._wordpiece
    assert short.vocabulary == tokens and isinstance(short.vocabulary, list)
    assert not [name for name, _ in short._trackable_children().items() if "vocab" in name]
    ids, _, _ = _ids(short, ["hello world cafe"])
    np.testing.assert_array_equal(ids, [[6, 1, 3, 2]])
    ids, _, _ = _ids(long, ["hello world cafe"])
    np.testing.assert_array_equal(ids, [[6, 1, 3, 7, 2]])
