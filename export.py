"""Exports a model for other ecosystems: a sentence-transformers folder, a TFLite model, the
embedding SavedModel a run publishes or a TF-Hub-format BERT.

    python export.py --model=20261122-101500 --format=sentence-transformers --out=exports/run-st
    python export.py --model=minilm --format=tflite --out=exports/minilm-tflite
    python export.py --model=minilm --format=tflite --quantize=int8 --out=exports/minilm-int8
    python export.py --model=minilm --format=savedmodel --out=exports/minilm-savedmodel
    python export.py --model=20261122-101500 --format=tfhub-bert --out=exports/run-tfhub
    python export.py --model=minilm --format=onnx --out=exports/minilm-onnx
    python export.py --model=minilm --format=openvino --quantize=int8 --out=exports/minilm-ov-int8
    python export.py --model=minilm --format=sentence-transformers --st_backends=onnx,openvino --out=exports/minilm-st

--model takes what test_sts.py takes, when a Keras BERT encoder is behind it: a run ID, a
run's directory, a Hugging Face BERT folder or an encoder spec (minilm, a fresh BERT). The
sentence-transformers folder loads with SentenceTransformer(folder), keras-hub's
BertBackbone/BertTextEmbedder.from_preset(folder) and --model=<folder> here; the
TFLite model (tokenizer inside) with --model=<out> here or a TFLite interpreter with
tensorflow-text's ops; the embedding SavedModel with tf.saved_model.load(out) (TensorFlow and
tensorflow-text only) and --model=<out> here; the TF-Hub-format BERT with
hub.KerasLayer(out, trainable=True) and --model=<out> here; the ONNX and OpenVINO models (token ids
in, pooled and normalised embeddings out, tokenizer files beside them) with ONNX Runtime or
OpenVINO and --model=<out> here (docs/usage/export.md).
"""

from __future__ import annotations

from absl import flags, logging

from common import cli  # first: it quiets TensorFlow's start-up

from common.errors import UserError
from common.export import FORMATS, ExportConfig, export_model, quantizations
from common.flags import define_data_flags, define_model_flags

define_model_flags(batch_size=False)
define_data_flags()
flags.DEFINE_enum("format", None, list(FORMATS),
                  "; ".join(f"{name}: {module.DESCRIPTION}" for name, module in FORMATS.items()) + ".")
flags.DEFINE_string("out", None, "Folder to write (local or gs://); it must not exist.")
flags.DEFINE_enum("quantize", "none", quantizations(), "none (float32) or int8: with --format=tflite or onnx, "
                  "dynamic quantization (int8 weights, activations quantized at run time); with "
                  "--format=openvino, NNCF static quantization calibrated on --calibration_data.")
flags.DEFINE_string("calibration_data", None, "Text file, one sentence a line, that --format=openvino "
                    "--quantize=int8 calibrates its activation ranges on. Default: 300 STS-B train sentences "
                    "under --data_path (a fixed sample).")
flags.DEFINE_list("st_backends", [], "With --format=sentence-transformers: also write the model for these "
                  "sentence-transformers backends, onnx (onnx/model.onnx) and/or openvino "
                  "(openvino/openvino_model.xml), so that SentenceTransformer(folder, backend=...) loads them.")
FLAGS = flags.FLAGS


def main(argv):
    if not FLAGS.verbose:
        # TensorFlow's SavedModel writer (savedmodel, tfhub-bert) logs its checkpoint shards at INFO: nothing to act on.
        logging.set_verbosity(logging.WARNING)
    if FLAGS.format is None:
        raise UserError(f"--format is required: one of {', '.join(FORMATS)}.")
    config = ExportConfig(model=FLAGS.model, format=FLAGS.format, out=FLAGS.out or "", quantize=FLAGS.quantize,
                          artifacts_dir=FLAGS.artifacts_dir, model_location=FLAGS.model_location,
                          gcs_bucket=FLAGS.gcs_bucket, max_seq_len=FLAGS.max_seq_len,
                          calibration_data=FLAGS.calibration_data, data_path=FLAGS.data_path,
                          st_backends=tuple(FLAGS.st_backends))
    record = export_model(config)
    encoder = record["encoder"]
    print(f"exported {config.model} as {config.format} to {config.out} (pooling {encoder['pooling']}, normalize "
          f"{encoder['normalize']}, max_seq_len {encoder['max_seq_len']}"
          + (f", quantize {record['quantize']})" if "quantize" in record else ")"))
    print("| file | MB |\n| --- | --- |")
    for name, size in record["files"].items():
        print(f"| {name} | {size / 1e6:.2f} |")
    print(f"next: python test_sts.py --model={config.out}")
    return 0


if __name__ == "__main__":
    cli.run(main)
