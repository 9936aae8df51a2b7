"""Downloads the official SNLI 1.0 and MultiNLI 1.0 archives (needs internet).

The command is `python download_nli.py --out=<DATA_PATH>/nli [--datasets=snli,mnli]`.
It writes `<out>/snli_1.0/snli_1.0_train.jsonl` etc. (the archives' own layout),
which is where `train.py`'s default `--train_data` looks. Each archive is
fetched by `keras.utils.get_file`, checked against its published MD5 and only
then unpacked.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import zipfile
from typing import Dict, Sequence

import keras
from absl import logging

from common.errors import UserError


@dataclasses.dataclass(frozen=True)
class Archive:
    url: str
    md5: str
    folder: str  # top-level folder inside the zip


ARCHIVES: Dict[str, Archive] = {
    "snli": Archive("https://nlp.stanford.edu/projects/snli/snli_1.0.zip", "981c3df556bbaea3f17f752456d0088c",
                    "snli_1.0"),
    "mnli": Archive("https://cims.nyu.edu/~sbowman/multinli/multinli_1.0.zip", "0f70aaf66293b3c088a864891db51353",
                    "multinli_1.0"),
}


def download_archive(name: str, archive: Archive, out_dir: str) -> str:
    """Downloads, verifies and unpacks one archive into `out_dir`; returns its folder.

    Raises:
        ConnectionError: when the URL cannot be reached, saying where to put the files.
        UserError: when the checksum does not match (nothing is unpacked).
    """
    target = os.path.join(out_dir, archive.folder)
    if os.path.isdir(target):
        logging.info("%s already present in %s", name, target)
        return target
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        try:
            zip_path = keras.utils.get_file(os.path.basename(archive.url), archive.url, file_hash=archive.md5,
                                            hash_algorithm="md5", cache_dir=tmp, cache_subdir="")
        except ValueError as e:  # get_file's own integrity check
            raise UserError(f"{archive.url}: the MD5 does not match the published {archive.md5}; the download "
                             f"is corrupt or the file changed. Nothing was unpacked. ({e})") from None
        except Exception as e:  # get_file wraps URL and HTTP errors in a bare Exception
            raise ConnectionError(
                f"Could not download {archive.url} ({e}). Without internet, download it elsewhere and unzip "
                f"it into {out_dir} (so that {target}/ exists), or train on SentEval's SNLI files with "
                "--train_data=senteval:train (see docs/data.md)."
            ) from None
        unpack = os.path.join(tmp, "unpacked")
        with zipfile.ZipFile(zip_path) as z:
            z.extractall(unpack)
        if not os.path.isdir(os.path.join(unpack, archive.folder)):
            raise UserError(f"{archive.url}: the archive has no {archive.folder}/ folder.")
        shutil.move(os.path.join(unpack, archive.folder), target)  # complete, or not there at all
    return target


def download(names: Sequence[str], out_dir: str, archives: Dict[str, Archive] = ARCHIVES) -> Dict[str, str]:
    """Downloads the named archives (`snli`, `mnli`) into `out_dir`; returns their folders."""
    unknown = [n for n in names if n not in archives]
    if unknown:
        raise UserError(f"Unknown dataset(s) {unknown}; expected some of {sorted(archives)}.")
    return {n: download_archive(n, archives[n], out_dir) for n in names}
