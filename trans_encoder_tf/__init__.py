"""Trans-Encoder (Liu et al., ICLR 2022): unsupervised sentence-pair modelling by
self- and mutual distillation between bi-encoders and cross-encoders.

`trans_encoder_tf.method` registers the method (`train.py --method=trans_encoder`).
"""

from trans_encoder_tf.config import TransEncoderOptions
from trans_encoder_tf.data import load_pairs, read_pair_file, sts_sickr_pairs
from trans_encoder_tf.losses import cosine_mse_loss, global_batch_mean, soft_bce_with_logits_loss
from trans_encoder_tf.model import BiEncoderModel, CrossEncoderModel

__all__ = ["BiEncoderModel", "CrossEncoderModel", "TransEncoderOptions", "cosine_mse_loss", "global_batch_mean",
           "load_pairs", "read_pair_file", "soft_bce_with_logits_loss", "sts_sickr_pairs"]
