"""TF-Hub-format BERT encoders (TF Hub handles or local SavedModels) in Keras 3.

`hub.KerasLayer` is a tf_keras layer and cannot be used in a Keras 3 model, and
`keras.layers.TFSMLayer` cannot call the encoder with its dict input positionally.
This layer calls the object returned by `hub.load` and tracks its variables as
Keras variables (sharing the same storage), so optimizers train them in place.
"""

from __future__ import annotations

from typing import Dict, Mapping

import keras
import tensorflow as tf

from common.errors import UserError

# The pretrained TF Hub BERTs of the original PAUSE code (its "small" and "base"), by spec.
TFHUB_HANDLES = {
    "tfhub_bert_small": "https://tfhub.dev/tensorflow/small_bert/bert_en_uncased_L-2_H-128_A-2/1",
    "tfhub_bert_base": "https://tfhub.dev/tensorflow/bert_en_uncased_L-12_H-768_A-12/3",
}


def is_hub_handle(spec: str) -> bool:
    """True for a TF Hub / Kaggle Models URL."""
    return spec.startswith(("https://tfhub.dev/", "http://tfhub.dev/", "https://www.kaggle.com/models/"))


def load_hub_module(handle: str):
    """`hub.load` with an error that says what to do offline."""
    # Imported here, not at the top: tensorflow_hub brings tf_keras (about 0.5 s), which only a
    # TF-Hub backbone needs, and every command of the toolkit imports this module.
    import tensorflow_hub as hub

    try:
        return hub.load(handle)
    except Exception as e:  # hub raises many types (URLError, OSError, ValueError)
        raise OSError(
            f"Could not load the TF Hub model {handle!r} ({type(e).__name__}: {e}). "
            "TF Hub needs internet access, or set TFHUB_CACHE_DIR to a cache that holds it, "
            "or pass the local directory of the downloaded SavedModel as the model."
        ) from e


@keras.saving.register_keras_serializable(package="common")
class HubBertBackbone(keras.layers.Layer):
    """A TF-Hub BERT SavedModel (`input_word_ids`, `input_mask`, `input_type_ids`
    -> `sequence_output`, `pooled_output`) behind keras-hub's input names.

    Args:
        handle: str. TF Hub URL or local/`gs://` SavedModel directory.
        trainable: bool. Whether the encoder's variables are trained. Defaults to True.
    """

    def __init__(self, handle: str, trainable: bool = True, **kwargs):
        super().__init__(trainable=trainable, **kwargs)
        self.handle = handle
        self.module = load_hub_module(handle)
        if not callable(self.module):
            raise UserError(f"{handle}: the SavedModel has no __call__; expected a TF-Hub-format BERT encoder.")
        variables = list(getattr(self.module, "variables", []))
        trainable_ids = {id(v) for v in getattr(self.module, "trainable_variables", variables)}
        self.hub_variables = []
        for v in variables:
            wrapped = keras.Variable(
                initializer=v,  # shares the storage of the loaded tf.Variable
                trainable=trainable and id(v) in trainable_ids and v.trainable,
                dtype=v.dtype,
                shape=v.shape,
                # Keras names may contain neither "/" nor the ":0" suffix (Adam
                # derives its slot names from them).
                name=v.name.split(":")[0].replace("/", "_"),
            )
            self._track_variable(wrapped)
            self.hub_variables.append(wrapped)
        self.built = True

    # TF Hub's BERT encoders (tensorflow/models' BertEncoder) use this LayerNorm epsilon.
    layer_norm_epsilon = 1e-12

    def token_embedding_matrix(self):
        """The [vocab, hidden] token-embedding variable (tied MLM heads read it)."""
        found = [v for v in self.hub_variables if "word_embeddings" in v.path or "word_embeddings" in v.name]
        if len(found) != 1:
            raise UserError(f"{self.handle}: expected one word_embeddings variable, found {len(found)}; "
                             "this SavedModel cannot feed a tied MLM head (train without MLM).")
        return found[0]

    @property
    def hidden_size(self) -> int:
        return int(self.token_embedding_matrix().shape[-1])

    @property
    def max_position_embeddings(self) -> int:
        """The longest input the position table covers: the rows of its position-embedding
        variable (`position_embedding/embeddings` in TF Hub's BERTs, 512)."""
        found = [v for v in self.hub_variables if "position_embedding" in v.path or "position_embedding" in v.name]
        if len(found) != 1 or len(found[0].shape) != 2:
            raise UserError(f"{self.handle}: expected one [positions, hidden] position_embedding variable, found "
                             f"{[tuple(v.shape) for v in found]}; give the truncation length (--max_seq_len).")
        return int(found[0].shape[0])

    def vocabulary_path(self) -> str:
        """The `vocab_file` asset of the SavedModel."""
        asset = getattr(self.module, "vocab_file", None)
        if asset is None:
            raise UserError(f"{self.handle}: the SavedModel has no `vocab_file` asset, so it is no TF-Hub-format "
                             "BERT and has no tokenizer to build; an embedding SavedModel (strings -> embeddings: a "
                             "run's embedding/, export.py --format=savedmodel) is a traced graph, not an encoder to "
                             "rebuild: take the model it was exported from (its export.json's \"source\").")
        return asset.asset_path.numpy().decode("utf-8")

    def do_lower_case(self) -> bool:
        flag = getattr(self.module, "do_lower_case", None)
        return True if flag is None else bool(flag.numpy())

    def call(self, inputs: Mapping[str, tf.Tensor], training: bool = False) -> Dict[str, tf.Tensor]:
        outputs = self.module(
            {
                "input_word_ids": tf.cast(inputs["token_ids"], tf.int32),
                "input_mask": tf.cast(inputs["padding_mask"], tf.int32),
                "input_type_ids": tf.cast(inputs["segment_ids"], tf.int32),
            },
            training=bool(training),
        )
        return {"sequence_output": outputs["sequence_output"], "pooled_output": outputs["pooled_output"]}

    def get_config(self):
        return {**super().get_config(), "handle": self.handle}
