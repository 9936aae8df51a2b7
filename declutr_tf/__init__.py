"""DeCLUTR (Giorgi et al., ACL 2021): contrastive learning of sentence embeddings
from spans of the same document.

Training is not implemented yet (see the DeCLUTR issue); `train.py` says so.
"""
