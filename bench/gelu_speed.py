"""GELU's form, measured: the erf form the toolkit computes (0.5 x (1 + erf(x / sqrt 2)), as Hugging
Face and PyTorch BERT do) against TensorFlow's erfc form (`tf.nn.gelu`, what the toolkit computed
before), on the same MiniLM weights, alternated A B A B in one process (`bench.encoder_ab`).

    .venv/bin/python -m bench.gelu_speed --data_path=../shared/data --rounds=3

Since `BertLayer`, encoding (outside training) runs the GELU inside the feed-forward matmul's fused
kernel whichever form is written (TensorFlow's graph optimizer recognises both on oneDNN CPUs; bf16
writes the erf form there in any case), so the two forms encode alike and differ in training only.
Not part of the test suite; run it on an idle machine.
"""

from __future__ import annotations

from common import cli

from bench import encoder_ab


def _erfc_form(encoder, precision: str):
    """Swaps every feed-forward GELU of `encoder` for TensorFlow's erfc form (before tracing)."""
    import keras

    from common.models.precision import is_mixed

    def erfc_gelu(x):
        return keras.activations.gelu(x, approximate=False)

    def erfc_gelu_float32(x):
        return keras.ops.cast(erfc_gelu(keras.ops.cast(x, "float32")), x.dtype)

    for layer in encoder.backbone.transformer_layers:
        layer._feedforward_intermediate_dense.activation = erfc_gelu_float32 if is_mixed(precision) else erfc_gelu
    return encoder


def main(argv):
    del argv
    from common.models.encoder import EncoderConfig, build_encoder

    def make(precision, form):
        encoder = build_encoder(EncoderConfig(spec="minilm", precision=precision))
        return _erfc_form(encoder, precision) if form == "erfc" else encoder

    return encoder_ab.compare(("erf", "erfc"), make, "GELU: erf form against TensorFlow's erfc form")


if __name__ == "__main__":
    cli.run(main)
