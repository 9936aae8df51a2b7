"""The sentence-transformers format's names where `common.export` users import them; the format,
its writer and its reader are `common.models.formats.sentence_transformers`, the tokenizer's files
`common.models.tokenizer_files`."""

from common.models.formats.sentence_transformers import write_sentence_transformers
from common.models.tokenizer_files import bpe_tokenizer_json, tokenizer_json

__all__ = ["bpe_tokenizer_json", "tokenizer_json", "write_sentence_transformers"]
