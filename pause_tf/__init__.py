"""PAUSE (Cao et al., EMNLP 2021): positive-unlabelled sentence embeddings from NLI.

Training is not implemented yet (see the PAUSE issue); `train.py` says so.
"""
