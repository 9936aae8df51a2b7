"""Scores a model on a BEIR-layout retrieval set by exact cosine search (nDCG@10, MRR@10, recall, MAP, accuracy).

    python retrieval_eval.py --model=minilm --data=path/to/beir/scifact --split=test
    python retrieval_eval.py --model=20261122-101500 --data=gs://bucket/beir/nfcorpus --output=nfcorpus.json
    python retrieval_eval.py --model=minilm --data=path/to/set --relevance=binary   # sentence-transformers' nDCG

--data holds corpus.jsonl, queries.jsonl and qrels/<split>.tsv. The corpus is embedded and searched
--chunk_size documents at a time, so its size is bounded by time, not memory.
"""

from __future__ import annotations

from absl import flags

from common import cli  # first: it quiets TensorFlow's start-up

from common import artifacts
from common.errors import UserError
from common.loading.resolve import resolve_model
from common.evaluation.retrieval import DEFAULT_CHUNK_SIZE, RELEVANCE_MODES, evaluate_retrieval, format_table, load_beir
from common.flags import define_model_flags

define_model_flags()
flags.DEFINE_string("data", None, "The BEIR folder: corpus.jsonl, queries.jsonl and qrels/<split>.tsv (local or gs://).")
flags.DEFINE_string("split", "test", "The qrels file to score: qrels/<split>.tsv.")
flags.DEFINE_string("output", None, "Where to write the results as JSON (local or gs://); default: print only.")
flags.DEFINE_integer("chunk_size", DEFAULT_CHUNK_SIZE, "Documents embedded and scored at once; memory grows with it "
                     "(its embeddings and a 1024 x chunk block of scores), not with the corpus.", lower_bound=1)
flags.DEFINE_enum("relevance", "graded", RELEVANCE_MODES,
                  "nDCG@10's gains: graded (the qrels grade, as trec_eval and BEIR) or binary (every relevant "
                  "document gains 1, as sentence-transformers' InformationRetrievalEvaluator).")
FLAGS = flags.FLAGS


def main(argv):
    if not FLAGS.data:
        raise UserError("--data is required: the BEIR folder that holds corpus.jsonl, queries.jsonl and "
                        "qrels/<split>.tsv.")
    # The data is read first: a mistake in it is reported before a model loads.
    dataset = load_beir(FLAGS.data, FLAGS.split)
    embedder = resolve_model(FLAGS.model, FLAGS.artifacts_dir, FLAGS.model_location, FLAGS.gcs_bucket,
                             FLAGS.max_seq_len, FLAGS.precision)
    results = evaluate_retrieval(lambda texts: embedder.embed(texts, FLAGS.batch_size, progress=False), dataset,
                                 FLAGS.chunk_size, FLAGS.relevance)
    results = {**results, "model": embedder.name, "source": embedder.source, "data": FLAGS.data, "split": FLAGS.split,
               "precision": FLAGS.precision}
    if FLAGS.output:
        import tensorflow as tf

        if "/" in FLAGS.output.rstrip("/"):
            tf.io.gfile.makedirs(FLAGS.output.rsplit("/", 1)[0])
        artifacts.write_json(FLAGS.output, results)
    print(f"model: {embedder.name} ({embedder.source}); data: {FLAGS.data}, split {FLAGS.split}")
    print(f"queries: {results['queries']} ({results['dropped_queries']} without a relevant document left out); "
          f"documents: {results['documents']}")
    print(format_table(results))
    print(f"seconds: {results['seconds']:.1f}" + (f"; results in {FLAGS.output}" if FLAGS.output else ""))
    return 0


if __name__ == "__main__":
    cli.run(main)
