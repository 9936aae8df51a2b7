"""Data: file access, documents from files and folders, NLI / STS / SICK readers, `--train_data`
resolution, dataset fingerprints, sentence splitting, the seeded resumable batch sampler, downloads."""

from common.data.documents import DocumentFile, DocumentOptions, read_document_files
from common.data.files import DATA_HELP, open_data_file, read_lines, require_data_dir
from common.data.fingerprint import fingerprint_rows
from common.data.nli import DEFAULT_NLI_TRAIN, NliPairs, read_nli, read_nli_sources
from common.data.sampling import StreamSampler, batches_dataset
from common.data.sentences import sentences_from_documents, split_sentences
from common.data.sources import evaluation_sets_in, resolve_sources
from common.data.sts import STS_SUBSETS, STS_YEARS, PairSet, load_all, load_sick, load_sts_subset, load_stsb

__all__ = ["DATA_HELP", "DEFAULT_NLI_TRAIN", "DocumentFile", "DocumentOptions", "NliPairs", "PairSet", "STS_SUBSETS",
           "STS_YEARS", "StreamSampler", "batches_dataset", "evaluation_sets_in", "fingerprint_rows", "load_all",
           "load_sick", "load_sts_subset", "load_stsb", "open_data_file", "read_document_files", "read_lines",
           "read_nli", "read_nli_sources", "require_data_dir", "resolve_sources", "sentences_from_documents",
           "split_sentences"]
