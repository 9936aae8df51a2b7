"""The pieces of pretraining on another machine that run here: the windows bench/pack_books.py writes
(exactly --method=mlm's), and bench/mlm_throughput.py's table and its one-line errors. (The PyTorch
side, bench/hf_pretrain.py, runs in the reference environment, which the suite does not install.)"""

import json
import os
import subprocess
import sys

import numpy as np

from common.data.synthetic import write_documents
from in_process import run_module

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_pack_books_writes_the_windows_of_the_masked_lm_method(tmp_path):
    from bench.pack_books import pack
    from common.models.encoder import EncoderConfig, build_encoder
    from mlm_tf.data import pack_windows, read_books, split_books, wordpieces

    books = write_documents(str(tmp_path / "documents" / "gutenberg" / "books.txt"), n=6, words=150)
    arrays = pack(str(tmp_path), max_seq_len=32, heldout_books=2, seed=0)
    tokenizer = build_encoder(EncoderConfig(spec="random_bert_tiny", max_seq_len=32)).tokenizer
    train, held, titles = split_books(read_books([books]), 2, 0)
    ids, mask = pack_windows(wordpieces(tokenizer, train), 32, tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id)
    np.testing.assert_array_equal(arrays["train_ids"], ids)
    np.testing.assert_array_equal(arrays["train_lengths"], mask.sum(1))
    assert arrays["heldout_ids"].shape[1] == 32 and list(arrays["heldout_titles"]) == titles
    assert int(arrays["mask_id"]) == tokenizer.mask_id and list(arrays["vocab"]) == tokenizer.vocabulary


def test_mlm_throughput_without_windows_or_reference_env_is_one_line_and_exit_2(tmp_path):
    # The real entry point once (`python -m`), then in-process.
    out = subprocess.run([sys.executable, "-m", "bench.mlm_throughput", f"--windows={tmp_path / 'none.npz'}"],
                         cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT})
    assert out.returncode == 2, out.stderr
    (line,) = [x for x in out.stderr.splitlines() if "mlm_throughput" in x]
    assert "bench.pack_books" in line
    (tmp_path / "w.npz").write_bytes(b"")
    out = run_module("bench.mlm_throughput", [f"--windows={tmp_path / 'w.npz'}",
                                              f"--reference_python={tmp_path / 'py'}"])
    assert out.returncode == 2 and "make reference-env" in out.stderr


def test_mlm_throughput_table_gives_medians_spreads_and_the_ratio():
    from bench import mlm_throughput

    def s(v):
        return {"median": v, "min": v - 10, "max": v + 10}

    out = mlm_throughput.table({"random_bert_tiny fp32": {"toolkit": s(3000.0), "toolkit_step_only": s(3300.0),
                                                          "reference": s(1500.0)}})
    assert "| random_bert_tiny fp32 | 3,000 [2,990-3,010] | 3,300 [3,290-3,310] | 1,500 [1,490-1,510] | 2.00x |" in out


def test_hf_pretrain_sizes_are_the_toolkits_fresh_berts_and_their_old_spellings():
    """bench/hf_pretrain.py runs without TensorFlow, so it keeps its own copy of the shapes and names."""
    from common.models.sources.names import FRESH_BERTS, SPEC_ALIASES

    code = "import json; from bench import hf_pretrain as h; print(json.dumps([h.SHAPES, h.OLD_SIZES]))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": ROOT}).stdout
    shapes, old_sizes = json.loads(out)
    assert {k: tuple(v) for k, v in shapes.items()} == FRESH_BERTS
    assert old_sizes == {old: new for old, new in SPEC_ALIASES.items() if new in FRESH_BERTS}
