"""The BERT layer's dense products as fusable 2-D matmuls (`common.models.bert.BertLayer`, what the
toolkit computes) against keras-hub's `TransformerEncoder.call` (Keras' einsums and 3-D matmuls, what
it computed before), on the same MiniLM weights and sublayers, alternated A B A B in one process
(`bench.encoder_ab`).

    .venv/bin/python -m bench.fused_dense_speed --data_path=../shared/data --rounds=3

The keras-hub side runs each layer through keras-hub's own `call` with the training activation (in
bf16 the float32 GELU). Not part of the test suite; run it on an idle machine.
"""

from __future__ import annotations

from common import cli

from bench import encoder_ab


def keras_hub_form(encoder):
    """Makes every layer of `encoder` compute through keras-hub's `TransformerEncoder.call` (before tracing)."""
    from keras_hub.layers import TransformerEncoder

    for layer in encoder.backbone.transformer_layers:
        layer.call = TransformerEncoder.call.__get__(layer)
    return encoder


def main(argv):
    del argv
    from common.models.encoder import EncoderConfig, build_encoder

    def make(precision, form):
        encoder = build_encoder(EncoderConfig(spec="minilm", precision=precision))
        return keras_hub_form(encoder) if form == "keras-hub" else encoder

    return encoder_ab.compare(("fused", "keras-hub"), make,
                              "BERT layer: fusable 2-D matmuls against keras-hub's TransformerEncoder.call")


if __name__ == "__main__":
    cli.run(main)
