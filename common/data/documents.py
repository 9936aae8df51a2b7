"""Documents from files and folders: one document per line of a file, or one per file.

Two layouts, chosen by `--documents` (`DocumentOptions`, shared by the methods that
train on documents):
    per_line  each non-empty line of a file is one document (the shared data's
              `documents/*.txt`);
    per_file  each file is one document: its whole text, newlines folded to spaces
              (the way people keep text: a folder of articles or chapters);
    auto      per_file for a directory, per_line for a file given directly.
A directory is read recursively: its `.txt` and `.md` files, in sorted order of their
paths, hidden files and folders (a name starting with ".") left out.
"""

from __future__ import annotations

import dataclasses
import posixpath
from typing import List, Sequence, Tuple

import tensorflow as tf
from absl import logging

from common.data.files import DATA_HELP, read_lines
from common.errors import UserError
from common.settings import option

PER_LINE, PER_FILE, AUTO = "per_line", "per_file", "auto"
LAYOUTS = (AUTO, PER_FILE, PER_LINE)
EXTENSIONS = (".txt", ".md")


@dataclasses.dataclass(frozen=True)
class DocumentOptions:
    """`--documents`, shared by the options of every method that trains on documents.

    A method's options dataclass inherits it and passes `options.documents` to
    `read_document_files`.
    """

    documents: str = option(
        AUTO, "How --train_data is cut into documents: per_file (each .txt or .md file is one document, newlines "
              "folded to spaces), per_line (each non-empty line of a file is one) or auto (per_file for a "
              "directory, read recursively; per_line for a file given directly).", choices=LAYOUTS)


@dataclasses.dataclass(frozen=True)
class DocumentFile:
    """The documents of one file.

    Attributes:
        path: str. The file.
        name: str. Its path under the directory it was found in (the file's name when given directly).
        layout: str. "per_line" or "per_file".
        documents: list of str. Its documents, in order (none for an empty file).
    """

    path: str
    name: str
    layout: str
    documents: List[str]


def _hidden(name: str) -> bool:
    return name.startswith(".")


def _walk(directory: str, prefix: str = "") -> List[str]:
    """Paths under `directory` (relative, "/"-separated) of every file that is not hidden or in a hidden folder."""
    found = []
    for entry in tf.io.gfile.listdir(directory):
        name = entry.rstrip("/")  # gs:// listings end folder names with "/"
        if _hidden(name):
            continue
        path = posixpath.join(directory, name)
        if tf.io.gfile.isdir(path):
            found += _walk(path, prefix + name + "/")
        else:
            found.append(prefix + name)
    return found


def document_paths(path: str, layout: str = AUTO) -> List[Tuple[str, str, str]]:
    """(file, name, layout) of every document file a `--train_data` entry names.

    Args:
        path: str. A file, or a directory read recursively (local or gs://).
        layout: str. One of LAYOUTS; "auto" is per_file for a directory, per_line for a file.

    Raises:
        FileNotFoundError: when the path does not exist.
        UserError: for a directory without .txt or .md files.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"Unknown document layout {layout!r}; expected one of {LAYOUTS}.")
    if tf.io.gfile.isdir(path):
        directory = path.rstrip("/")
        names = sorted(_walk(directory))
        kept = [n for n in names if n.lower().endswith(EXTENSIONS)]
        if not kept:
            raise UserError(f"{path}: no .txt or .md file in this directory or below it ({len(names)} other files); "
                            "expected a folder of text files. Give files, or a folder that holds them.")
        if len(kept) < len(names):
            logging.info("%s: left out %d files that are not .txt or .md.", path, len(names) - len(kept))
        chosen = PER_FILE if layout == AUTO else layout
        return [(posixpath.join(directory, n), n, chosen) for n in kept]
    if tf.io.gfile.exists(path):
        return [(path, posixpath.basename(path), PER_LINE if layout == AUTO else layout)]
    raise FileNotFoundError(f"Documents not found: {path}; {DATA_HELP}.")


def read_document_files(paths: Sequence[str], layout: str = AUTO) -> List[DocumentFile]:
    """Reads the documents of files and directories (see the module docstring for the layouts).

    Args:
        paths: sequence of str. Files or directories (local or gs://), as resolved from `--train_data`.
        layout: str. One of LAYOUTS. Defaults to "auto".

    Returns:
        One DocumentFile per file read, in the order of `paths`, each directory's files sorted.

    Raises:
        FileNotFoundError: for a path that does not exist.
        UserError: for a directory without .txt or .md files, or a file that is not valid UTF-8
            (naming the file, line and column).
    """
    files = []
    for path in paths:
        for file, name, chosen in document_paths(path, layout):
            lines = read_lines(file)
            if chosen == PER_FILE:
                text = " ".join(line.strip() for line in lines if line.strip())
                documents = [text] if text else []
            else:  # lines as they are, so that a file's documents (and their fingerprint) never change
                documents = [line for line in lines if line.strip()]
            files.append(DocumentFile(file, name, chosen, documents))
    return files
